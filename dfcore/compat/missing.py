"""One AttributeError for a TF 1.x name that dfcore lacks, shared by every public namespace module.

Each of dfcore's TF namespaces (``dfcore``, ``dfcore.nn``, ``dfcore.train`` …) defines a module
``__getattr__`` (PEP 562) that raises :func:`missing_attribute`'s error. Python calls it only after
the normal lookup failed, so real attributes are never shadowed and ``hasattr`` stays False. A name
in TensorFlow 1.x's API (``tf_v1_symbols.txt``, from TF's golden API files at v1.15.0) gets a
message saying dfcore does not implement it yet; any other name gets Python's plain message.
"""

from .symbols import tf_v1_symbols


def missing_attribute(module_name: str, namespace: str, name: str) -> AttributeError:
    """The error for ``getattr(module, name)`` that failed; ``namespace`` is the module's TF name.

    Example: ``missing_attribute("dfcore.train", "tf.train", "Foo")``.
    """
    message = f"module {module_name!r} has no attribute {name!r}"
    qualified = f"{namespace}.{name}"
    if not name.startswith("__") and qualified in tf_v1_symbols():
        message += (f": {qualified} is part of TensorFlow 1.x's API but dfcore does not implement it yet"
                    " (see python -m dfcore.compat_report)")
    return AttributeError(message, name=name)
