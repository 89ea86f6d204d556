"""One partial run: a step started by ``Session.partial_run_setup`` and fed and fetched piecewise.

Source: TF's ``DirectSession::PRunSetup``, ``PRun``, ``CheckFetch``, ``SendPRunInputs`` and
``RecvPRunOutputs`` (``core/common_runtime/direct_session.cc``). The plan uses the
client-terminated endpoints (``_recv_<op>_<i>``/``_send_<op>_<i>``, see
:mod:`dfcore.runtime.subgraph`): setup starts every executor; each ``partial_run`` sends
its feeds into the step's rendezvous and receives its fetches from it. Each feed may be
given once and each fetch taken once over the calls; once all are, the step is waited
for and — dfcore's rule — its variable writes are committed together (or dropped if any
op failed). An error while feeding or fetching aborts the step and ends the partial run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import errors, tf_logging
from .session_resources import SessionResources
from .step import Step
from .variable_store import StepTransaction

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from .step_plan import StepPlan


def partial_run_handle(feeds: Sequence[Tensor], fetches: Sequence[Tensor], targets: Sequence[Operation],
                       number: int) -> str:
    """TF's handle of the ``number``-th partial run: ``<feeds>-><fetches>/<targets>/1/;<number>``, names
    sorted and joined by commas (``DirectSession::GetOrCreateExecutors``)."""
    names = [",".join(sorted(x.name for x in group)) for group in (feeds, fetches, targets)]
    return f"{names[0]}->{names[1]}/{names[2]}/1/;{number}"


class PartialRun:
    """The state of one partial run (TF's ``RunState`` with its pending feeds and fetches).

    Args:
        plan: a :class:`~dfcore.runtime.step_plan.StepPlan` built with ``partial_run=True``.
        feeds, fetches: the tensors named at setup (aligned with the plan's feeds and fetches).
        txn, resources, step_id: the step's variable transaction, the session's resources, its id.
        pool: the session's thread pool (None: every partition on the calling thread).
        timeout_s: how long a fetch, and the final wait for the step, may take.
    """

    def __init__(self, plan: StepPlan, feeds: Sequence[Tensor], fetches: Sequence[Tensor], txn: StepTransaction,
                 resources: SessionResources, step_id: int, pool: Any, timeout_s: float) -> None:
        self._plan = plan
        self._feed_keys = dict(zip(feeds, plan.feed_keys))
        self._fetch_keys = {t: key for t, (_, key) in zip(fetches, plan.fetch_sources)}
        self._fed = dict.fromkeys(feeds, False)
        self._fetched = dict.fromkeys(fetches, False)
        self._txn, self._resources, self._step_id = txn, resources, step_id
        self._timeout_s = timeout_s
        self.ended = False
        step = Step(plan, (), txn, resources, step_id)
        self._rendezvous, self._barrier = step.rendezvous, step.barrier
        step.start(pool)

    def check(self, feeds: Sequence[Tensor], fetches: Sequence[Tensor]) -> None:
        """Raise ``InvalidArgumentError`` (TF's wording) unless ``feeds`` and ``fetches`` were named at setup,
        are still pending, and every fetch can be computed from the feeds given so far plus ``feeds``."""
        for tensor in feeds:
            if tensor not in self._fed:
                raise errors.InvalidArgumentError(
                    None, None, f"The feed {tensor.name} was not specified in partial_run_setup.")
            if self._fed[tensor]:
                raise errors.InvalidArgumentError(None, None, f"The feed {tensor.name} has already been fed.")
        for tensor in fetches:
            if tensor not in self._fetched:
                raise errors.InvalidArgumentError(
                    None, None, f"The fetch {tensor.name} was not specified in partial_run_setup.")
            if self._fetched[tensor]:
                raise errors.InvalidArgumentError(None, None, f"The fetch {tensor.name} has already been fetched.")
        pending = {t for t, fed in self._fed.items() if not fed} - set(feeds)
        stack, seen = [t.op for t in fetches], set()
        while stack:
            op = stack.pop()
            for tensor in op.inputs:
                if tensor in pending:
                    raise errors.InvalidArgumentError(
                        None, None, f"Fetch {tensor.name} can't be computed from the feeds that have been fed so far.")
            for producer in [t.op for t in op.inputs] + list(op.control_inputs):
                if producer not in seen:
                    seen.add(producer)
                    stack.append(producer)

    def run(self, feeds: Sequence[Tensor], values: Sequence[Any], fetches: Sequence[Tensor]) -> list[Any]:
        """Send ``values`` for ``feeds``, then receive ``fetches``; returns their values (after :meth:`check`).

        Raises:
            OpError: the step's first error (the step is aborted; the partial run is over).
        """
        try:
            for tensor, value in zip(feeds, values):
                key = self._feed_keys[tensor]
                if key is not None:
                    self._rendezvous.send(key, value)
            results = [self._rendezvous.recv(self._fetch_keys[t], self._timeout_s) for t in fetches]
        except errors.OpError as error:
            first = self._rendezvous.abort_status or error
            self._barrier.abort(first)
            self._end(first)
            raise first from None
        self._fed.update(dict.fromkeys(feeds, True))
        self._fetched.update(dict.fromkeys(fetches, True))
        if self.finished:
            self._end(None)
        return results

    @property
    def finished(self) -> bool:
        """True once every feed was given and every fetch taken (TF's ``PendingDone``)."""
        return all(self._fed.values()) and all(self._fetched.values())

    def cancel(self, error: errors.OpError) -> None:
        """End the partial run early with ``error`` (an OpError): abort the step and drop its writes."""
        self._barrier.abort(error)
        self._end(error)

    def _end(self, error):
        """Wait for every executor; commit the step's writes only if neither ``error`` nor any op failed."""
        self.ended = True
        try:
            self._barrier.wait(self._timeout_s)
        except errors.OpError as step_error:
            if error is None:
                tf_logging.warning(f"An error unrelated to this prun has been detected. {step_error}")
                error = step_error
        if error is None:
            self._txn.commit()
        else:
            self._txn.abort()
        self._resources.end_step(self._step_id, committed=error is None)
