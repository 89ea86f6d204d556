"""``widgets/static/dfcore_static.js`` in headless Chromium: a page holding three step-throughs' static pictures
(one whose filmstrip shows every frame, frames drawn as layers over one base picture as a timeline's are, and
plain frames beyond the filmstrip) and loading the script twice. The script swaps each picture's filmstrip
for its frames, shows one frame at a time under one control bar, and steps with its range input and
buttons; the page is a ``file://`` one and every other request is refused."""

import ipywidgets
import numpy as np
from _stepped_widgets import overlaid, stepped
from static_pictures import offline

import widgets
from dfcore.distribute import all_reduce
from widgets import AllReduceView, _static

SCRIPT = widgets.__file__.replace("__init__.py", "static/dfcore_static.js")
TIMEOUT_S = 30

# Per step-through: the controls it has, what is visible, which frames show, and the bar's text.
REPORT_JS = """() => [...document.querySelectorAll('.dfcore-frames')].map(frames => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const own = [...frames.querySelectorAll('.dfcore-frame')].filter(f => f.closest('.dfcore-frames') === frames);
  return {bars: frames.querySelectorAll('.dfcore-stepper-controls').length,
          filmstripShown: visible(frames.previousElementSibling), framesShown: visible(frames),
          shown: own.filter(f => getComputedStyle(f).display !== 'none').map(f => Number(f.dataset.frame)),
          text: frames.querySelector('.dfcore-step-text').textContent,
          max: Number(frames.querySelector('input.dfcore-step').max)};
})"""

# Per step-through: the frame indices its container holds, in order.
ORDER_JS = """() => [...document.querySelectorAll('.dfcore-frames')].map(frames => [...frames.querySelectorAll(
  '.dfcore-frame')].map(f => Number(f.dataset.frame)))"""

DRIVE_JS = """([index, value]) => {
  const range = document.querySelectorAll('input.dfcore-step')[index];
  range.value = String(value);
  range.dispatchEvent(new Event('input'));
}"""


def _pictures():
    """Three pictures: an all-reduce (5 frames, all in its filmstrip), 30 frames as layers over one base, and
    30 plain frames whose script view is its own copy of them."""
    ring = AllReduceView(all_reduce([(np.arange(8) + 10 * i).astype(np.float32) for i in range(3)]))
    plain = stepped(ipywidgets.Stack([ipywidgets.HTML(f"<p>frame-body-{k}</p>") for k in range(30)], selected_index=7))
    return (_static.wrap("AllReduceView", ring.static_html())
            + _static.wrap("VBox", _static.render(overlaid(30, 29)[0])) + _static.wrap("VBox", _static.render(plain)))


def test_script_steps_every_picture_one_frame_at_a_time(browser, tmp_path):
    page_path = tmp_path / "page.html"
    script = f'<script src="file://{SCRIPT}"></script>'
    page_path.write_text(f"<!doctype html><html><body>{_pictures()}{script}{script}</body></html>")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.route("**/*", offline)
        page.goto(page_path.as_uri(), wait_until="load", timeout=TIMEOUT_S * 1000)
        before = page.evaluate(REPORT_JS)
        # each starts at its widget's frame: the all-reduce at 0 of its 5, the overlaid at 29, the plain at 7
        seen = [(r["bars"], r["filmstripShown"], r["framesShown"], r["shown"], r["text"], r["max"]) for r in before]
        assert seen == [(1, False, True, [0], "frame 0 of 4", 4), (1, False, True, [29], "frame 29 of 29", 29),
                        (1, False, True, [7], "frame 7 of 29", 29)]
        assert page.evaluate(ORDER_JS) == [list(range(5)), list(range(30)), list(range(30))]
        page.evaluate(DRIVE_JS, [0, 4])  # drag the first slider to its end
        page.locator(".dfcore-stepper-controls").nth(1).get_by_role("button", name="previous frame").click()
        page.locator(".dfcore-stepper-controls").nth(2).get_by_role("button", name="next frame").click()
        after = page.evaluate(REPORT_JS)
        assert [(r["shown"], r["text"]) for r in after] == [([4], "frame 4 of 4"), ([28], "frame 28 of 29"),
                                                             ([8], "frame 8 of 29")]
        assert page.locator(".dfcore-stepper-controls").nth(0).get_by_role("button", name="next frame").is_disabled()
        assert page.evaluate("document.documentElement.classList.contains('dfcore-js')")
        # the widgets' own slider lines (the value when the cell ran) are hidden: the bars replace them
        assert page.locator(".dfcore-step-value").count() == 2  # the all-reduce's and the overlaid frames'
        assert page.evaluate("[...document.querySelectorAll('.dfcore-step-value')].every(l => !l.offsetParent)")
    finally:
        context.close()
    assert errors == []
