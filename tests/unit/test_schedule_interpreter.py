"""The one all-reduce schedule interpreter under bare message layers: every algorithm's plan gives numpy's
reduction, and the batched plans of the ranks run apart (as MPI's, a thread and a layer per rank) give the
very bits of the one-message-at-a-time plan (the in-process layers')."""

import queue
import threading

import numpy as np
import pytest

from dfcore.distribute import schedule_interpreter as si, schedules

_UFUNC = {"sum": np.add, "mean": np.add, "max": np.maximum}


class _Layer(si.MessageLayer):
    """Buffers of the held ranks; messages through ``mailbox`` (message index → queue), copied when sent."""

    def __init__(self, inputs, outputs, reduction, num_ranks, mailbox):
        self.inputs, self.outputs, self.reduction = inputs, outputs, reduction
        self.num_ranks, self.mailbox = num_ranks, mailbox
        self.sent = []

    def transfer(self, move, source):
        self.sent.append(move.index)
        return source.copy()

    def exchange(self, batch, sources):
        for move, source in zip(batch.sends, sources):  # every send of the batch leaves before any receive
            self.sent.append(move.index)
            self.mailbox[move.index].put(source.copy())
        return [self.mailbox[move.index].get(timeout=10) for move in batch.recvs]

    def reduce(self, move, own, message):
        _UFUNC[self.reduction](own, message, out=self.outputs[move.dst][move.lo:move.hi])

    def copy(self, move, message):
        self.outputs[move.dst][move.lo:move.hi] = message

    def divide(self, item, value):
        np.divide(value, value.dtype.type(self.num_ranks), out=self.outputs[item.rank][item.lo:item.hi])

    def fill(self, rank, lo, hi):
        self.outputs[rank][lo:hi] = self.inputs[rank][lo:hi]


def _one_at_a_time(schedule, values, reduction):
    outputs = [np.full_like(v, np.nan) for v in values]
    layer = _Layer(values, outputs, reduction, len(values), None)
    si.run(si.plan(schedule, reduction == "mean"), layer)
    return outputs, layer.sent


def _rank_by_rank(schedule, values, reduction):
    n = len(values)
    mailbox = {i: queue.Queue() for i in range(len(schedule.messages))}
    outputs = [np.full_like(v, np.nan) for v in values]
    layers = [_Layer({r: values[r]}, {r: outputs[r]}, reduction, n, mailbox) for r in range(n)]
    errors = []

    def rank(r):
        try:
            si.run(si.plan(schedule, reduction == "mean", (r,), batched=True), layers[r])
        except Exception as error:  # reported below: a rank that failed would leave the others waiting
            errors.append(error)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return outputs, sorted(i for layer in layers for i in layer.sent)


@pytest.mark.parametrize("algorithm", schedules.ALGORITHMS)
@pytest.mark.parametrize("reduction", schedules.REDUCTIONS)
def test_every_plan_reduces_as_numpy_and_batched_ranks_give_the_same_bits(algorithm, reduction):
    rng = np.random.default_rng(5)
    for num_ranks, size, subchunks in ((2, 9, 1), (3, 10, 2), (5, 23, 2), (4, 3, 1)):
        values = [rng.standard_normal(size).astype(np.float32) for _ in range(num_ranks)]
        schedule = schedules.build_schedule(algorithm, num_ranks, size, subchunks, "textbook", 0)
        together, sent = _one_at_a_time(schedule, values, reduction)
        apart, sent_apart = _rank_by_rank(schedule, values, reduction)
        assert sent == sent_apart == list(range(len(schedule.messages)))  # each message sent once
        reference = {"sum": np.sum, "mean": np.mean, "max": np.max}[reduction](np.stack(values).astype(np.float64), 0)
        for out, out_apart in zip(together, apart):
            np.testing.assert_array_equal(out, out_apart)
            np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-5)


def test_integer_valued_sums_are_exact_and_the_input_is_never_written():
    values = [np.arange(12, dtype=np.float64) * (r + 1) for r in range(4)]
    kept = [v.copy() for v in values]
    schedule = schedules.build_schedule("ring", 4, 12, 3, "nccl", 0)
    outputs, _ = _one_at_a_time(schedule, values, "sum")
    for out in outputs:
        np.testing.assert_array_equal(out, np.arange(12) * 10.0)
    for value, before in zip(values, kept):
        np.testing.assert_array_equal(value, before)


def test_a_plan_is_worked_out_once_and_names_what_a_rank_never_receives():
    schedule = schedules.build_schedule("reduce_to_one", 3, 6, 1, "textbook", 2)
    assert si.plan(schedule, False) is si.plan(schedule, False)
    # reduce_to_one then broadcast: every rank's output is written by some message, so nothing is left over
    assert si.plan(schedule, False).unwritten == ((0, ()), (1, ()), (2, ()))
    mine = si.plan(schedule, False, (1,), batched=True)
    assert all(isinstance(item, si.Batch) for item in mine.items)
    assert {m.src for item in mine.items for m in item.sends} == {1}
    assert {m.dst for item in mine.items for m in item.recvs} == {1}
    with pytest.raises(ValueError, match="unbatched plan holds every rank"):
        si.plan(schedule, False, (1,))
