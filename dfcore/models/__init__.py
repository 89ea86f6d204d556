"""Models and data the library's drivers train and the lessons and examples share.

* :mod:`~dfcore.models.digits` — scikit-learn's digits, split and batched.
* :mod:`~dfcore.models.mlp` — the one-hidden-layer ReLU MLP, its tower loss and gradient averaging.

Layering: built on ``ops/`` (and ``train/``'s optimizers where needed); ``distribute/`` uses these,
and ``examples/`` import them, never the reverse.
"""
