"""The windows of a convolution or a pooling over an NHWC input, as im2col / col2im with cached geometry.

Source: the im2col lowering of a convolution to one matrix product (Chellapilla, Puri & Simard, "High
Performance Convolutional Neural Networks for Document Processing", 2006), which TF's CPU kernels also use
(``tensorflow/core/kernels/conv_ops_using_gemm.cc``, ``conv_grad_input_ops.cc``: col2im); output sizes and
padding as ``core/framework/kernel_shape_util.cc``.

A :class:`WindowPlan` holds, for one input shape and one window geometry, each window tap's rectangle: the
output positions whose window reads a real (unpadded) input at that tap, and the input rows and columns they
read. im2col copies the input into a padded scratch buffer whose border was zeroed once when it was made (only
the interior is written), then every window at once from a strided view of it (runs of ``kw·C`` values, not
``taps`` copies of ``C``-value runs), and multiplies once. An input of one channel is lowered tap-major instead
(the columns' transpose, ``[kh·kw, N·out_h·out_w]``): its window rows are runs of ``kw`` values, its tap planes
runs of ``out_w``, and BLAS takes the transpose as it is. col2im (:meth:`WindowPlan.col2im_matmul`) works output
row by output row with the images innermost, so that each tap's product is added into an input row in one run.
Scratch buffers are reused through a per-plan free list (a list's ``pop``/``append`` are atomic, so two threads
running one op each get their own buffer), and a batch is lowered in chunks of images whose columns fill at
most :data:`SCRATCH_BYTES` (about a core's L2 cache in float32: the product reads the columns while they are
still cached, and the scratch a plan keeps stays bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

#: The most bytes of im2col columns one chunk of images fills, counted at 8 bytes a value (a larger batch is
#: lowered chunk by chunk). 2 MiB: 1 MiB of float32 columns, which a GEMM reads from L2; 8 MiB (the columns
#: of 6 images of deep MNIST's second convolution) made its forward and filter gradient 10-15 % slower.
SCRATCH_BYTES = 2 << 20
#: The most bytes (counted at 8 a value) of each of col2im's buffers for a block of ``b`` images: one output
#: row's products ``[kh·kw, out_w·b, C]``, the block's gradient ``[h, w, b, C]`` and one row of ``dy``
#: ``[out_w, b, O]``; the batch is split into blocks of equal size. Deep MNIST's second input gradient
#: (50 images, 14×14×32, 5×5×32×64): 1 MiB (5 blocks of 10) 7.4 ms, 1.5-4 MiB (3 of 17, 2 of 25) 6.8-6.9 ms,
#: 8 MiB (one of 50: its products no longer fit the L2 cache) 10.2 ms.
COL2IM_BYTES = 3 << 20
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


def _even_chunk(batch: int, most: int) -> int:
    """Images per chunk when ``batch`` images go in chunks of at most ``most`` (at least 1), all about equal
    (50 by at most 28: 25 and 25, not 28 and 22)."""
    chunks = -(-batch // max(most, 1))
    return max(1, -(-batch // max(chunks, 1)))


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
        tap_major: whether im2col's columns are kept transposed, ``[kh·kw, N·out_h·out_w]`` (one channel).
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
        self.tap_major = channels == 1
        self._rows = out_h * out_w
        taps_bytes = kh * kw * channels * 8
        self.chunk = _even_chunk(in_shape[0], SCRATCH_BYTES // max(self._rows * taps_bytes, 1))
        self.col2im_chunk = _even_chunk(in_shape[0], COL2IM_BYTES // max(out_w * taps_bytes, h * w * channels * 8, 1))
        self._free: dict[tuple[np.dtype, str, int], list[np.ndarray]] = {}

    @cached_property
    def _row_taps(self) -> list[list[tuple[int, int, slice, slice]]]:
        """Per output row, ``(tap, input row, output columns, input columns)`` of each tap reading a real input
        row (col2im's walk; made on first use, so a pooling plan never makes it)."""
        sh, _, dh, _ = self._step
        row_taps: list[list[tuple[int, int, slice, slice]]] = [[] for _ in range(self.out_h)]
        for k, (i, _, orow, ocol, _, icol) in enumerate(self.taps):
            for a in range(self.out_h)[orow]:
                row_taps[a].append((k, a * sh + i * dh - self._top, ocol, icol))
        return row_taps

    # -- scratch -------------------------------------------------------------------------------------------
    def _take(self, dtype: np.dtype, kind: str, depth: int = 0) -> np.ndarray:
        """An uninitialized scratch buffer of ``dtype``: ``kind`` ``"columns"``, im2col's ``[chunk, out_h,
        out_w, kh, kw, C]`` (``[kh, kw, chunk, out_h, out_w]`` when :attr:`tap_major`); ``"padded"``, the padded
        input ``[chunk, padded h, padded w, C]``, zero outside the input (zeroed when made; only the interior
        is ever written); for col2im (``b`` = :attr:`col2im_chunk`), ``"taps"``, one output row's products
        ``[kh·kw, out_w·b, C]``, and flat ``"target"`` (``in h·in w·b·C``: the gradient of a block of images)
        and ``"rows"`` (``out_w·b'·depth``: one row of ``dy``, ``b'`` = :meth:`col2im_block` of ``depth``)."""
        free = self._free.get((dtype, kind, depth))
        if free:
            try:
                return free.pop()
            except IndexError:  # another thread took the last one
                pass
        _, h, w, channels = self.in_shape
        block = self.col2im_chunk
        if kind == "padded":
            return np.zeros((self.chunk, *self._padded_hw, channels), dtype)
        if kind == "taps":
            return np.empty((self.kh * self.kw, self.out_w * block, channels), dtype)
        if kind == "rows":
            return np.empty(self.out_w * self.col2im_block(depth) * depth, dtype)
        if kind == "target":
            return np.empty(h * w * block * channels, dtype)
        if self.tap_major:
            return np.empty((self.kh, self.kw, self.chunk, self.out_h, self.out_w), dtype)
        return np.empty((self.chunk, self.out_h, self.out_w, self.kh, self.kw, channels), dtype)

    def _give(self, buf: np.ndarray, kind: str, depth: int = 0) -> None:
        self._free.setdefault((buf.dtype, kind, depth), []).append(buf)

    # -- im2col / col2im -----------------------------------------------------------------------------------
    def chunks(self, size: int | None = None) -> list[tuple[int, int]]:
        """``(start, stop)`` image ranges of the batch, each at most ``size`` (default :attr:`chunk`) images."""
        n, size = self.in_shape[0], size or self.chunk
        return [(s, min(n, s + size)) for s in range(0, n, size)] or [(0, 0)]

    def _images(self, cols: np.ndarray, n: int) -> np.ndarray:
        """The first ``n`` images' part of a ``"columns"`` buffer (a view in its own layout)."""
        return cols[:, :, :n] if self.tap_major else cols[:n]

    def _matrix(self, part: np.ndarray) -> np.ndarray:
        """A part from :meth:`_images` as the im2col matrix ``[n·out_h·out_w, kh·kw·C]`` (a view; a transposed
        one when :attr:`tap_major`)."""
        taps = self.kh * self.kw
        if self.tap_major:
            return part.reshape(taps, part.shape[2] * self._rows).T
        return part.reshape(part.shape[0] * self._rows, taps * self.in_shape[3])

    def _fill(self, part: np.ndarray, x: np.ndarray) -> None:
        """im2col: ``part`` (from :meth:`_images`) at ``[n, oh, ow, i, j, c]`` = the (zero-padded) input under tap
        ``(i, j)`` of window ``(oh, ow)``, for the images of ``x`` (at most :attr:`chunk`)."""
        if self._unpadded:
            self._copy_windows(part, x)
            return
        n, h, w, _ = x.shape
        buf = self._take(x.dtype, "padded")
        try:
            inner = buf[:n]
            inner[:, self._top:self._top + h, self._left:self._left + w] = x
            self._copy_windows(part, inner)
        finally:
            self._give(buf, "padded")

    def _copy_windows(self, part: np.ndarray, padded: np.ndarray) -> None:
        """One copy from a strided view of every window of ``padded``: runs of ``kw·C`` values where the
        dilation is 1 (a copy per tap would move runs of ``C``), or of ``out_w`` (stride 1) when :attr:`tap_major`."""
        sh, sw, dh, dw = self._step
        s_n, s_h, s_w, s_c = padded.strides
        n, channels = padded.shape[0], padded.shape[3]
        shape: tuple[int, ...]
        strides: tuple[int, ...]
        if self.tap_major:
            shape = (self.kh, self.kw, n, self.out_h, self.out_w)
            strides = (dh * s_h, dw * s_w, s_n, sh * s_h, sw * s_w)
        else:
            shape = (n, self.out_h, self.out_w, self.kh, self.kw, channels)
            strides = (s_n, sh * s_h, sw * s_w, dh * s_h, dw * s_w, s_c)
        np.copyto(part, as_strided(padded, shape, strides, writeable=False))

    def matmul_columns(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out[N·out_h·out_w, O] = im2col(x) @ weights`` (``weights`` ``[kh·kw·C, O]``), chunk by chunk."""
        if self.identity:
            return np.matmul(x.reshape(-1, x.shape[3]), weights, out=out)
        cols = self._take(x.dtype, "columns")
        try:
            for start, stop in self.chunks():
                part = self._images(cols, stop - start)
                self._fill(part, x[start:stop])
                np.matmul(self._matrix(part), weights, out=out[start * self._rows: stop * self._rows])
        finally:
            self._give(cols, "columns")
        return out

    def columns_t_matmul(self, x: np.ndarray, dy: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out[kh·kw·C, O] = im2col(x)^T @ dy`` (``dy`` ``[N·out_h·out_w, O]``): a filter's gradient."""
        if self.identity:
            return np.matmul(x.reshape(-1, x.shape[3]).T, dy, out=out)
        cols = self._take(x.dtype, "columns")
        try:
            for k, (start, stop) in enumerate(self.chunks()):
                part = self._images(cols, stop - start)
                self._fill(part, x[start:stop])
                lhs, rhs = self._matrix(part).T, dy[start * self._rows: stop * self._rows]
                if k == 0:
                    np.matmul(lhs, rhs, out=out)
                else:
                    out += lhs @ rhs
        finally:
            self._give(cols, "columns")
        return out

    def col2im_block(self, depth: int) -> int:
        """Images per col2im block for a ``dy`` of ``depth`` channels: at most :attr:`col2im_chunk`, and few
        enough that one row of ``dy`` stays within :data:`COL2IM_BYTES`."""
        return min(self.col2im_chunk, _even_chunk(self.in_shape[0], COL2IM_BYTES // max(self.out_w * depth * 8, 1)))

    def col2im_matmul(self, dy: np.ndarray, weights: np.ndarray, dx: np.ndarray) -> np.ndarray:
        """``dx`` (NHWC ``in_shape``, any contents) = col2im(``dy @ weights^T``): an input's gradient, where ``dy``
        is ``[N·out_h·out_w, O]`` and ``weights`` the filter ``[kh, kw, C, O]``.

        Block of images by block (:meth:`col2im_block` images ``b``), output row by output row, in a batch-inner
        layout: the row of ``dy`` copied as ``[out_w, b, O]``, its products taken tap by tap (``[kh·kw, out_w·b,
        C]``), and each tap's product added into an input row of the block's gradient ``[h, w, b, C]`` as one
        run of ``w·b·C`` values (stride 1; an NHWC target would take a run of ``w·C`` per image and row); the
        block is transposed into ``dx`` at the end."""
        taps, channels, depth = self.kh * self.kw, dx.shape[3], dy.shape[1]
        if self.identity:
            np.matmul(dy, weights.reshape(channels, depth).T, out=dx.reshape(-1, channels))
            return dx
        per_tap = np.ascontiguousarray(weights.reshape(taps, channels, depth).transpose(0, 2, 1))  # [taps, O, C]
        dy_rows = dy.reshape(-1, self.out_h, self.out_w, depth)
        _, h, w, _ = self.in_shape
        products, rows, target = (self._take(dy.dtype, "taps"), self._take(dy.dtype, "rows", depth),
                                  self._take(dy.dtype, "target"))
        try:
            for start, stop in self.chunks(self.col2im_block(depth)):
                n = stop - start
                block = target[:h * w * n * channels].reshape(h, w, n, channels)
                block.fill(0)
                lhs = rows[:self.out_w * n * depth].reshape(self.out_w, n, depth)
                part = products[:, :self.out_w * n]
                per_column = part.reshape(taps, self.out_w, n, channels)
                for a, row_taps in enumerate(self._row_taps):
                    np.copyto(lhs, dy_rows[start:stop, a].transpose(1, 0, 2))
                    if channels == 1:  # one product [taps, O] @ [O, out_w·b], not taps matrix-vector products
                        np.matmul(per_tap[:, :, 0], lhs.reshape(-1, depth).T, out=part[:, :, 0])
                    else:
                        np.matmul(lhs.reshape(-1, depth), per_tap, out=part)
                    for k, in_row, ocol, icol in row_taps:
                        block[in_row, icol] += per_column[k, ocol]
                np.copyto(dx[start:stop], block.transpose(2, 0, 1, 3))
        finally:
            self._give(products, "taps")
            self._give(rows, "rows", depth)
            self._give(target, "target")
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

