"""TensorBoard reads dfcore's event files: the multi-tower example's run in TensorBoard's Graphs dashboard.

The example (``dfcore.examples.multi_tower``, 4 towers, one epoch) writes a run to a temporary folder; a
private ``tensorboard`` serves it on a free 127.0.0.1 port, and headless Chromium opens ``/#graphs``:
- the graph renders (node shapes in the scene);
- colour by "Device": the legend lists the devices of the GraphDef (``/device:GPU:0`` shows as ``GPU:0``)
  and the nodes are filled with more than one device colour;
- the traced step's tag (``step1``) is in the Tag ("Session runs") dropdown; choosing it enables the
  "Compute time" and "Memory" colourings, whose scales are finite numbers and whose fills differ;
and save ``tests/browser/screenshots/tensorboard-graphs-device.png`` and ``...-compute-time.png``.
"""

import re
import time

import pytest
from _requirements import require_module
from browser_harness import running_tensorboard
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

PAGE_LOAD_TIMEOUT_S = 60
RENDER_TIMEOUT_S = 10
VIEWPORT = {"width": 1400, "height": 1300}
TRACED_TAG = "step1"

# Every node shape's fill: a colour, or url(#id) of a gradient whose stops carry the (device) colours.
NODE_FILLS_JS = "els => els.map(e => getComputedStyle(e).fill)"
GRADIENT_STOPS_JS = ("els => els.map(e => [e.id, [...e.querySelectorAll('stop')]"
                     ".map(s => s.getAttribute('stop-color'))])")


@pytest.fixture(scope="module")
def multi_tower_run(tmp_path_factory):
    """A temporary log directory holding the multi-tower example's TensorBoard run (4 towers, one epoch)."""
    require_module("sklearn")
    require_module("tqdm")
    from dfcore.examples import multi_tower

    logdir = tmp_path_factory.mktemp("tensorboard-run")
    multi_tower.train(towers=4, epochs=1, progress=False, logdir=str(logdir))
    return logdir


def graph_devices(logdir):
    """The distinct non-empty ``device`` fields of the GraphDef in ``logdir``."""
    accumulator = EventAccumulator(str(logdir))
    accumulator.Reload()
    return {node.device for node in accumulator.Graph().node if node.device}


def run_is_listed(server):
    """True once TensorBoard's graphs plugin lists the run's graph and its traced step."""
    run = server.get_json("/data/plugin/graphs/info", timeout_s=2).get(".", {})
    return run.get("run_graph", False) and TRACED_TAG in run.get("tags", {})


def node_fills(page):
    return page.locator("g.node .nodeshape > *").evaluate_all(NODE_FILLS_JS)


def device_colours(page):
    """The distinct colours of the gradients that fill node shapes under "Device" colouring."""
    used = {m.group(1) for fill in node_fills(page) if (m := re.fullmatch(r'url\("?#(device-[^")]+)"?\)', fill))}
    stops = dict(page.locator("linearGradient").evaluate_all(GRADIENT_STOPS_JS))
    return {colour for gradient in used for colour in stops.get(gradient, [])}


def solid_fills(page):
    """The distinct plain colours of node shapes (no gradient or hatch; black outlines of series left out)."""
    return {fill for fill in node_fills(page) if fill.startswith("rgb(") and fill != "rgb(0, 0, 0)"}


def poll(read, done, timeout_s=RENDER_TIMEOUT_S):
    """``read()`` again every 0.25 s until ``done(value)`` or ``timeout_s`` passed; the last value."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    return value


def colour_by(page, name):
    page.locator("tf-graph-controls paper-radio-button", has_text=name).click()


def legend_text(page):
    return page.locator("tf-graph-controls .legend-holder").inner_text()


def test_tensorboard_colours_the_multi_tower_graph_by_device_and_compute_time(browser, multi_tower_run,
                                                                              screenshots_dir, tmp_path):
    devices = graph_devices(multi_tower_run)
    assert devices == {"/device:CPU:0", "/device:GPU:0", "/device:GPU:1", "/device:GPU:2", "/device:GPU:3"}
    with running_tensorboard(multi_tower_run, tmp_path, run_is_listed) as server:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.set_default_timeout(PAGE_LOAD_TIMEOUT_S * 1000)
            page.goto(f"{server.url}/#graphs")
            page.locator("g.node .nodeshape").first.wait_for()
            assert page.locator("g.node").count() > 10, "the graph did not render"

            colour_by(page, "Device")
            page.locator("tf-graph-controls .color-legend-value", has_text="GPU:3").wait_for()
            legend = set(page.locator("tf-graph-controls .color-legend-value").all_inner_texts())
            assert {d.split("/device:")[-1] for d in devices} <= legend, legend
            colours = poll(lambda: device_colours(page), lambda c: len(c) >= 3)
            assert len(colours) >= 3, f"nodes are filled with {colours}: one colour per device expected"
            page.screenshot(path=screenshots_dir / "tensorboard-graphs-device.png")

            tag_menu = page.locator("tf-graph-controls paper-dropdown-menu",
                                    has=page.locator("paper-item", has_text=TRACED_TAG))
            tag_menu.click()
            page.locator("tf-graph-controls paper-item", has_text=TRACED_TAG).click()
            for colouring in ("Memory", "Compute time"):
                radio = page.locator("tf-graph-controls paper-radio-button", has_text=colouring)
                page.wait_for_function("el => el.getAttribute('aria-disabled') === 'false'", arg=radio.element_handle())
                colour_by(page, colouring)
                page.locator("tf-graph-controls .legend-holder", has_text="Devices included in stats").wait_for()
                text = legend_text(page)
                assert "NaN" not in text and re.search(r"\d (B|KB|MB|µs|ms|s)\b", text), text
                solid = poll(lambda: solid_fills(page), lambda fills: len(fills) >= 3)
                assert len(solid) >= 3, f"{colouring}: nodes are filled with {solid}"
            page.screenshot(path=screenshots_dir / "tensorboard-graphs-compute-time.png")
        finally:
            context.close()
