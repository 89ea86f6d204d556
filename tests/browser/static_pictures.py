"""The widgets' static pictures in a page: which outputs of a notebook carry one, what the page shows of each, and
what differs between the two. ``test_static_pictures.py`` checks a lesson exported without running;
``test_lessons_in_jupyterlab.py`` checks a lesson opened in JupyterLab before it runs it.

The committed lessons keep no widget state (``make notebooks`` strips it), so each widget output holds only its
``text/plain`` repr and the ``text/html`` static picture of ``widgets/_static.py``. The widget outputs of the
notebook (outputs whose repr names a class of the ``widgets`` package) pair with the ``div.dfcore-static`` blocks
of the page, in order: each block must be visible, name the same widget, hold one loaded image per SVG its HTML
carries (the static picture draws each SVG as an ``<img>`` of a ``data:image/svg+xml`` URL: an image that fails
to parse does not load), and show at least one of them, a table, or a ``<details>`` (a question's hint and answer).
"""

import re

REPR_NAME = re.compile(r"<([A-Za-z_]\w*)[:>]")
# A plain ipywidgets container of ours (Tab(children=(<TimelineView: ...>, ...))): named by its class.
CONTAINER_REPR = re.compile(r"([A-Za-z_]\w*)\(children=\(.*?<([A-Za-z_]\w*):", re.S)
SVG_IMAGE = "src='data:image/svg+xml,"

STATIC_REPORT_JS = r"""() => [...document.querySelectorAll('div.dfcore-static')].map(block => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const images = [...block.querySelectorAll('img[src^="data:image/svg+xml"]')];
  // JupyterLab's sanitizer drops data-* attributes; the picture's last line names the widget too
  const named = (block.innerText.match(/static picture of (\w+)/) || [])[1];
  return {widget: block.dataset.widget || named, visible: visible(block), svgs: images.length,
          loaded: images.filter(image => image.complete && image.naturalWidth > 0).length,
          visibleGraphics: [...images, ...block.querySelectorAll('table, details')].filter(visible).length,
          // a step-through's two views (widgets/_stepper.py): the filmstrip, and the frames dfcore_static.js steps
          filmstrips: [...block.querySelectorAll('.dfcore-filmstrip')].filter(visible).length,
          frameViews: [...block.querySelectorAll('.dfcore-frames')].filter(visible).length};
})"""


# JupyterLab: the expected number of static pictures are in the page and every SVG image in them has loaded.
IMAGES_SETTLED_JS = """(count) => {
  const blocks = document.querySelectorAll('div.dfcore-static');
  return blocks.length >= count && [...document.querySelectorAll('div.dfcore-static img')].every(i => i.complete);
}"""


def widget_class_names():
    """Names of the widget classes exported by the project's ``widgets`` package."""
    import ipywidgets

    import widgets

    return {name for name in widgets.__all__ if issubclass(getattr(widgets, name), ipywidgets.Widget)}


def widget_outputs(notebook, names):
    """``[(cell index, widget class name, text/html or None)]`` for each output whose repr names one of ``names``,
    or a container (``Tab``) whose first child is one of them."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", ()) if cell.cell_type == "code" else ():
            data = output.get("data", {})
            text = data.get("text/plain", "")
            match, container = REPR_NAME.match(text), CONTAINER_REPR.match(text)
            if match and match.group(1) in names:
                found.append((index, match.group(1), data.get("text/html")))
            elif container and container.group(2) in names:
                found.append((index, container.group(1), data.get("text/html")))
    return found


def picture_problems(expected, shown, stepper_script=False):
    """What differs between the notebook's widget outputs (``expected``) and the page's static blocks (``shown``).

    A step-through shows its filmstrip in a page without ``dfcore_static.js``, its frames under the script's
    slider in a page that runs it (``stepper_script``), never both."""
    problems = [f"cell {cell}: {name} has no static picture (text/html); re-run the lesson (make notebooks)"
                for cell, name, html in expected if html is None or "dfcore-static" not in html]
    pictured = [(cell, name, html) for cell, name, html in expected if html and "dfcore-static" in html]
    if len(pictured) != len(shown):
        return problems + [f"{len(pictured)} static pictures in the notebook, {len(shown)} in the page"]
    for (cell, name, html), block in zip(pictured, shown):
        where = f"cell {cell} ({name})"
        if block["widget"] != name:
            problems.append(f"{where}: the page's picture is of {block['widget']}")
        if not block["visible"]:
            problems.append(f"{where}: the picture has no size in the page")
        expected_svgs = html.count(SVG_IMAGE)
        if block["svgs"] != expected_svgs:
            problems.append(f"{where}: {expected_svgs} SVG images in the HTML, {block['svgs']} in the page")
        if block["loaded"] != block["svgs"]:
            problems.append(f"{where}: {block['svgs'] - block['loaded']} of {block['svgs']} SVG images did not load")
        if not block["visibleGraphics"]:
            problems.append(f"{where}: no visible SVG, table or <details>")
        hidden_view, shown_view = ("filmstrips", "frameViews") if stepper_script else ("frameViews", "filmstrips")
        if block.get(hidden_view):
            problems.append(f"{where}: {block[hidden_view]} step-through {hidden_view} shown "
                            f"{'with' if stepper_script else 'without'} dfcore_static.js")
        steppers = html.count('class="dfcore-frames"')
        if block.get(shown_view, steppers) != steppers:
            problems.append(f"{where}: {block.get(shown_view)} of {steppers} step-through {shown_view} shown")
    return problems


def offline(route):
    """Let the page read its own file and inline data; refuse everything else."""
    if route.request.url.startswith(("file://", "data:")):
        return route.continue_()
    return route.abort()
