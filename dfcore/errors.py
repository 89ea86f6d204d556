"""Typed runtime errors, with TensorFlow's class names, codes and wording.

Source: ``tensorflow/python/framework/errors_impl.py`` and ``error_codes.proto``.
Every error raised while a step runs is an :class:`OpError` carrying the node
that failed (``node_def``, ``op``) so a user can find it in the graph. File
system failures become the class TF's ``ErrnoToCode`` picks for their errno
(:func:`error_from_os_error`).
"""

import errno

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15


class OpError(Exception):
    """An error raised while running or building an op.

    Args:
        node_def: the failing node's ``NodeDef`` message, or None.
        op: the failing :class:`~dfcore.framework.graph.Operation`, or None.
        message: the human-readable message (TF's wording where TF has one).
        error_code: one of the integer codes above.
    """

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message

    def __reduce__(self):
        return (type(self), (self._node_def, None, self._message))


def _make(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc})


CancelledError = _make("CancelledError", CANCELLED, "The step was cancelled.")
UnknownError = _make("UnknownError", UNKNOWN, "An error of unknown kind.")
InvalidArgumentError = _make(
    "InvalidArgumentError", INVALID_ARGUMENT, "An op received an invalid argument (shape, dtype, value)."
)
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, "A wait ran past its deadline.")
NotFoundError = _make("NotFoundError", NOT_FOUND, "A file, device or resource was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, "Permission denied.")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED, "Out of memory or quota.")
FailedPreconditionError = _make(
    "FailedPreconditionError", FAILED_PRECONDITION, "The system is not in a state to run the op (e.g. an uninitialized "
                                                    "variable)."
)
AbortedError = _make("AbortedError", ABORTED, "The step was aborted, usually because another op failed.")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, "An iterator or queue is exhausted or closed.")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, "The operation is not implemented.")
InternalError = _make("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, "A task or service is unavailable.")
DataLossError = _make(
    "DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption, e.g. a truncated or corrupt checkpoint file."
)

_CODE_TO_CLASS = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
}

# errno names by the code TF gives them (``ErrnoToCode`` in ``tensorflow/core/platform/errors.cc``).
_ERRNO_NAMES_BY_CODE = {
    INVALID_ARGUMENT: ("EINVAL", "ENAMETOOLONG", "E2BIG", "EDESTADDRREQ", "EDOM", "EFAULT", "EILSEQ", "ENOPROTOOPT",
                       "ENOTSOCK", "ENOTTY", "EPROTOTYPE", "ESPIPE"),
    DEADLINE_EXCEEDED: ("ETIMEDOUT",),
    NOT_FOUND: ("ENODEV", "ENOENT", "ENOMEDIUM", "ENXIO", "ESRCH"),
    ALREADY_EXISTS: ("EEXIST", "EADDRNOTAVAIL", "EALREADY", "ENOTUNIQ"),
    PERMISSION_DENIED: ("EPERM", "EACCES", "ENOKEY", "EROFS"),
    FAILED_PRECONDITION: ("ENOTEMPTY", "EISDIR", "ENOTDIR", "EADDRINUSE", "EBADF", "EBADFD", "EBUSY", "ECHILD",
                          "EISCONN", "EISNAM", "ENOTBLK", "ENOTCONN", "EPIPE", "ESHUTDOWN", "ETXTBSY", "EUNATCH"),
    RESOURCE_EXHAUSTED: ("ENOSPC", "EDQUOT", "EMFILE", "EMLINK", "ENFILE", "ENOBUFS", "ENOMEM", "EUSERS"),
    OUT_OF_RANGE: ("ECHRNG", "EFBIG", "EOVERFLOW", "ERANGE"),
    UNIMPLEMENTED: ("ENOPKG", "ENOSYS", "ENOTSUP", "EAFNOSUPPORT", "EPFNOSUPPORT", "EPROTONOSUPPORT",
                    "ESOCKTNOSUPPORT", "EXDEV"),
    UNAVAILABLE: ("EAGAIN", "ECOMM", "ECONNREFUSED", "ECONNABORTED", "ECONNRESET", "EINTR", "EHOSTDOWN",
                  "EHOSTUNREACH", "ENETDOWN", "ENETRESET", "ENETUNREACH", "ENOLCK", "ENOLINK", "ENONET"),
    ABORTED: ("EDEADLK", "ESTALE"),
    CANCELLED: ("ECANCELED",),
}
_ERRNO_TO_CODE = {getattr(errno, name): code for code, names in _ERRNO_NAMES_BY_CODE.items()
                  for name in names if hasattr(errno, name)}


def exception_type_from_error_code(error_code):
    """The OpError subclass for an integer error code (TF's function of the same name)."""
    return _CODE_TO_CLASS[error_code]


def error_code_from_exception_type(cls):
    """The integer error code of an OpError subclass (TF's function of the same name; KeyError for others)."""
    return {c: code for code, c in _CODE_TO_CLASS.items()}[cls]


def error_from_os_error(error: OSError, context: str, advice: str = "") -> OpError:
    """The OpError TF raises for a failed file operation: class by errno as TF's ``ErrnoToCode``
    (``ENOSPC`` -> ResourceExhaustedError, ``EACCES``/``EROFS`` -> PermissionDeniedError, ``ENOENT`` ->
    NotFoundError, unknown -> UnknownError), message ``<context>; <strerror>`` as TF's ``IOError``, then ``advice``.
    """
    code = _ERRNO_TO_CODE.get(error.errno, UNKNOWN)
    message = f"{context}; {error.strerror or error}" + (f". {advice}" if advice else "")
    return _CODE_TO_CLASS[code](None, None, message)


def with_node(error, op):
    """Return ``error`` re-raised as the same class with TF's node suffix ``[[node <name>]]``."""
    message = f"{error.message}\n\t [[node {op.name} (defined as {op.type})]]"
    return type(error)(op.node_def, op, message)


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.errors", name)
