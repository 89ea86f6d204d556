"""Classic TensorFlow 1.x programs, written as a TF 1.x user writes them but with ``import dfcore as tf``.

Each module is run (and its result checked against numpy or an accuracy bound) by
``tests/unit/test_tf1_programs.py``; ``python -m dfcore.compat_report --check`` must find every TF name
they use. ``input_data`` is the digits in the shape of TF's MNIST tutorial reader.
"""
