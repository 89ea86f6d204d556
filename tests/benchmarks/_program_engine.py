"""The ``tf`` namespace of a whole-program benchmark: dfcore, or TensorFlow's ``compat.v1`` in graph mode.

The programs (``tfdata_program.py``, ``mnist_deep_program.py``, ``two_tower_program.py``) are written once
against TF 1.x's API and run under either engine by the name on their command line, each in its own process;
``bench_whole_programs.py`` and ``bench_input_pipeline.py`` time them (``_programs.py``).
"""

import os


def engine(name: str):
    """``dfcore`` for ``"dfcore"``; for ``"tensorflow"``, ``tensorflow.compat.v1`` with v2 behaviour off,
    the legacy Keras layers (``tf.layers``) and TF's C++ and Python logging quiet."""
    if name == "tensorflow":
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        tf.logging.set_verbosity(tf.logging.ERROR)
        return tf
    import dfcore as tf
    return tf
