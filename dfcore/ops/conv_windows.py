"""The windows of a convolution or a pooling over an NHWC input, as im2col / col2im with cached geometry.

Source: the im2col lowering of a convolution to one matrix product (Chellapilla, Puri & Simard, "High
Performance Convolutional Neural Networks for Document Processing", 2006), which TF's CPU kernels also use
(``tensorflow/core/kernels/conv_ops_using_gemm.cc``, ``conv_grad_input_ops.cc``: col2im); output sizes and
padding as ``core/framework/kernel_shape_util.cc``.

A :class:`WindowPlan` holds, for one input shape and one window geometry, each window tap's rectangle: the
output positions whose window reads a real (unpadded) input at that tap, and the input rows and columns they
read (col2im adds tap by tap through them). im2col copies the input into a padded scratch buffer whose border
was zeroed once when it was made (only the interior is written), then every window at once from a strided view
of it (runs of ``kw·C`` values, not ``taps`` copies of ``C``-value runs), and multiplies once. Scratch
buffers are reused through a per-plan free list (a list's ``pop``/``append`` are atomic, so two threads
running one op each get their own buffer), and a batch larger than :data:`SCRATCH_BYTES` of columns is
lowered in chunks of images, so the scratch a plan keeps stays bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

#: The most bytes of im2col columns one chunk of images fills (a larger batch is lowered chunk by chunk).
SCRATCH_BYTES = 8 << 20
#: Plans kept per kernel (input shapes seen); the oldest is dropped past this, so the cache cannot grow.
MAX_PLANS = 8


def _tap_range(out_size: int, in_size: int, offset: int, stride: int) -> tuple[slice, slice]:
    """``(output slice, input slice)`` of one tap along one axis: the outputs ``o`` whose input
    ``o * stride + offset`` lies in ``[0, in_size)``, and those inputs."""
    first = (-offset + stride - 1) // stride if offset < 0 else 0
    last = min(out_size - 1, (in_size - 1 - offset) // stride) if offset < in_size else -1
    if last < first:
        return slice(0, 0), slice(0, 0)
    start = first * stride + offset
    return slice(first, last + 1), slice(start, start + (last - first) * stride + 1, stride)


class WindowPlan:
    """The tap rectangles of windows ``(kh, kw)`` with ``strides``/``dilations`` (2 ints each) over an NHWC
    input of ``in_shape``, for outputs ``(out_h, out_w)`` padded ``(top, left)`` before.

    Attributes:
        taps: ``(i, j, out_rows, out_cols, in_rows, in_cols)`` per tap in row-major window order, the slices
            of the output positions that read a real input at tap ``(i, j)`` and of the inputs they read.
        full: whether every tap reads a real input for every output (no padding reaches a window).
        identity: whether the im2col matrix is the input itself (a 1x1 window, stride 1, no padding).
        tiles: whether the windows tile the input exactly (stride = window, no padding, nothing left over):
            each input is read by exactly one window at one tap.
    """

    def __init__(self, in_shape: tuple[int, ...], kh: int, kw: int, strides: Sequence[int], dilations: Sequence[int],
                 out_h: int, out_w: int, top: int, left: int) -> None:
        self.in_shape, self.kh, self.kw = tuple(in_shape), kh, kw
        self.out_h, self.out_w = out_h, out_w
        sh, sw = strides
        dh, dw = dilations
        h, w = in_shape[1], in_shape[2]
        self._step = (sh, sw, dh, dw)
        self._top, self._left = top, left
        # the padded input every window lies in: rows -top .. padded_h - top - 1 of the input
        self._padded_hw = (max(top + h, (out_h - 1) * sh + (kh - 1) * dh + 1),
                           max(left + w, (out_w - 1) * sw + (kw - 1) * dw + 1))
        self._unpadded = top == left == 0 and self._padded_hw == (h, w)
        self.taps = []
        for i in range(kh):
            rows = _tap_range(out_h, h, i * dh - top, sh)
            for j in range(kw):
                cols = _tap_range(out_w, w, j * dw - left, sw)
                self.taps.append((i, j, rows[0], cols[0], rows[1], cols[1]))
        self.full = all(t[2] == slice(0, out_h) and t[3] == slice(0, out_w) for t in self.taps)
        self.identity = kh == kw == 1 and (sh, sw) == (1, 1) and (out_h, out_w) == (h, w)
        self.tiles = (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and (out_h * sh, out_w * sw) == (h, w)
        channels = in_shape[3]
        row_bytes = out_h * out_w * kh * kw * channels * 8
        self.chunk = max(1, min(in_shape[0], SCRATCH_BYTES // max(row_bytes, 1)))
        self._free: dict[tuple[np.dtype, bool], list[np.ndarray]] = {}

    # -- scratch -------------------------------------------------------------------------------------------
    def _take(self, dtype: np.dtype, padded: bool = False) -> np.ndarray:
        """An uninitialized buffer ``[chunk, out_h, out_w, kh, kw, C]`` of ``dtype`` (im2col's and col2im's
        columns), or with ``padded`` the padded input ``[chunk, padded h, padded w, C]``, zero outside the
        input (zeroed when made; only the interior is ever written)."""
        free = self._free.get((dtype, padded))
        if free:
            try:
                return free.pop()
            except IndexError:  # another thread took the last one
                pass
        if padded:
            return np.zeros((self.chunk, *self._padded_hw, self.in_shape[3]), dtype)
        return np.empty((self.chunk, self.out_h, self.out_w, self.kh, self.kw, self.in_shape[3]), dtype)

    def _give(self, buf: np.ndarray, padded: bool = False) -> None:
        self._free.setdefault((buf.dtype, padded), []).append(buf)

    # -- im2col / col2im -----------------------------------------------------------------------------------
    def chunks(self) -> list[tuple[int, int]]:
        """``(start, stop)`` image ranges of the batch, each at most :attr:`chunk` images."""
        n = self.in_shape[0]
        return [(s, min(n, s + self.chunk)) for s in range(0, n, self.chunk)] or [(0, 0)]

    def _fill(self, cols: np.ndarray, x: np.ndarray) -> None:
        """im2col: ``cols[n, oh, ow, i, j, c]`` = the (zero-padded) input under tap ``(i, j)`` of window
        ``(oh, ow)``, for the images of ``x`` (at most :attr:`chunk`)."""
        if self._unpadded:
            self._copy_windows(cols, x)
            return
        n, h, w, _ = x.shape
        buf = self._take(x.dtype, padded=True)
        try:
            inner = buf[:n]
            inner[:, self._top:self._top + h, self._left:self._left + w] = x
            self._copy_windows(cols, inner)
        finally:
            self._give(buf, padded=True)

    def _copy_windows(self, cols: np.ndarray, padded: np.ndarray) -> None:
        """One copy from a strided view of every window of ``padded``: runs of ``kw·C`` values where the
        dilation is 1 (a copy per tap would move runs of ``C``)."""
        sh, sw, dh, dw = self._step
        s_n, s_h, s_w, s_c = padded.strides
        n, channels = padded.shape[0], padded.shape[3]
        windows = as_strided(padded, (n, self.out_h, self.out_w, self.kh, self.kw, channels),
                             (s_n, sh * s_h, sw * s_w, dh * s_h, dw * s_w, s_c), writeable=False)
        np.copyto(cols[:n], windows)

    def matmul_columns(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out[N·out_h·out_w, O] = im2col(x) @ weights`` (``weights`` ``[kh·kw·C, O]``), chunk by chunk."""
        if self.identity:
            return np.matmul(x.reshape(-1, x.shape[3]), weights, out=out)
        cols = self._take(x.dtype)
        try:
            rows = self.out_h * self.out_w
            for start, stop in self.chunks():
                part = cols[:stop - start]
                self._fill(part, x[start:stop])
                np.matmul(part.reshape((stop - start) * rows, -1), weights, out=out[start * rows: stop * rows])
        finally:
            self._give(cols)
        return out

    def columns_t_matmul(self, x: np.ndarray, dy: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out[kh·kw·C, O] = im2col(x)^T @ dy`` (``dy`` ``[N·out_h·out_w, O]``): a filter's gradient."""
        if self.identity:
            return np.matmul(x.reshape(-1, x.shape[3]).T, dy, out=out)
        cols = self._take(x.dtype)
        rows = self.out_h * self.out_w
        try:
            for k, (start, stop) in enumerate(self.chunks()):
                part = cols[:stop - start]
                self._fill(part, x[start:stop])
                lhs = part.reshape((stop - start) * rows, -1).T
                if k == 0:
                    np.matmul(lhs, dy[start * rows: stop * rows], out=out)
                else:
                    out += lhs @ dy[start * rows: stop * rows]
        finally:
            self._give(cols)
        return out

    def col2im_matmul(self, dy: np.ndarray, weights_t: np.ndarray, dx: np.ndarray) -> np.ndarray:
        """``dx`` (zeroed, NHWC ``in_shape``) += col2im(``dy @ weights_t``): an input's gradient, where ``dy`` is
        ``[N·out_h·out_w, O]`` and ``weights_t`` ``[O, kh·kw·C]``."""
        if self.identity:
            np.matmul(dy, weights_t, out=dx.reshape(-1, dx.shape[3]))
            return dx
        cols = self._take(dy.dtype)
        rows = self.out_h * self.out_w
        try:
            for start, stop in self.chunks():
                part = cols[:stop - start]
                np.matmul(dy[start * rows: stop * rows], weights_t, out=part.reshape((stop - start) * rows, -1))
                target = dx[start:stop]
                for i, j, orow, ocol, irow, icol in self.taps:
                    target[:, irow, icol] += part[:, orow, ocol, i, j]
        finally:
            self._give(cols)
        return dx


class PlanCache:
    """What ``make(key)`` returns (a :class:`WindowPlan`, or what a kernel keeps with one) by key (an input
    shape...), made on first use; at most :data:`MAX_PLANS` are kept (the oldest is dropped)."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self._make = make
        self._plans: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        """The plan of ``key`` (made on first use)."""
        plan = self._plans.get(key)
        if plan is None:
            plan = self._make(key)
            if len(self._plans) >= MAX_PLANS:
                self._plans.pop(next(iter(self._plans)), None)
            self._plans[key] = plan
        return plan

