"""A job's progress bar in a notebook: the saved display shows the finished bar, not its first frame."""

import tqdm.auto
import tqdm.notebook
from IPython.core import display_functions

from dfcore.mpi.progress_bar import progress_bar


class Handle:
    """Records what IPython's ``DisplayHandle`` would send: the first display and each update's text."""

    def __init__(self, shown):
        self.shown = shown

    def update(self, obj):
        self.shown.append(("update", repr(obj)))


def test_notebook_bar_updates_its_saved_display_when_it_closes(monkeypatch):
    shown = []

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(("display", repr(obj)))
        return Handle(shown)

    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)
    monkeypatch.setattr(display_functions, "display", display)
    monkeypatch.setattr("IPython.display.display", display)
    from dfcore.mpi import progress_bar as module
    module._saved_notebook_bar.cache_clear()
    bar = progress_bar(total=3, unit="ranks", desc="MPI job")
    bar.n = 3
    bar.refresh()
    bar.close()
    bar.close()  # a second close (tqdm's __del__) sends nothing more
    module._saved_notebook_bar.cache_clear()
    assert [kind for kind, _ in shown] == ["display", "update"]
    assert " 0/3" in shown[0][1] and "100%" in shown[1][1] and "3/3" in shown[1][1]


def test_terminal_bar_is_tqdm_unchanged(monkeypatch, capsys):
    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.std.tqdm)
    bar = progress_bar(total=2, unit="ranks", desc="MPI job")
    assert type(bar) is tqdm.std.tqdm
    bar.update(2)
    bar.close()
    assert "2/2" in capsys.readouterr().err
