"""Parameter-server training of the digits MLP on an in-process cluster; prints ``test_accuracy=<value>``.

Run: ``python -m dfcore.examples.parameter_server --mode {sync,async,ssp,bounded_delay} --staleness S --ps 1 --workers 4
[--straggler 3:4.0] [--replicas 3] [--steps N] [--execution simulated|threads]``; as real processes:
``python -m dfcore.launch --ps 1 --workers 3 -m dfcore.examples.parameter_server --execution mpi --workers 3``.

Defaults: 4 workers, 1 ps, batch 32 per worker, SGD; ``sync``/``bounded_delay``: 300 updates at
learning rate 0.5 (test accuracy ≈ 0.97); ``async``/``ssp``: 1200 updates at 0.15. It prints the
test accuracy and loss, the simulated time (deterministic: the same every run), the updates
applied and dropped, each worker's waiting time and a text histogram of staleness.
See :func:`dfcore.distribute.parameter_server.train` and its ``TrainConfig``; their check is this command's
too: a value out of range (``--steps 0``, ``--straggler 9:2`` with 4 workers, ``--lr 0`` …)
is a usage error (exit status 2) naming the flag and the range.
"""

import argparse

from dfcore.distribute.arguments import ArgumentRangeError
from dfcore.distribute.parameter_server import train
from dfcore.distribute.ps_arguments import EXECUTIONS, MODES, PS_STRATEGIES, TrainConfig
from dfcore.distribute.staleness import summary_lines
from dfcore.mpi.report import report

#: The flag of each ``TrainConfig`` field this command line sets (for its error messages).
FLAGS = {"mode": "--mode", "staleness": "--staleness", "num_ps": "--ps", "num_workers": "--workers",
         "replicas_to_aggregate": "--replicas", "straggler": "--straggler", "steps": "--steps",
         "learning_rate": "--lr", "execution": "--execution", "ps_strategy": "--ps-strategy", "seed": "--seed",
         "checkpoint_dir": "--checkpoint-dir", "checkpoint_every": "--checkpoint-every", "w1_shards": "--w1-shards",
         "occasional_straggler": "--occasional-straggler"}


def parse_straggler(text):
    """``"3:4.0,1:2"`` → ``{3: 4.0, 1: 2.0}`` (worker: speed factor); the ranges are ``train``'s to check.

    Raises:
        argparse.ArgumentTypeError: not ``worker:factor`` pairs.
    """
    out = {}
    for part in filter(None, text.split(",")):
        worker, sep, factor = part.partition(":")
        try:
            out[int(worker)] = float(factor)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--straggler takes worker:factor pairs, got {part!r}") from None
        if not sep:
            raise argparse.ArgumentTypeError(f"--straggler takes worker:factor pairs, got {part!r}")
    return out


def parse_occasional(text):
    """``"0.1:4"`` → ``(0.1, 4.0)`` (probability, speed factor); the ranges are ``train``'s to check.

    Raises:
        argparse.ArgumentTypeError: not ``probability:factor``.
    """
    probability, sep, factor = text.partition(":")
    try:
        if sep:
            return float(probability), float(factor)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"--occasional-straggler takes probability:factor, got {text!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="sync")
    parser.add_argument("--staleness", type=int, default=0, help="bound s (ssp and bounded_delay only)")
    parser.add_argument("--ps", type=int, default=1, help="number of ps tasks")
    parser.add_argument("--workers", type=int, default=4, help="number of worker tasks")
    parser.add_argument("--replicas", type=int, default=None, help="sync: replicas_to_aggregate (backup workers)")
    parser.add_argument("--straggler", type=parse_straggler, default={}, help="worker:speed_factor[,...]")
    parser.add_argument("--occasional-straggler", type=parse_occasional, default=None,
                        help="probability:speed_factor: each worker step is that much slower with that probability")
    parser.add_argument("--steps", type=int, default=None, help="parameter updates (global steps)")
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--execution", choices=EXECUTIONS, default="simulated")
    parser.add_argument("--ps-strategy", choices=PS_STRATEGIES, default="round_robin")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--w1-shards", type=int, default=1,
                        help="split the first layer's weights into this many shards over the ps tasks")
    parser.add_argument("--checkpoint-dir", default=None, help="the chief saves checkpoints here")
    parser.add_argument("--checkpoint-every", type=int, default=0, help="updates between checkpoints")
    args = parser.parse_args(argv)
    try:  # train checks every argument before it starts anything: one rule for the API and this CLI
        record = train(TrainConfig(mode=args.mode, staleness=args.staleness, num_ps=args.ps,
                                   num_workers=args.workers, replicas_to_aggregate=args.replicas,
                                   straggler=args.straggler, steps=args.steps, execution=args.execution,
                                   seed=args.seed, learning_rate=args.lr, ps_strategy=args.ps_strategy,
                                   checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
                                   w1_shards=args.w1_shards, occasional_straggler=args.occasional_straggler))
    except ArgumentRangeError as error:
        parser.error(f"argument {FLAGS.get(error.argument, error.argument)}: {error}")
    if record is not None:  # with --execution mpi, only the chief (worker 0) has the record
        print("\n".join(summary_lines(record)), flush=True)
        report(record=record)  # for dfcore.mpi.run_job (a no-op otherwise)


if __name__ == "__main__":
    main()
