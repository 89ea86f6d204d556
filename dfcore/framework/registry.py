"""Op registries keyed by TF op type (``"MatMul"``): shape functions, kernels,
gradients, cost estimates and op properties.

Source: TF's ``REGISTER_OP`` / ``REGISTER_KERNEL_BUILDER`` / ``ops.RegisterGradient``.
Nothing here branches on op types: behaviour is looked up by key.

Contracts:
    shape function ``fn(op) -> [(DType, TensorShape), ...]``, one pair per output,
    run when the op is built; it raises ``InvalidArgumentError`` (TF's wording)
    on incompatible inputs.

    kernel factory ``fn(op) -> compute`` (numpy-only, :func:`RegisterKernel`) or ``fn(op, backend) -> compute``
    (:func:`RegisterArrayKernel`: written against ``backend.xp``, the array API, so it runs on every backend of
    :mod:`dfcore.backends`); ``compute(*input_values)`` returns the
    output value (one output) or a tuple (several). A kernel registered with
    ``needs_context=True`` gets the step context first: ``compute(ctx, *inputs)``.
    An *asynchronous* kernel (``is_async=True``, e.g. ``_Recv``) is called as
    ``compute(ctx, done, *inputs)`` and calls ``done(error, value)`` later, from any thread.

    gradient ``fn(op, *output_grads) -> [grad or None per input]``.

    control-flow kind (``register_control_flow``): how the executor moves an op's outputs
    between frames and iterations (``"switch"``, ``"merge"``, ``"enter"``, ``"exit"``,
    ``"next_iteration"``, ``"loop_cond"``), or ``"control_trigger"`` (never dead); a kernel returns :data:`DEAD`
    for an output it does not take (``Switch``'s untaken branch).

    cost function ``fn(input_shapes, output_shapes, attrs) -> (flops, elements_accessed)``:
    shapes are lists of int tuples (one per input / output, as run), ``attrs`` the op's
    attr dict; ``elements_accessed`` counts elements read plus written (the cost model
    turns them into bytes). See :mod:`dfcore.ops.op_costs` for the conventions.
"""

from collections.abc import Callable
from typing import Any

from .. import backends, errors

# All keyed by the TF op type ("MatMul").
_SHAPES: dict[str, Callable[..., Any]] = {}
_KERNELS: dict[str, "KernelDef"] = {}
_OUT_KERNELS: dict[str, "KernelDef"] = {}
_GRADIENTS: dict[str, Callable[..., Any] | None] = {}
_COSTS: dict[str, Callable[..., Any]] = {}
_STATEFUL: set[str] = set()
_NOT_DIFFERENTIABLE: set[str] = set()
_REF_INPUTS: dict[str, frozenset[int]] = {}
_CONTROL_FLOW: dict[str, str] = {}
_RUNS_DEAD: set[str] = set()
_EMPTY: frozenset[int] = frozenset()
CONTROL_FLOW_KINDS = ("switch", "merge", "enter", "exit", "next_iteration", "loop_cond", "control_trigger")


class _Dead:
    """The value of a dead tensor (TF's executor ``is_dead``): an untaken branch."""

    __slots__ = ()

    def __repr__(self):
        return "DEAD"

    def __reduce__(self):  # unpickles as the same singleton (a dead tensor crossing processes stays dead)
        return "DEAD"


DEAD = _Dead()


class KernelDef:
    """A registered kernel factory and how the executor calls what it builds."""

    __slots__ = ("factory", "needs_context", "is_async", "portable")

    def __init__(self, factory, needs_context, is_async=False, portable=False):
        self.factory = factory
        self.needs_context = needs_context
        self.is_async = is_async
        self.portable = portable  # an array kernel (any backend) rather than a numpy-only one

    def build(self, op: Any, backend: "str | backends.Backend" = backends.NUMPY) -> Callable[..., Any]:
        """The ``compute`` of this kernel for ``op`` on ``backend`` (a numpy-only kernel ignores it)."""
        return self.factory(op, backends.get(backend)) if self.portable else self.factory(op)


def RegisterShape(op_type):
    """Decorator registering the shape function of ``op_type``."""

    def _register(fn):
        _check_new(_SHAPES, op_type, "shape function")
        _SHAPES[op_type] = fn
        return fn

    return _register


def RegisterKernel(op_type, needs_context=False, is_async=False):
    """Decorator registering the kernel factory of ``op_type`` (numpy backend)."""

    def _register(fn):
        _check_new(_KERNELS, op_type, "kernel")
        _KERNELS[op_type] = KernelDef(fn, needs_context or is_async, is_async)
        return fn

    return _register


def RegisterArrayKernel(op_type, needs_context=False, is_async=False):
    """Decorator registering the kernel factory ``fn(op, backend) -> compute`` of ``op_type`` for every array
    backend: the kernel calls ``backend.xp`` (the array API standard) and the backend's few extras only, so
    the numpy kernel and the GPU kernel are one code path."""

    def _register(fn):
        _check_new(_KERNELS, op_type, "kernel")
        _KERNELS[op_type] = KernelDef(fn, needs_context or is_async, is_async, portable=True)
        return fn

    return _register


def RegisterOutKernel(op_type, needs_context=False):
    """Decorator registering a kernel of ``op_type`` that writes its outputs into buffers of the device's
    allocator (:class:`dfcore.runtime.allocator.Allocator`): the factory's function is called as
    ``compute(allocator, *inputs)`` (``compute(ctx, allocator, *inputs)`` when ``needs_context``) and must
    give the registered kernel's results bit for bit. The executor uses it when it recycles buffers."""

    def _register(fn):
        _check_new(_OUT_KERNELS, op_type, "out kernel")
        _OUT_KERNELS[op_type] = KernelDef(fn, needs_context)
        return fn

    return _register


class RegisterGradient:
    """Decorator registering the gradient function of an op type (TF's class of this name)."""

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        _check_new(_GRADIENTS, self._op_type, "gradient")
        _GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type):
    """Declare that ``op_type`` has no gradient; ``gradients`` gives None through it."""
    _NOT_DIFFERENTIABLE.add(op_type)


NoGradient = NotDifferentiable


def RegisterCost(op_type):
    """Decorator registering ``fn(input_shapes, output_shapes, attrs) -> (flops, elements_accessed)``
    for the cost model (contract in the module docstring)."""

    def _register(fn):
        _check_new(_COSTS, op_type, "cost function")
        _COSTS[op_type] = fn
        return fn

    return _register


def mark_stateful(*op_types):
    """Ops that read or write state (variables, queues, random generators)."""
    _STATEFUL.update(op_types)


def register_ref_inputs(op_type, *indices):
    """Inputs of ``op_type`` that take a variable reference itself (``Assign``'s input 0);
    every other ref-typed input is read (dereferenced) before the kernel runs."""
    _REF_INPUTS[op_type] = frozenset(indices)


def ref_inputs(op_type):
    return _REF_INPUTS.get(op_type, _EMPTY)


def register_control_flow(op_type, kind):
    """Declare ``op_type`` a control-flow primitive of ``kind`` (one of :data:`CONTROL_FLOW_KINDS`)."""
    if kind not in CONTROL_FLOW_KINDS:
        raise ValueError(f"Unknown control-flow kind {kind!r}")
    _check_new(_CONTROL_FLOW, op_type, "control-flow kind")
    _CONTROL_FLOW[op_type] = kind


def mark_runs_when_dead(*op_types):
    """Ops whose kernel runs even with a dead input, to pass the deadness on (``_Send``: TF sends ``is_dead``)."""
    _RUNS_DEAD.update(op_types)


def runs_when_dead(op_type):
    return op_type in _RUNS_DEAD


def control_flow_kind(op_type):
    """The control-flow kind of ``op_type``, None for every other op."""
    return _CONTROL_FLOW.get(op_type)


def is_stateful(op_type):
    return op_type in _STATEFUL


def shape_function(op_type):
    try:
        return _SHAPES[op_type]
    except KeyError:
        raise errors.NotFoundError(None, None, f"Op type not registered '{op_type}'") from None


def kernel(op_type, backend=backends.NUMPY):
    """The kernel of ``op_type`` on the array backend named ``backend``, or None: a numpy-only kernel exists
    on the numpy backend only."""
    found = _KERNELS.get(op_type)
    if found is None or found.portable or backend == backends.NUMPY:
        return found
    return None


def lacks_kernel_on(op_type, backend):
    """True when ``op_type`` has a kernel, numpy-only, and ``backend`` (a name) is not numpy: a device of that
    backend has no kernel for it (the placer's rule for a kernel a device type lacks)."""
    found = _KERNELS.get(op_type)
    return found is not None and not found.portable and backend != backends.NUMPY


def out_kernel(op_type):
    """The :func:`RegisterOutKernel` kernel of ``op_type``, or None (the op allocates its outputs itself)."""
    return _OUT_KERNELS.get(op_type)


def gradient_function(op_type):
    """The registered gradient, None if declared not differentiable.

    Raises:
        LookupError: if the op type has no gradient registered (TF's message).
    """
    if op_type in _NOT_DIFFERENTIABLE:
        return None
    try:
        return _GRADIENTS[op_type]
    except KeyError:
        raise LookupError(f"No gradient defined for operation of type '{op_type}'") from None


def cost_function(op_type):
    return _COSTS.get(op_type)


def registered_op_types():
    return sorted(_SHAPES)


def _check_new(table, op_type, what):
    if op_type in table:
        raise KeyError(f"Registering two {what}s with name '{op_type}'!")
