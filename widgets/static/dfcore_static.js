/* dfcore_static.js: steps the static pictures of dfcore's widgets in a page with no kernel (the course website).
 *
 * A step-through's static picture (widgets/_static.py, `stepper`) holds two views side by side:
 * `div.dfcore-filmstrip` (the current frame and a few others, shrunk: what a reader without scripts sees) and,
 * right after it, `div.dfcore-frames` (hidden) holding every kept frame in a `div.dfcore-frame`
 * (`data-frame`: the frame's index in the step-through; `data-count` on the container: how many frames the
 * step-through has; `data-current`: the frame to show first). When the filmstrip already shows every frame,
 * the container is empty and the filmstrip's own `div.dfcore-frame`s (shrunk there) are moved into it, in
 * order, at full size. For each such container this script hides the filmstrip, shows the container with one
 * frame at a time, and puts above it a bar
 * (`div.dfcore-stepper-controls`) with a "previous" button, a range input (`input.dfcore-step`, one step per
 * kept frame), a "next" button and the text "frame i of n" (i: the frame's index, n: the last index). The
 * static line of the widget's own slider (`div.dfcore-step-value`, the value it had when the cell ran) is
 * hidden in the pictures (`div.dfcore-static`) where a bar is put.
 *
 * Plain JavaScript, no library, nothing fetched. Safe to run more than once (a container is set up once:
 * `data-dfcore-ready`); `window.dfcoreStatic.setUp(root)` sets up pictures added to the page later.
 */
(function () {
  "use strict";

  // The frames of `view` (a container or a filmstrip), not those of a step-through drawn inside a frame.
  function framesOf(view, selector) {
    return Array.prototype.filter.call(view.querySelectorAll(".dfcore-frame"),
      function (frame) { return frame.closest(selector) === view; });
  }

  // Move a filmstrip's frames into `container`, ordered by their index, at full size.
  function moveFrames(filmstrip, container) {
    var frames = framesOf(filmstrip, ".dfcore-filmstrip");
    frames.sort(function (a, b) { return Number(a.dataset.frame) - Number(b.dataset.frame); });
    frames.forEach(function (frame) {
      frame.style.zoom = "";
      container.appendChild(frame);
    });
    return frames;
  }

  function button(text, label) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.setAttribute("aria-label", label);
    return b;
  }

  function setUpOne(container) {
    if (container.dataset.dfcoreReady) return;
    var filmstrip = container.previousElementSibling;
    if (!(filmstrip && filmstrip.classList.contains("dfcore-filmstrip"))) filmstrip = null;
    var frames = framesOf(container, ".dfcore-frames");
    if (frames.length === 0 && filmstrip) frames = moveFrames(filmstrip, container);
    if (frames.length === 0) return;
    container.dataset.dfcoreReady = "1";
    var indices = frames.map(function (frame) { return Number(frame.dataset.frame); });
    var last = Number(container.dataset.count || frames.length) - 1;
    var bar = document.createElement("div");
    bar.className = "dfcore-stepper-controls";
    bar.style.cssText = "display:flex;align-items:center;gap:6px;margin:4px 0;" +
      "font:12px Helvetica,Arial,sans-serif;color:#555";
    var previous = button("◀", "previous frame");
    var next = button("▶", "next frame");
    var range = document.createElement("input");
    range.type = "range";
    range.className = "dfcore-step";
    range.min = "0";
    range.max = String(frames.length - 1);
    range.step = "1";
    range.setAttribute("aria-label", "frame");
    var text = document.createElement("span");
    text.className = "dfcore-step-text";
    bar.append(previous, range, next, text);

    var position = 0;
    function show(to) {
      position = Math.max(0, Math.min(frames.length - 1, to));
      frames.forEach(function (frame, i) { frame.style.display = i === position ? "" : "none"; });
      range.value = String(position);
      text.textContent = "frame " + indices[position] + " of " + last;
      previous.disabled = position === 0;
      next.disabled = position === frames.length - 1;
    }
    range.addEventListener("input", function () { show(Number(range.value)); });
    previous.addEventListener("click", function () { show(position - 1); });
    next.addEventListener("click", function () { show(position + 1); });

    container.prepend(bar);
    if (filmstrip) {
      filmstrip.hidden = true;
      filmstrip.style.display = "none";
    }
    container.hidden = false;
    container.style.display = "";
    var picture = container.closest(".dfcore-static");
    if (picture) {
      Array.prototype.forEach.call(picture.querySelectorAll(".dfcore-step-value"),
        function (line) { line.style.display = "none"; });
    }
    var first = indices.indexOf(Number(container.dataset.current));
    show(first < 0 ? 0 : first);
  }

  function setUp(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll(".dfcore-frames"), setUpOne);
    document.documentElement.classList.add("dfcore-js");
  }

  window.dfcoreStatic = { setUp: setUp };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  } else {
    setUp(document);
  }
})();
