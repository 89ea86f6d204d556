"""The progress bar of a job run from Python: ``tqdm.auto``'s, whose saved notebook output shows how it ended.

In a notebook, ``tqdm.notebook`` displays a widget once; the display's text (what a notebook saved without
widget state, nbval and GitHub show) is the bar's first frame, ``0%``. Here the bar is displayed with a
display id and that display is updated when the bar closes, so the saved text is the finished bar. Outside a
notebook it is ``tqdm``'s terminal bar, unchanged. (IPython's ``display(..., display_id=True)`` and
``DisplayHandle.update``: ``IPython/core/display_functions.py``.)
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _saved_notebook_bar() -> type:
    """``tqdm.notebook.tqdm`` whose display is re-sent, with the bar's final text, when it closes."""
    from IPython.display import display
    from tqdm.notebook import tqdm as notebook_tqdm

    class SavedNotebookBar(notebook_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, display=False, **kwargs)
            self._handle = display(self.container, display_id=True)

        def close(self) -> None:
            super().close()
            handle, self._handle = getattr(self, "_handle", None), None
            if handle is not None:
                handle.update(self.container)

    return SavedNotebookBar


def progress_bar(total: int, unit: str, desc: str) -> Any:
    """A ``tqdm.auto`` bar of ``total`` ``unit``s (``n``, ``total``, ``unit``, ``refresh()``, ``close()``)."""
    from tqdm.auto import tqdm
    from tqdm.notebook import tqdm as notebook_tqdm

    kind = _saved_notebook_bar() if issubclass(tqdm, notebook_tqdm) else tqdm
    return kind(total=total, unit=unit, desc=desc)
