"""Static pictures (widgets/_static.py): every widget's display bundle keeps its widget view and adds a
``text/html`` copy of what it draws, built from the widget tree (selected pages, step-through filmstrips)."""

import html
import re
import urllib.parse

import ipywidgets
import numpy as np
import pytest
from _stepped_widgets import overlaid, stepped
from test_widgets_timeline import hand_metadata

import widgets
from dfcore.distribute import all_reduce
from widgets import AllReduceView, Choice, NumberQuestion, Quiz, SliderQuestion, TimelineView, WhatIf, _static, _stepper

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def _html(value):
    return ipywidgets.HTML(value)


def _views(static):
    """A one-stepper picture's two views: (the filmstrip no script changes, the frames container's HTML)."""
    filmstrip, frames = static.split('<div class="dfcore-frames"', 1)
    assert '<div class="dfcore-filmstrip">' in filmstrip
    return filmstrip, frames


def _container(script_view):
    """``(data-frames, data-count, data-current)`` of a frames container, and whether it is empty."""
    opening = re.match(r' data-frames="(\d+)" data-count="(\d+)" data-current="(\d+)" hidden style="display:none">',
                       script_view)
    assert opening is not None
    return tuple(int(n) for n in opening.groups()), script_view[opening.end():].startswith("</div>")


def _marked(view):
    """The indices of the ``div.dfcore-frame`` s in ``view``, in the order they come."""
    return [int(k) for k in re.findall(r'<div class="dfcore-frame" data-frame="(\d+)"', view)]


def test_every_exported_widget_class_carries_a_static_picture():
    classes = [getattr(widgets, name) for name in widgets.__all__]
    shown = [c for c in classes if issubclass(c, ipywidgets.Widget)]
    assert len(shown) >= 14  # the viewers, the questions, the what-if (Exercise prints: not a widget)
    assert [c.__name__ for c in shown if not issubclass(c, _static.StaticPicture)] == []


def test_bundle_keeps_text_repr_and_widget_view_and_adds_the_static_html():
    view = TimelineView(hand_metadata())
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == repr(view) == "<TimelineView: 2 devices, 5 ops, simulated>"
    assert bundle[WIDGET_VIEW_MIME]["model_id"] == view.model_id
    static = bundle["text/html"]
    assert static.startswith('<div class="dfcore-static" data-widget="TimelineView">')
    assert static.endswith("run the notebook to use its controls</div></div>")
    assert "<svg" not in re.sub(r"src='[^']*'", "", static)  # every SVG is an <img> of it (sanitizers keep those)
    sources = re.findall(r"<img alt='picture' style='max-width:100%;height:auto' src='data:image/svg\+xml,([^']+)'>",
                         static)
    inline = re.findall(r"<svg\b.*?</svg>", view.static_html(), re.S)
    assert [urllib.parse.unquote(html.unescape(s)) for s in sources] == [
        _static.compact_svg(re.sub(r'^(<svg[^>]*?) style="[^"]*"', r"\1", svg)) for svg in inline]


def test_svg_images_keep_each_svg_whole_but_its_style_and_escape_it_for_a_single_quoted_url():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" style="max-width:100%" width="4" height="2">'
           "<rect fill='#D55E00' width=\"50%\"/>\n<text>a&amp;b</text></svg>")
    out = _static.svg_images(f"<p>a</p>{svg}<b>{svg}</b>")
    image = ("<img alt='picture' style='max-width:100%;height:auto' src='data:image/svg+xml,"
             '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="2">'
             '<rect fill=%27%23D55E00%27 width="50%25"/>%0A<text>a&amp;amp;b</text></svg>'
             "'>")
    assert out == f"<p>a</p>{image}<b>{image}</b>"
    assert _static.svg_images("<p>no picture</p>") == "<p>no picture</p>"


def test_compact_svg_drops_tooltips_and_comments_and_rounds_geometry_but_not_text():
    svg = ('<svg width="960.004"><!-- node1 --><g><title>a (MatMul)</title><a xlink:title="a&#45;&gt;b">'
           '<path d="M10.126,3.149 C1.25,2.5"/><text x="5.55" y="6">0.0004999 GB/s</text></a></g></svg>')
    assert _static.compact_svg(svg) == ('<svg width="960.0"><g><a><path d="M10.1,3.1 C1.2,2.5"/>'
                                        '<text x="5.5" y="6">0.0004999 GB/s</text></a></g></svg>')


def test_timeline_static_copy_is_the_simulated_pane_with_its_frames_over_the_base_picture():
    view = TimelineView(hand_metadata())
    static = view.static_html()
    simulated, wall = (p.children[1].children[0].value for p in view.stack.children)
    assert simulated != wall
    assert simulated in static and wall not in static  # the mode toggle's other pane is not drawn
    frames = view.frames["simulated"].children
    assert len(frames) == 6  # 5 ops, one frame each, then the whole step (the current one)
    filmstrip, script_view = _views(static)
    # the filmstrip: the current frame and each of the others (6 ≤ FILMSTRIP_FRAMES) once, each over the base;
    # as it shows every frame, its frames are the ones the script steps through (the container stays empty)
    for frame in frames:
        assert filmstrip.count(frame.value) == 1
    assert filmstrip.count(simulated) == len(frames)
    assert "frame 5 of 5 above" in filmstrip
    assert _marked(filmstrip) == [5, 0, 1, 2, 3, 4] and _container(script_view) == ((6, 6, 5), True)


def test_overlaid_frames_beyond_the_filmstrip_are_layers_over_one_base_for_the_script():
    box, base, layers = overlaid(30, 29)
    static = _static.render(box)
    # the slider's static line is marked, for the script to hide where it puts its own slider
    assert re.findall(r'<div class="dfcore-step-value" style="[^"]*">([^<]*)</div>', static) == ["29 (of 0–29)"]
    filmstrip, script_view = _views(static)
    assert filmstrip.count(base) == 6 and _marked(filmstrip) == []  # the current (last) frame and 5 others, whole
    assert _container(script_view) == ((30, 30, 29), False)
    assert script_view.count(base) == 1 and script_view.index(base) < script_view.index('class="dfcore-frame"')
    assert re.findall(r'<div class="dfcore-frame" data-frame="(\d+)">(<svg.*?</svg>)</div>', script_view) == [
        (str(k), layer) for k, layer in enumerate(layers)]


def test_stack_without_a_stepper_shows_only_its_selected_page():
    stack = ipywidgets.Stack([_html("<b>page 0</b>"), _html("<b>page 1</b>")], selected_index=1)
    picker = ipywidgets.ToggleButtons(options=["zero", "one"], index=1)
    box = ipywidgets.VBox([picker, stack])
    box.links = [ipywidgets.jslink((picker, "index"), (stack, "selected_index"))]
    static = _static.render(box)
    assert "page 1" in static and "page 0" not in static
    assert "zero · [one]" in static  # the picker as one line, the selected option bracketed


@pytest.mark.parametrize("with_play", [True, False])
def test_stepped_stack_shows_the_current_frame_then_a_filmstrip_of_the_others(with_play):
    frames = [_html(f"<i>frame-body-{k}</i>") for k in range(4)]
    box = stepped(ipywidgets.Stack(frames, selected_index=2), with_play=with_play)
    static = _static.render(box)
    filmstrip, script_view = _views(static)
    assert re.findall(r"frame-body-(\d)", filmstrip) == ["2", "0", "1", "3"]  # current, full size; then the others
    assert filmstrip.count(f"zoom:{_stepper.FILMSTRIP_ZOOM}") == 3
    assert box.children[0].selected_index == 2  # rendering never moves the widget


def test_long_step_through_keeps_a_bounded_filmstrip_with_first_and_last_frames():
    frames = [_html(f"<i>frame-body-{k}</i>") for k in range(50)]
    filmstrip, _ = _views(_static.render(stepped(ipywidgets.Stack(frames, selected_index=49))))
    bodies = [int(k) for k in re.findall(r"frame-body-(\d+)", filmstrip)]
    assert bodies[0] == 49 and bodies[1] == 0
    assert len(bodies) == _stepper.FILMSTRIP_FRAMES  # the current one plus FILMSTRIP_FRAMES - 1 others
    assert bodies[1:] == _stepper.filmstrip_indices(50, 49)


def test_filmstrip_indices_spread_evenly_and_leave_out_the_current_frame():
    assert _stepper.filmstrip_indices(1, 0) == []
    assert _stepper.filmstrip_indices(4, 0) == [1, 2, 3]
    assert _stepper.filmstrip_indices(100, 99, most=4) == [0, 33, 66]
    assert _stepper.filmstrip_indices(100, 40, most=4) == [0, 33, 66, 99]


def test_all_reduce_step_through_shows_every_round_in_the_static_copy():
    view = AllReduceView(all_reduce([(np.arange(8) + 10 * i).astype(np.float32) for i in range(3)]))
    static = view.static_html()
    pages = [page.value for page in view.stack.children]
    assert len(pages) == 5  # start + 2·(3−1) rounds ≤ FILMSTRIP_FRAMES + 1: every frame is in the filmstrip
    filmstrip, script_view = _views(static)
    assert all(static.count(page) == 1 for page in pages)
    assert filmstrip.index(pages[0]) < filmstrip.index(pages[1])  # frame 0 (the slider's value) comes first
    assert _marked(filmstrip) == [0, 1, 2, 3, 4] and _container(script_view) == ((5, 5, 0), True)


def test_step_through_carries_every_frame_in_order_for_the_script_hidden_until_it_runs():
    frames = [_html(f"<i>frame-body-{k}</i>") for k in range(30)]
    filmstrip, script_view = _views(_static.render(stepped(ipywidgets.Stack(frames, selected_index=7))))
    assert _container(script_view) == ((30, 30, 7), False) and _marked(filmstrip) == []
    assert re.findall(r'<div class="dfcore-frame" data-frame="(\d+)"><i>frame-body-(\d+)</i></div>', script_view) == [
        (str(k), str(k)) for k in range(30)]
    # without scripts the filmstrip is what shows: nothing hides it; the current frame, then 6 spread ones
    assert "hidden" not in filmstrip and "display:none" not in filmstrip
    assert [int(k) for k in re.findall(r"frame-body-(\d+)", filmstrip)] == [7, 0, 6, 12, 17, 23, 29]
    assert "evenly spread" not in script_view  # all 30 fit in the budget: no sampling note


def test_step_through_over_the_frames_budget_keeps_evenly_spread_frames_and_says_so():
    size = 49_900  # 30 frames of about 50 kB: 1.5 MB, over the 600 kB budget; 12 frames of the mean size fit
    frames = [_html(f"<i>frame-body-{k}</i>" + "x" * size) for k in range(30)]
    _, script_view = _views(_static.render(stepped(ipywidgets.Stack(frames, selected_index=4))))
    kept = [int(k) for k in re.findall(r'data-frame="(\d+)"><i>frame-body-\1</i>', script_view)]
    expected = sorted({round(k * 29 / 11) for k in range(12)} | {4})  # 0, 3, 5, 8, …, 29, and the current 4
    assert kept == expected and kept[0] == 0 and kept[-1] == 29 and 4 in kept
    assert f'data-frames="{len(kept)}" data-count="30" data-current="4"' in script_view
    assert f"{len(kept)} of the 30 frames, evenly spread" in script_view


def test_kept_frames_fit_the_budget_at_their_mean_size():
    assert _stepper.kept_frames([10] * 4, 0, budget=40) == [0, 1, 2, 3]
    assert _stepper.kept_frames([10] * 100, 50, budget=40) == [0, 33, 50, 66, 99]
    assert _stepper.kept_frames([10, 1000, 10], 0, budget=500) == [0, 2]  # at least the first and the last
    assert _stepper.spread_indices(5, 9) == [0, 1, 2, 3, 4]


def test_single_frame_step_through_is_drawn_once_without_views():
    box = stepped(ipywidgets.Stack([_html("<i>only</i>")], selected_index=0))
    assert _static.render(box) == "<div><i>only</i></div>"


def test_controls_become_one_muted_line_and_play_disappears():
    slider = ipywidgets.IntSlider(value=3, min=0, max=7, description="round")
    static = _static.render(ipywidgets.HBox([ipywidgets.Play(), slider, ipywidgets.Dropdown(
        options=["a", "b"], value="b", description="node")]))
    assert "round: 3 (of 0–7)" in static and "node: b" in static and "dfcore-step-value" not in static
    assert static.startswith('<div style="display:flex')


def test_details_escapes_its_summary_and_opens_on_request():
    assert _static.details("a < b", "<p>x</p>") == (
        '<details style="font-family:Helvetica,Arial,sans-serif;line-height:1.35;font-size:12px;margin:2px 0">'
        "<summary>a &lt; b</summary><p>x</p></details>")
    assert _static.details("s", "", open_=True).startswith("<details open ")


def _choice():
    return Choice("Which device runs c?", ["CPU:0", "GPU:0", "GPU:1"], answer="GPU:0",
                  hint="look at the placement log", explain="the first GPU wins.",
                  hints={"GPU:1": "count the GPUs from zero"})


def test_question_static_form_lists_options_and_hides_hint_and_answer_in_closed_details():
    bundle = _choice()._repr_mimebundle_()
    static = bundle["text/html"]
    assert bundle["text/plain"] == "<Choice: 'Which device runs c?', 3 options>"
    assert "Which device runs c?" in static and "options:<ul" in static
    assert re.findall(r"<li>([^<]*)</li>", static) == ["CPU:0", "GPU:0", "GPU:1"]
    blocks = re.findall(r"<details([^>]*)><summary>([^<]*)</summary>(.*?)</details>", static, re.S)
    assert [(attrs.startswith(" open"), summary) for attrs, summary, _ in blocks] == [(False, "Hint"),
                                                                                      (False, "Show answer")]
    assert "look at the placement log" in blocks[0][2] and "(GPU:1) count the GPUs from zero" in blocks[0][2]
    assert "Answer: GPU:0." in blocks[1][2] and "GPU:0" not in blocks[0][2]
    assert "Right." not in static  # no option's feedback pane (the picked one would be a guess)


@pytest.mark.parametrize("make", [
    _choice,
    lambda: SliderQuestion("How many times longer?", [1.0, 2.0], answer=2.0, hint="compare the bars"),
    lambda: NumberQuestion("How many bytes?", answer=64, hint="count the _Recv nodes", unit="bytes"),
])
def test_every_question_keeps_its_answer_in_a_closed_show_answer_details(make):
    static = make()._repr_mimebundle_()["text/html"]
    answer = re.search(r"<details style=[^>]*><summary>Show answer</summary>(.*?)</details>", static, re.S)
    assert answer is not None and "Answer: " in answer.group(1)
    assert "Answer: " not in static.replace(answer.group(0), "")  # nowhere outside the closed block


def test_slider_and_number_questions_have_static_forms_too():
    slider = SliderQuestion("How many times longer?", [1.0, 1.5, 2.0], answer=2.0, hint="compare the bars", unit="×")
    assert "options: 1 × · 1.5 × · 2 ×" in slider.static_html()
    number = NumberQuestion("How many bytes?", answer=64, hint="count the _Recv nodes", unit="bytes")
    assert "type a number: bytes" in number.static_html() and "Answer: 64 bytes." in number.static_html()


def test_quiz_static_form_is_each_question_in_turn():
    first, second = _choice(), NumberQuestion("How many bytes?", answer=64, hint="count the _Recv nodes")
    static = Quiz(first, second).static_html()
    assert static == f"<div>{first.static_html()}{second.static_html()}</div>"


def test_what_if_static_form_shows_the_start_pane_then_every_other_pane_collapsed():
    what_if = WhatIf("latency vs time", {"bandwidth": [1, 2], "latency": [10, 100, 1000]},
                     lambda bandwidth, latency: f"<p>pane {bandwidth}/{latency}</p>", start={"latency": 100})
    static = what_if.static_html()
    shown, hidden = static.split("<details", 1)
    assert "bandwidth = 1, latency = 100" in shown and "<p>pane 1/100</p>" in shown
    assert "<summary>the other 5 choices</summary>" in hidden
    assert re.findall(r"<p>pane (\d+/\d+)</p>", hidden) == ["1/10", "1/1000", "2/10", "2/100", "2/1000"]


def test_choices_stop_at_the_budget_and_say_how_many_are_left_out():
    out = _static.choices(("a", "<p>A</p>"), [("b", "x" * 60), ("c", "y" * 60), ("d", "z")], budget=100)
    assert "x" * 60 in out and "y" * 60 not in out and "zz" not in out
    assert "the other 3 choices (1 shown; run the notebook for the other 2)" in out


def test_accordion_becomes_details_open_where_selected():
    accordion = ipywidgets.Accordion([_html("<i>one</i>"), _html("<i>two</i>")], titles=("First", "Second"),
                                     selected_index=1)
    static = _static.render(accordion)
    assert re.findall(r"<details( open)?[^>]*><summary>(\w+)</summary>", static) == [("", "First"),
                                                                                     (" open", "Second")]


def test_plain_containers_of_our_widgets_get_a_picture_from_ipython_and_our_widgets_keep_theirs():
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    _static.register_containers(formatter)
    views = [TimelineView(hand_metadata()), _choice()]
    tab = ipywidgets.Tab(views, titles=("timeline", "question"), selected_index=0)
    data, _ = formatter.format(tab)
    assert data["text/plain"].startswith("Tab(children=(<TimelineView:")
    assert data[WIDGET_VIEW_MIME]["model_id"] == tab.model_id
    picture = data["text/html"]
    assert picture.startswith('<div class="dfcore-static" data-widget="Tab">')
    assert "tabs: [timeline] · question" in picture
    assert "Which device runs c?" not in picture  # only the selected tab is drawn
    assert formatter.format(views[0])[0]["text/html"] == views[0]._repr_mimebundle_()["text/html"]
    assert "text/html" not in formatter.format(ipywidgets.VBox([ipywidgets.IntSlider()]))[0]
