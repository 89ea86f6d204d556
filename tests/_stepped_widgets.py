"""Hand-built step-throughs for the static-picture tests (unit and browser): a ``Stack`` driven by a slider
(and ``Play``) through ``jslink`` s kept in ``links``, as the widgets keep them, and frames drawn as layers
over one base picture in a one-area ``GridBox``, as a timeline's are."""

import ipywidgets


def stepped(stack, *, with_play=True):
    """A ``VBox`` holding ``stack``, with a slider (and Play) driving it through jslinks kept in ``links``."""
    box = ipywidgets.VBox([stack])
    slider = ipywidgets.IntSlider(value=stack.selected_index, min=0, max=len(stack.children) - 1)
    box.links = [ipywidgets.jslink((slider, "value"), (stack, "selected_index"))]
    if with_play:
        play = ipywidgets.Play(min=0, max=len(stack.children) - 1)
        box.links.insert(0, ipywidgets.jslink((play, "value"), (slider, "value")))
    return box


def overlaid(count, current):
    """``count`` frames (``current`` selected), each a bar at x = 30·k drawn over one grey base, stepped by a
    slider; returns ``(box, base SVG, [frame SVGs])``."""
    base = '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><rect width="200" height="40"/></svg>'
    layers = [f'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><rect x="{30 * k}" width="20" '
              f'height="40" fill="#D55E00"/></svg>' for k in range(count)]
    frames = ipywidgets.Stack([ipywidgets.HTML(layer) for layer in layers], selected_index=current)
    grid = ipywidgets.GridBox([ipywidgets.HTML(base), frames], layout=ipywidgets.Layout(grid_template_areas='"plot"'))
    slider = ipywidgets.IntSlider(value=current, min=0, max=count - 1)
    box = ipywidgets.VBox([slider, grid])
    box.links = [ipywidgets.jslink((slider, "value"), (frames, "selected_index"))]
    return box, base, layers
