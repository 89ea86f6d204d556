"""Whole TF 1.x-style training programs, each run as a process on dfcore and on TensorFlow (issue 32's
whole-program rows): a deep-MNIST-style CNN (``mnist_deep_program.py``: two 5×5 conv layers, dense 1024,
dropout, Adam, fed batches of 50) and a two-tower CNN with ``tf.layers`` and a device function
(``two_tower_program.py``: towers on two CPU devices, gradients averaged on ``/cpu:0``).

Printed per program (see ``_programs.py``): wall and CPU seconds after the imports and of the whole process,
medians of interleaved runs, and the paired ratios dfcore / TF (target, issue 32: <= 1.5). The step counts
keep each program's rows near a minute on two cores; pass ``--steps N`` to run longer. Never a pass/fail on
time.
"""

import sys

from _programs import compare

TARGET, ROUNDS = 1.5, 2
PROGRAMS = (("mnist_deep_program.py", 60, "deep-MNIST-style CNN (conv 5x5x32, conv 5x5x64, dense 1024, Adam)"),
            ("two_tower_program.py", 40, "two-tower CNN (tf.layers, device function, gradients averaged)"))


def main(steps=None):
    """Time each program on both engines and print the rows."""
    for program, default_steps, title in PROGRAMS:
        compare(program, steps or default_steps, ROUNDS, title, TARGET)


if __name__ == "__main__":
    main(int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else None)
