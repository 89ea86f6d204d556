"""TensorBoard summary ops: ``ScalarSummary``, ``HistogramSummary``, ``ImageSummary``, ``TensorSummaryV2`` (text)
and ``MergeSummary``. Each outputs a scalar string tensor holding a serialized ``Summary`` message.

Source: ``tensorflow/python/summary/summary.py``, ``core/kernels/summary_op.cc``,
``summary_image_op.cc``, ``core/lib/histogram/histogram.cc`` (TF's default bucket limits and how empty
buckets are merged) and TensorBoard's text plugin (``plugin_name: "text"``). Images are PNG-encoded with
Pillow (a dependency of ``tensorboard``).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np
from tensorboard.util import tensor_util

from .. import errors
from ..framework import dtypes, registry
from ..framework.protos import HistogramProto, Summary, SummaryMetadata
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["merge_summary", "scalar_summary", "histogram_summary", "image_summary", "text_summary"]

_STRING_SCALAR = [(dtypes.string, TensorShape([]))]


def scalar_summary(tag: str, value: TensorLike, name: str) -> Tensor:
    """A ``ScalarSummary`` op: ``Summary.value[0] = {tag, simple_value=float(value)}``; ``value`` is a real scalar."""
    return apply_op1("ScalarSummary", [convert_to_tensor(tag, dtype=dtypes.string), value], {}, name)


def histogram_summary(tag: str, values: TensorLike, name: str) -> Tensor:
    """A ``HistogramSummary`` op over any real tensor (TF's default exponential buckets)."""
    return apply_op1("HistogramSummary", [convert_to_tensor(tag, dtype=dtypes.string), values], {}, name)


def image_summary(tag: str, images: TensorLike, max_images: int, name: str) -> Tensor:
    """An ``ImageSummary`` op over ``[batch, height, width, channels]`` images, channels 1, 3 or 4."""
    return apply_op1("ImageSummary", [convert_to_tensor(tag, dtype=dtypes.string), images],
                     {"max_images": int(max_images)}, name)


def text_summary(tag: str, text: TensorLike, name: str) -> Tensor:
    """A ``TensorSummaryV2`` op for TensorBoard's text plugin over a string tensor."""
    return apply_op1("TensorSummaryV2", [convert_to_tensor(tag, dtype=dtypes.string), text],
                     {"plugin_name": "text"}, name)


def merge_summary(inputs: TensorLike, name: str) -> Tensor:
    """A ``MergeSummary`` op: the union of the values of serialized ``Summary`` tensors (tags must differ)."""
    return apply_op1("MergeSummary", list(inputs), {"N": len(inputs)}, name)


def _scalar_string_shape(op):
    return _STRING_SCALAR


for _op_type in ("ScalarSummary", "HistogramSummary", "ImageSummary", "TensorSummaryV2", "MergeSummary"):
    registry.RegisterShape(_op_type)(_scalar_string_shape)
    registry.NotDifferentiable(_op_type)


def _serialized(*values) -> np.ndarray:
    return np.array(Summary(value=list(values)).SerializeToString(), dtype=object)


def _tag(value) -> str:
    tag = value.item() if isinstance(value, np.ndarray) else value
    return tag.decode("utf-8") if isinstance(tag, bytes) else str(tag)


@registry.RegisterKernel("ScalarSummary")
def _scalar_kernel(op):
    def compute(tag, value):
        if np.ndim(value) != 0:
            raise errors.InvalidArgumentError(None, op, f"tags and values are not the same shape: [] != "
                                                        f"{TensorShape(np.shape(value)).tf_str()} (tag '{_tag(tag)}')")
        return _serialized(Summary.Value(tag=_tag(tag), simple_value=float(value)))
    return compute


@registry.RegisterKernel("HistogramSummary")
def _histogram_kernel(op):
    def compute(tag, values):
        flat = np.asarray(values, dtype=np.float64).ravel()
        if not np.all(np.isfinite(flat)):
            raise errors.InvalidArgumentError(None, op, f"Nan in summary histogram for: {_tag(tag)}")
        return _serialized(Summary.Value(tag=_tag(tag), histo=histogram_proto(flat)))
    return compute


def _default_bucket_limits() -> np.ndarray:
    """``histogram.cc``'s default limits: ±1e-12·1.1^k up to 1e20, then DBL_MAX."""
    positive = []
    value = 1e-12
    while value < 1e20:
        positive.append(value)
        value *= 1.1
    return np.array([-v for v in reversed(positive)] + [0.0] + positive + [np.finfo(np.float64).max])


_LIMITS = _default_bucket_limits()


def histogram_proto(values: np.ndarray) -> HistogramProto:
    """A ``HistogramProto`` of finite float64 ``values`` over TF's default buckets; a run of empty buckets is
    written as one bucket (its last limit, count 0), as ``Histogram::EncodeToProto`` does."""
    counts = np.bincount(np.searchsorted(_LIMITS, values, side="right"), minlength=len(_LIMITS))[:len(_LIMITS)]
    histo = HistogramProto(min=float(values.min()) if values.size else 0.0,
                           max=float(values.max()) if values.size else 0.0, num=float(values.size),
                           sum=float(values.sum()), sum_squares=float(np.dot(values, values)))
    for i, count in enumerate(counts):
        if count or i + 1 == len(counts) or counts[i + 1]:
            histo.bucket_limit.append(float(_LIMITS[i]))
            histo.bucket.append(float(count))
    return histo


@registry.RegisterKernel("ImageSummary")
def _image_kernel(op):
    max_images = op.get_attr("max_images")

    def compute(tag, images):
        if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
            raise errors.InvalidArgumentError(None, op, "Tensor must be 4-D with last dim 1, 3, or 4, not "
                                                        f"{TensorShape(images.shape).tf_str()}")
        name = _tag(tag)
        count = min(max_images, images.shape[0])
        values = [Summary.Value(tag=f"{name}/image" if max_images == 1 else f"{name}/image/{i}",
                                image=_png(images[i])) for i in range(count)]
        return _serialized(*values)
    return compute


def _png(image: np.ndarray) -> Summary.Image:
    """TF's scaling (``summary_image_op.cc``): uint8 as is; floats ≥ 0 scaled so the max is 255, else
    so the largest magnitude is 127 around 128."""
    from PIL import Image

    if image.dtype != np.uint8:
        image = image.astype(np.float64)
        largest = float(np.abs(image).max()) if image.size else 0.0
        if image.size and image.min() >= 0:
            scale, offset = (255.0 / largest if largest else 0.0), 0.0
        else:
            scale, offset = (127.0 / largest if largest else 0.0), 128.0
        image = np.clip(np.round(image * scale + offset), 0, 255).astype(np.uint8)
    height, width, channels = image.shape
    buffer = io.BytesIO()
    Image.fromarray(image[:, :, 0] if channels == 1 else image).save(buffer, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=buffer.getvalue())


@registry.RegisterKernel("TensorSummaryV2")
def _text_kernel(op):
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=op.get_attr("plugin_name")))

    def compute(tag, tensor):
        proto = tensor_util.make_tensor_proto(np.asarray(tensor, dtype=object))
        return _serialized(Summary.Value(tag=_tag(tag), metadata=metadata, tensor=proto))
    return compute


@registry.RegisterKernel("MergeSummary")
def _merge_kernel(op):
    def compute(*serialized):
        merged, seen = Summary(), set()
        for item in serialized:
            summary = Summary.FromString(item.item() if isinstance(item, np.ndarray) else item)
            for value in summary.value:
                if value.tag in seen:
                    raise errors.InvalidArgumentError(None, op, f"Duplicate tag {value.tag} found in summary inputs")
                seen.add(value.tag)
                merged.value.add().CopyFrom(value)
        return np.array(merged.SerializeToString(), dtype=object)
    return compute
