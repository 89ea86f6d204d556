"""Pooling kernels for windows that tile the input: ``ksize == strides``, no padding, nothing left over (a
2x2/2 pool of an even-sized input, as the lessons' conv nets have).

Source: the window arithmetic of ``tensorflow/core/kernels/maxpooling_op.cc`` / ``avgpooling_op.cc``; here
each input belongs to exactly one window at one tap, so an NHWC array ``[N, H, W, C]`` is viewed without a
copy as ``[N, out_h, kh, out_w, kw, C]``: no padding, no partial window, no adding up; MaxPoolGrad of a
large input is a few whole-array ufunc calls (a small one stays tap by tap, which numpy runs faster there:
:data:`STREAM_BYTES`). Results are those of the tap-pass kernels of :mod:`dfcore.ops.nn_pool` bit for bit (the
same ufuncs in the same tap order; ``fmax`` skips NaN; the gradient goes to the first maximum of a window in
row-major order).
"""

from __future__ import annotations

import numpy as np

__all__ = ["avg_pool_grad_tiles", "first_maxima", "max_pool_grad_tiles", "max_pool_tiles", "tiled"]

#: Inputs larger than this are compared (and their gradient written) in one broadcast ufunc call, which reads
#: them once from memory; smaller ones, likely in cache, in one call per tap, which numpy iterates faster
#: (measured, float32 2x2/2 MaxPoolGrad: [32, 16, 16, 16] alone 0.20 ms broadcast, 0.13 ms tap by tap;
#: [50, 28, 28, 32] in a deep-MNIST training step 2.3 ms broadcast, 3.2 ms tap by tap, CPU time).
STREAM_BYTES = 1 << 20


def tiled(a: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """``a`` ``[N, H, W, C]`` (``H``, ``W`` multiples of ``kh``, ``kw``) as ``[N, H/kh, kh, W/kw, kw, C]``: a
    view (splitting an axis never copies), whatever ``a``'s strides."""
    n, h, w, c = a.shape
    return a.reshape(n, h // kh, kh, w // kw, kw, c)


def _spread(a: np.ndarray) -> np.ndarray:
    """A window-sized ``a`` ``[N, out_h, out_w, C]`` broadcast over the taps: ``[N, out_h, 1, out_w, 1, C]``."""
    return a[:, :, None, :, None, :]


def _in_place(hits: np.ndarray) -> np.ndarray:
    """Tap-major ``hits`` ``[kh, kw, N, out_h, out_w, C]`` seen as the tiled input ``[N, out_h, kh, out_w, kw, C]``."""
    return hits.transpose(2, 3, 0, 4, 1, 5)


def _taps(kh: int, kw: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(kh) for j in range(kw)]


def _streamed(x: np.ndarray) -> bool:
    """Whether ``x`` is worked on in one broadcast call (else tap by tap): see :data:`STREAM_BYTES`."""
    return x.nbytes > STREAM_BYTES


def max_pool_tiles(x: np.ndarray, kh: int, kw: int, out: np.ndarray, lowest: float) -> np.ndarray:
    """``out`` ``[N, H/kh, W/kw, C]`` = the maximum of each window of ``x`` ``[N, H, W, C]``, NaN skipped, and
    ``lowest`` (-inf, or an integer dtype's minimum) for a window of NaN only: the tap-pass kernel's
    ``fmax`` fold from ``lowest``, with its first step ``fmax(lowest, tap 0)`` moved to the end."""
    x6 = tiled(x, kh, kw)
    taps = [x6[:, :, i, :, j] for i, j in _taps(kh, kw)]
    if len(taps) == 1:
        return np.fmax(taps[0], lowest, out=out)
    np.fmax(taps[0], taps[1], out=out)
    for tap in taps[2:]:
        np.fmax(out, tap, out=out)
    if out.dtype.kind == "f":  # fmax(NaN, NaN) is NaN: a window of NaN only gives `lowest`, as the fold does
        np.fmax(out, lowest, out=out)
    return out


#: ``0x01`` in every byte of a lane (:func:`_lanes`).
_BYTE_ONES: dict[np.dtype, np.unsignedinteger] = {np.dtype(np.uint64): np.uint64(0x0101010101010101),
                                                   np.dtype(np.uint8): np.uint8(1)}


def _lanes(bools: np.ndarray) -> np.ndarray:
    """``bools`` (contiguous) with their last axis read eight at a time as ``uint64`` (one at a time as ``uint8``
    when its length is not a multiple of 8): a bool is 0 or 1, so a bitwise and/xor of lanes never carries
    into the next byte."""
    return bools.view(np.uint64 if bools.shape[-1] % 8 == 0 else np.uint8)


def _keep_first(hit: np.ndarray, free: np.ndarray, t: int, taps: int) -> None:
    """Tap ``t`` of ``taps`` (row-major) of the first-maximum selection, on lanes of bools: ``hit`` (whether
    the tap's input equals its window's maximum) keeps only windows in ``free`` (whose maximum has not come
    yet), which it then leaves; tap 0 keeps all and sets ``free``."""
    if t == 0:
        np.bitwise_xor(hit, _BYTE_ONES[hit.dtype], out=free)
        return
    np.bitwise_and(hit, free, out=hit)
    if t < taps - 1:
        np.bitwise_xor(free, hit, out=free)


def first_maxima(x: np.ndarray, y: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """Which input is the first maximum of its window: bools ``[kh, kw, N, out_h, out_w, C]`` (tap-major), True
    where ``x`` equals the window's ``y`` and no earlier tap (row-major) of the window does; one broadcast
    comparison, then :func:`_keep_first` tap by tap on :func:`_lanes`."""
    taps = kh * kw
    hits = np.empty((kh, kw, *y.shape), np.bool_)
    np.equal(tiled(x, kh, kw), _spread(y), out=_in_place(hits))
    flat = _lanes(hits.reshape(taps, -1))
    free = np.empty_like(flat[0])
    for t in range(taps):
        _keep_first(flat[t], free, t, taps)
    return hits


def max_pool_grad_tiles(x: np.ndarray, y: np.ndarray, grad: np.ndarray, kh: int, kw: int,
                        dx: np.ndarray) -> np.ndarray:
    """``dx`` ``[N, H, W, C]`` = ``grad`` ``[N, H/kh, W/kw, C]`` at the first maximum of each window of ``x``
    (the input equal to the window's ``y``), ``grad * 0`` elsewhere, as the tap-pass kernel's (a NaN or
    infinite gradient makes NaN at the other taps): one multiply by the bools of :func:`first_maxima`, or
    (:data:`STREAM_BYTES`) per tap a comparison, :func:`_keep_first` and a multiply."""
    dx6 = tiled(dx, kh, kw)
    if _streamed(x):
        np.multiply(_spread(grad), _in_place(first_maxima(x, y, kh, kw)), out=dx6)
        return dx
    x6, taps = tiled(x, kh, kw), kh * kw
    hit = np.empty(y.shape, np.bool_)
    hit_lanes = _lanes(hit.reshape(-1))
    free = np.empty_like(hit_lanes)
    for t, (i, j) in enumerate(_taps(kh, kw)):
        np.equal(x6[:, :, i, :, j], y, out=hit)
        _keep_first(hit_lanes, free, t, taps)
        np.multiply(grad, hit, out=dx6[:, :, i, :, j])
    return dx


def avg_pool_grad_tiles(share: np.ndarray, kh: int, kw: int, dx: np.ndarray) -> np.ndarray:
    """``dx`` ``[N, H, W, C]`` = each window's ``share`` ``[N, H/kh, W/kw, C]`` (its gradient over its count) at
    every input of the window: one broadcast copy."""
    np.copyto(tiled(dx, kh, kw), _spread(share))
    return dx
