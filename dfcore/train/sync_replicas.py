"""``tf.train.SyncReplicasOptimizer``: synchronous data-parallel training through the ps.

Source: ``tensorflow/python/training/sync_replicas_optimizer.py``. Each worker's train op

1. applies its gradients to one ``ConditionalAccumulator`` per variable (shared name
   ``<var>/grad_accum``, on the variable's ps task) tagged with its ``sync_rep_local_step``;
   an accumulator silently drops (and counts) a gradient whose local step is below its own
   global step: a *stale* gradient;
2. then dequeues a token from ``sync_token_q`` (the barrier) and takes it as its new local step.

The chief also runs the *sync op* (its queue runner): take ``replicas_to_aggregate``
averaged gradients from every accumulator (each take increments that accumulator's
step), apply them with the wrapped optimizer (incrementing ``global_step``), then
enqueue ``max(total_num_replicas, replicas_to_aggregate)`` tokens holding the new
global step. With ``total_num_replicas > replicas_to_aggregate`` the extra workers are
*backup workers*: the slowest gradients of each step come late and are dropped.
Gradients are averaged, not summed: scale the learning rate accordingly.

``make_session_run_hook(is_chief)`` gives the hook a ``MonitoredTrainingSession`` needs: after the
session is created it runs the local init op (the chief's also sets the accumulators' global step),
fills the token queue and starts the chief's queue runner, as TF's ``_SyncReplicasOptimizerHook``.

dfcore difference: ``ready_for_local_init_op`` is a bool vector (True where a global
variable is still uninitialized) instead of TF's vector of their names.
"""

import logging

from ..framework.graph import GraphKeys, graph_of
from ..ops import array_ops, control_flow_ops, data_flow_ops, state_ops, variables
from ..ops.array_ops_join import stack
from ..ops.math_ops_binary import logical_not
from .optimizer import Optimizer
from .queue_runner import QueueRunner
from .session_run_hook import SessionRunHook


class SyncReplicasOptimizer(Optimizer):
    """Aggregate gradients of several replicas before each update (TF1 semantics, see module doc).

    Args:
        opt: the optimizer that applies the averaged gradients.
        replicas_to_aggregate: gradients averaged per variable update.
        total_num_replicas: workers taking part (default ``replicas_to_aggregate``).
        variable_averages: an ``ExponentialMovingAverage`` applied after each update.
        variables_to_average: the variables it averages.
        use_locking, name: as for every optimizer.
    """

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        logging.getLogger(__name__).info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
                                         replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._init_tokens_ops = {}  # num_tokens -> op: asking twice (a hook and the program) builds one op
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list = []
        self._local_step = None
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's ``compute_gradients``."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Build the worker's train op and the chief's sync op (see the module doc).

        Returns:
            The worker's train op: apply to the accumulators, then wait for a token.
        Raises:
            ValueError: no ``(gradient, variable)`` pairs, or no ``global_step`` (TF's wording).
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        graph = graph_of([v for _, v in grads_and_vars])
        with graph.as_default():
            return self._build(graph, grads_and_vars, global_step)

    def _build(self, graph, grads_and_vars, global_step):
        train_ops, aggregated, var_list = [], [], []
        local_anchor = control_flow_ops.no_op()
        with graph.colocate_with(local_anchor):  # keeps the local step off the ps
            self._local_step = variables.Variable(0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                                  dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = stack(
            [logical_not(state_ops.is_variable_initialized(v)) for v in variables.global_variables()])
        with graph.name_scope(self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with graph.device(var.device):
                    if grad is None:
                        aggregated.append(None)
                        continue
                    accumulator = data_flow_ops.ConditionalAccumulator(
                        grad.dtype, shape=var.shape, shared_name=var.name + "/grad_accum")
                    train_ops.append(accumulator.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accumulator.take_grad(self._replicas_to_aggregate))
                    self._accumulator_list.append((accumulator, var.device))
            with graph.device(global_step.device), graph.name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)), global_step)
                self._sync_token_queue = data_flow_ops.FIFOQueue(
                    -1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q", shared_name="sync_token_q")
                with graph.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with graph.control_dependencies([update_op]):
                    # the new global step: read after the update, inside its control dependency
                    tokens = array_ops.fill([self._tokens_per_step], global_step.read_value())
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with graph.control_dependencies([sync_op]), graph.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._sync_op = sync_op
                self._chief_queue_runner = QueueRunner(self._sync_token_queue, [sync_op])
            for accumulator, device in self._accumulator_list:
                with graph.device(device):
                    chief_init_ops.append(accumulator.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
        self._worker_push_ops = train_ops
        self._gradients_applied = True
        return train_op

    @property
    def sync_op(self):
        """The chief's op: take the averaged gradients, apply them, enqueue the tokens (dfcore)."""
        self._check_applied("sync_op")
        return self._sync_op

    @property
    def worker_push_ops(self):
        """The worker's accumulator ``apply_grad`` ops, without the token wait (dfcore)."""
        self._check_applied("worker_push_ops")
        return list(self._worker_push_ops)

    @property
    def accumulators(self):
        """``(ConditionalAccumulator, device)`` per variable with a gradient (dfcore)."""
        return list(self._accumulator_list)

    @property
    def local_step(self):
        """The worker's ``sync_rep_local_step`` variable (dfcore)."""
        return self._local_step

    @property
    def sync_token_queue(self):
        return self._sync_token_queue

    def get_chief_queue_runner(self):
        """The chief's QueueRunner running the sync op.

        Raises:
            ValueError: called before ``apply_gradients`` (TF's wording).
        """
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """The op filling the token queue at the start (``-1``: ``replicas_to_aggregate`` tokens).

        Raises:
            ValueError: called before ``apply_gradients``, or fewer tokens than
                ``replicas_to_aggregate - total_num_replicas`` (TF's wording).
        """
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs {tokens_needed} "
                             "(needed)")
        if num_tokens in self._init_tokens_ops:
            return self._init_tokens_ops[num_tokens]
        self._init_tokens_ops[num_tokens] = self._make_init_tokens_op(num_tokens)
        return self._init_tokens_ops[num_tokens]

    def _make_init_tokens_op(self, num_tokens):
        graph = self._global_step.graph
        with graph.as_default():
            if num_tokens > 0:
                with graph.device(self._global_step.device), graph.name_scope(""):
                    tokens = array_ops.fill([num_tokens], self._global_step)
                    return self._sync_token_queue.enqueue_many((tokens,))
            return control_flow_ops.no_op(name="no_init_tokens")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """A :class:`SessionRunHook` that initializes this optimizer's sync state for a monitored session
        (chief: ``chief_init_op``, the init tokens and the chief queue runner; others: ``local_step_init_op``)."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def _check_applied(self, what):
        if not self._gradients_applied:
            raise ValueError(f"{what} is available after apply_gradients().")


class _SyncReplicasOptimizerHook(SessionRunHook):
    """TF's ``_SyncReplicasOptimizerHook`` (``sync_replicas_optimizer.py``)."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer, self._is_chief, self._num_tokens = sync_optimizer, is_chief, num_tokens

    def begin(self):
        optimizer = self._sync_optimizer
        if not optimizer._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        self._ready_for_local_init_op = optimizer.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = optimizer.chief_init_op
            self._q_runner = optimizer.get_chief_queue_runner()
            self._init_tokens_op = optimizer.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = optimizer.local_step_init_op
            self._q_runner, self._init_tokens_op = None, None

    def after_create_session(self, session, coord):
        uninitialized = session.run(self._ready_for_local_init_op)
        if uninitialized.any():
            raise RuntimeError("Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                               f"Init op: {self._local_init_op.name}, error: {int(uninitialized.sum())} global "
                               "variables are not initialized")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
