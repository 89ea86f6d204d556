"""Checks of counts, ranks and rates given to the distributed APIs, and the error they raise.

Source: TF's argument checks (``TypeError`` for the wrong type, ``ValueError`` naming the
argument and its allowed range, raised before any work). Every entry point — the
all-reduce schedules, the benchmark, parameter-server training and their command lines —
checks its numbers with these functions, so a rule is written once; a command line turns
an :class:`ArgumentRangeError` into an argparse error naming its flag (``error.argument``
is the API's name of the argument).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any


class ArgumentRangeError(ValueError):
    """A ``ValueError`` for an argument outside its allowed range; ``argument`` names it."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


def check_count(name: str, value: Any, low: int, high: int | None = None, why: str = "",
                argument: str | None = None) -> None:
    """Raise unless ``value`` is an integer in ``[low, high]`` (``high`` None: no upper bound).

    Args:
        name: what the message calls the value (the argument's name, or e.g. ``"straggler worker"``).
        why: optional words after the range, e.g. what the bound comes from.
        argument: ``ArgumentRangeError.argument`` (default ``name``).
    Raises:
        TypeError: not an integer (a bool is not a count).
        ArgumentRangeError: out of range; the message names ``name`` and the range.
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    count = int(value)
    if count < low or (high is not None and count > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ArgumentRangeError(argument or name, f"{name} must be an integer {allowed}"
                                                   f"{' ' + why if why else ''}, got {value!r}")


def check_rank(name: str, value: Any, num_ranks: int) -> None:
    """Raise (as :func:`check_count`) unless ``value`` is one of ``num_ranks`` ranks, ``[0, num_ranks − 1]``."""
    check_count(name, value, 0, num_ranks - 1, f"(one of {num_ranks} ranks)")


def check_positive(name: str, value: Any, why: str = "", argument: str | None = None) -> None:
    """Raise unless ``value`` is a finite real number > 0 (a rate, a time, a speed factor);
    ``name``, ``why`` and ``argument`` as :func:`check_count`.

    Raises:
        TypeError: not a real number. ArgumentRangeError: NaN, infinite or ≤ 0.
    """
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not (math.isfinite(value) and float(value) > 0):
        raise ArgumentRangeError(argument or name, f"{name} must be a finite number > 0"
                                                   f"{' ' + why if why else ''}, got {value!r}")


def check_choice(name: str, value: Any, choices: Collection[Any]) -> None:
    """Raise :class:`ArgumentRangeError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ArgumentRangeError(name, f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
