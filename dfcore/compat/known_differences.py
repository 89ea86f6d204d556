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
               "a server listens over gRPC only with DFCORE_SERVERS=grpc or TF_CONFIG set; otherwise tasks of "
               "other processes are unavailable (TF always serves its address)"),
    Difference(("tf.train.get_or_create_global_step", "tf.train.get_global_step", "tf.train.create_global_step",
                "tf.train.global_step", "tf.train.MonitoredTrainingSession"),
               "fetching a variable in the run that updates it (`_, step = sess.run([train_op, global_step])`) "
               "gives its value before the update; TF 1.x's ref variables give the value after"),
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
