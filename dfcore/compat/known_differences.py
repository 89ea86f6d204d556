"""Defaults and behaviours in which dfcore knowingly differs from TensorFlow 1.x, by the TF names that meet
them: the one list ``python -m dfcore.compat_report --check`` flags. Remove an entry when the difference
is fixed.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Difference:
    """A known difference: the TF names that meet it (a name or a namespace prefix ending in ``.``) and what
    a program sees."""

    names: tuple[str, ...]
    what: str


KNOWN_DIFFERENCES = (
    Difference(("tf.train.Server", "tf.distribute.Server"),
               "a server listens over gRPC on a loopback address (localhost, 127.0.0.1) only; one whose address "
               "names another host runs in this process and does not listen (TF binds 0.0.0.0 for any address)"),
    Difference(("tf.set_random_seed", "tf.random.set_random_seed"),
               "a seed gives other random numbers than TF's (dfcore draws from numpy's Philox streams): "
               "initial weights, shuffles and losses differ from TF's run by run, not in distribution"),
    Difference(("tf.string", "tf.as_string", "tf.string_join", "tf.strings."),
               "a string constant or feed fetches as Python str (`'Hello'`); TF fetches string tensors as bytes "
               "(`b'Hello'`)"),
)


def differences_for(names: list[str]) -> list[tuple[Difference, list[str]]]:
    """The known differences that ``names`` (TF names a program uses) meet, each with the names that meet it."""
    found = []
    for difference in KNOWN_DIFFERENCES:
        meeting = [name for name in names
                   if any(name == pattern or (pattern.endswith(".") and name.startswith(pattern))
                          for pattern in difference.names)]
        if meeting:
            found.append((difference, meeting))
    return found
