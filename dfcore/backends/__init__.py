"""The array-module seam: which array library holds a device's tensors, and how values cross between libraries.

Source: the Python array API standard (data-apis.org, 2024.12) through ``array-api-compat``; TF has no such
layer (its kernels are C++ per device type, ``REGISTER_KERNEL_BUILDER(Name(...).Device(DEVICE_GPU))``).

A **backend** (:class:`Backend`) names an array library: ``xp`` (its array-API namespace), ``from_host`` /
``to_host`` (numpy in and out), ``is_native`` and the few things the standard lacks (``supports_out``,
``matmul`` with transpose flags, ``quiet`` float errors, ``dtype``, ``take_columns``/``add_to_columns`` for
per-row indexing) and the calls small kernels pay most for, which a backend may make cheaper with the same
bits (``divide``, ``reducer``, ``reshape``, ``multiply_mask``; numpy's skip its Python wrappers such as
``np.sum``'s). Shape-like inputs (axes, shapes, permutations) are read on the host with ``to_host``, as TF keeps
them in host memory (``HostMemory``), and every kernel's outputs are arrays of its device's backend.
Backends are registered by name and imported on first use (:func:`get`): ``"numpy"``
(:mod:`.numpy_backend`), ``"array_api_strict"`` (:mod:`.strict_backend`, CI's stand-in for a GPU library),
``"cupy"`` (``dfcore.backends.cupy_backend``, written with the real-GPU devices; a CPU run never imports it).

Each device carries a backend name (:attr:`dfcore.runtime.device_set.Device.backend`; CPU: numpy; a
simulated GPU: :func:`simulated_gpu_backend`). Kernels registered with
:func:`dfcore.framework.registry.RegisterArrayKernel` run on any backend; kernels registered with
``RegisterKernel`` are numpy-only and exist only on numpy-backed devices (the placer then treats them as TF
treats an op a device has no kernel for). Values cross backends in one place, :func:`transfer`: a
``_Recv`` takes what it receives into its device's backend, a fetch leaves as numpy, a feed enters through
the client's CPU partition.

Numpy-only kernels (honest list; on a non-numpy device they are missing, so the placer keeps them on a CPU, or
raises TF's error for an explicit request without soft placement): convolution and pooling (``Conv2D``, its
backprops and ``_FusedConv2D``, ``MaxPool``, ``AvgPool`` and their grads), ``FusedBatchNorm``/``Grad``,
``LRN``/``Grad``, ``TopKV2``, ``InTopKV2``, gathers and scatters (``GatherV2``, ``UnsortedSegmentSum``,
``DynamicPartition``, ``DynamicStitch``), ``Where``, ``Pad``/``PadV2``/``MirrorPad``/``MirrorPadGrad``,
``InvertPermutation``, ``Cumsum``, ``Multinomial``, ``RandomShuffle``, ``CountUpTo``, ``CheckNumerics``, ``Assert``,
linear algebra (``MatrixInverse``, ``MatrixDeterminant``, ``Cholesky``...),
strings, parsing and summaries, queues, readers, datasets and iterators, stacks, accumulators and mutexes,
``PyFunc``, ``SaveV2``/``RestoreV2``/``MatchingFiles``, ``_Arg``/``_Retval`` (the client's CPU), and the
allocator's ``out=`` kernels (numpy only, by :attr:`Backend.supports_out`). Every other kernel is an array
kernel (tests/unit/test_array_api_kernels.py and test_array_api_steps.py run each on ``array_api_strict``).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
from typing import Any, Protocol

import numpy as np

#: The environment variable that picks the backend of simulated GPUs (dfcore's option; TF has no such field).
SIMULATED_GPU_BACKEND_ENV = "DFCORE_SIMULATED_GPU_BACKEND"
NUMPY = "numpy"

#: backend name -> module defining ``BACKEND`` (imported on first use, so cupy only when asked for)
_MODULES: dict[str, str] = {
    "numpy": "dfcore.backends.numpy_backend",
    "array_api_strict": "dfcore.backends.strict_backend",
    "cupy": "dfcore.backends.cupy_backend",
}
_LOADED: dict[str, Backend] = {}


class Backend(Protocol):
    """One array library as the kernels see it.

    Attributes:
        name: the registry name (``"numpy"``).
        xp: the array-API namespace kernels call (``xp.matmul``, ``xp.sum``...).
        supports_out: True when the allocator's ``out=`` kernels (numpy ufunc ``out=``) may run on it.
    """

    name: str
    xp: Any
    supports_out: bool

    def from_host(self, value: Any) -> Any:
        """A numpy array (or scalar) as this backend's array; values of dtypes it lacks (strings) stay numpy."""
        ...

    def to_host(self, value: Any) -> np.ndarray:
        """A native array as a numpy array (a copy off the device where there is one)."""
        ...

    def is_native(self, value: Any) -> bool:
        """True when ``value`` is an array (or numpy scalar, for numpy) of this backend."""
        ...

    def dtype(self, np_dtype: Any) -> Any:
        """The backend's dtype object for a numpy dtype (``np.float32`` -> ``xp.float32``)."""
        ...

    def matmul(self, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
        """``a @ b`` of 2-D (or batched) arrays, with the last two axes of either transposed first."""
        ...

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        """A context in which float overflow, 0/0 and x/0 give inf/nan silently (TF's behaviour)."""
        ...

    def take_columns(self, x: Any, columns: Any) -> Any:
        """``[x[i, columns[i]] for each row i]`` of a 2-D ``x`` (the standard has no fancy indexing)."""
        ...

    def add_to_columns(self, x: Any, columns: Any, value: float) -> Any:
        """``x`` with ``value`` added at ``x[i, columns[i]]`` of each row; ``x`` must be a fresh array of the
        kernel's own (a backend with indexed assignment updates it in place)."""
        ...

    def divide(self, x: Any, y: Any) -> Any:
        """``x / y`` (``xp.divide``) with float overflow, 0/0 and x/0 giving inf/nan silently (TF's ``RealDiv``)."""
        ...

    def reducer(self, name: str) -> Any:
        """The reduction ``name`` (``"sum"``, ``"max"``, ``"min"``, ``"prod"``) as ``fn(x, axis=, keepdims=)``:
        the same values, dtypes and errors as ``xp.<name>``."""
        ...

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        """``xp.reshape(x, shape)`` (a view where the layout allows; ``shape`` may hold one -1)."""
        ...

    def multiply_mask(self, x: Any, mask: Any) -> Any:
        """``x * mask`` of a bool ``mask`` of x's shape, in x's dtype (the mask as 0 and 1; ``inf * 0`` is nan)."""
        ...


def register(name: str, module: str) -> None:
    """Register (or re-point) backend ``name`` as the ``BACKEND`` attribute of ``module``, imported on first use."""
    _MODULES[name] = module
    _LOADED.pop(name, None)


def names() -> list[str]:
    """The registered backend names."""
    return sorted(_MODULES)


def get(name: str | Backend) -> Backend:
    """The backend registered as ``name`` (a backend passes through).

    Raises:
        ValueError: an unknown name.
        ImportError: its library is not installed (cupy without a GPU stack).
    """
    if not isinstance(name, str):
        return name
    found = _LOADED.get(name)
    if found is None:
        if name not in _MODULES:
            raise ValueError(f"Unknown array backend {name!r}; registered: {', '.join(names())}")
        found = _LOADED[name] = importlib.import_module(_MODULES[name]).BACKEND
    return found


def simulated_gpu_backend() -> str:
    """The backend of simulated GPUs: ``$DFCORE_SIMULATED_GPU_BACKEND`` or numpy.

    Raises:
        ValueError: the variable names no registered backend.
    """
    name = os.environ.get(SIMULATED_GPU_BACKEND_ENV, "") or NUMPY
    if name not in _MODULES:
        raise ValueError(f"{SIMULATED_GPU_BACKEND_ENV}={name!r} names no array backend; registered: "
                         f"{', '.join(names())}")
    return name


def default_backend(device_type: str) -> str:
    """The backend a simulated device of ``device_type`` gets: numpy for CPUs, :func:`simulated_gpu_backend`
    for the rest."""
    return NUMPY if device_type == "CPU" else simulated_gpu_backend()


def backend_of(value: Any) -> Backend | None:
    """The loaded backend ``value`` is native to (numpy checked first), None for a non-array value."""
    numpy_backend = get(NUMPY)
    if numpy_backend.is_native(value):
        return numpy_backend
    for backend in _LOADED.values():
        if backend.is_native(value):
            return backend
    return None


def transfer(value: Any, src: str | Backend | None, dst: str | Backend) -> Any:
    """``value`` (an array of ``src``; None: whichever backend it is native to) as an array of ``dst``.

    The one place values cross array libraries (a ``_Recv`` on another backend's device, fetches, variable
    storage); a value of ``dst`` already, or no array at all (``DEAD``, a reference, a Python object), passes
    through unchanged. Goes through numpy on the host (a device-to-device copy is the cupy backend's own).
    """
    dst_backend = get(dst)
    if dst_backend.is_native(value):
        return value
    src_backend = backend_of(value) if src is None else get(src)
    if src_backend is None or not src_backend.is_native(value):
        return value
    return dst_backend.from_host(src_backend.to_host(value))


def shape_of(value: Any) -> tuple[int, ...]:
    """The shape of an array of any backend (of a Python value: numpy's), without a copy to the host."""
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def itemsize_of(value: Any) -> int:
    """Bytes per element of an array of any backend (its dtype read by name: ``float32`` -> 4)."""
    dtype = value.dtype
    size = getattr(dtype, "itemsize", None)
    return int(size) if size is not None else np.dtype(str(dtype).rsplit(".", 1)[-1]).itemsize


def nbytes_of(value: Any) -> int:
    """Bytes an array of any backend holds (a non-array value: numpy's size of it)."""
    nbytes = getattr(value, "nbytes", None)
    if nbytes is not None:
        return int(nbytes)
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return itemsize_of(value) * math.prod(value.shape)
    return int(np.asarray(value).nbytes)


def to_numpy(value: Any) -> Any:
    """``value`` as numpy (what a client fetch gets); non-arrays pass through."""
    return transfer(value, None, NUMPY)

