"""Input pipelines on the simulated clock: map threads, prefetch, the host→accelerator copy, training.

Source: dfcore, on :func:`dfcore.runtime.sim_clock.simulate` (deterministic, one task
at a time per resource: docs/architecture.md#the-simulated-clock); the stages behave as dfcore's (and TF's)
``ParallelMapDataset`` and ``PrefetchDataset``
(``core/kernels/data/parallel_map_dataset_op.cc``, ``prefetch_dataset_op.cc``).

The model, per map call ``k`` (``B`` calls per batch, ``P`` map threads, calls in input order):

* call ``k`` runs on thread ``k mod P`` for ``map_cost_s`` once it has been *submitted*: with
  ``P = 1`` when the batch asks for element ``k``; with ``P > 1`` when element ``k - P + 1`` is asked
  for (a parallel map keeps ``P`` calls in flight ahead of its consumer);
* the batch of step ``j`` is ready when its ``B`` elements are;
* with ``prefetch = K``: a producer thread asks for batch ``j`` once it has put batch ``j - 1``,
  and puts batch ``j`` once it is ready and batch ``j - K`` has been taken (a buffer of ``K``);
  without prefetch, batch ``j`` is asked for by ``IteratorGetNext`` itself;
* step ``j``'s ``IteratorGetNext`` starts when step ``j - 1``'s training ends (a client loop of
  ``Session.run`` calls) and ends when it has the batch; the batch is then copied over ``link``
  (``latency + bytes / bandwidth``) and trained on the accelerator for ``step_s``.

``feed_dict`` is the same model with one client thread preparing each batch (``P = 1``, no prefetch,
``stage="client"``; the host's wait is then a ``FeedDict`` node); queue runners are ``num_threads`` map
threads and a buffer of ``capacity / batch`` batches (``stage="QueueRunner"``; the wait is a
``QueueDequeueManyV2``). With prefetch ``K``, a map of ``m`` per batch, a copy of ``c`` and a step of ``s``
reach a period of ``max(m, c + s)`` (the copy and the step run one after the other on the step's side of the
buffer); without, ``m + c + s``.

Simulated time depends only on the program and the simulated hardware: a map's ``AUTOTUNE``
parallelism resolves to :data:`AUTOTUNE_MAP_THREADS` (8, the cores of the nominal simulated host), never
to the cores of the machine running the simulation (real execution still uses that machine's cores).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..runtime import cost_model, sim_clock
from ..runtime.cost_model import LinkProfile
from .pipeline_run import TRAIN_STEP, LaneRecorder, PipelineRun, lane_device, occupancy_series

HOST = "/job:localhost/replica:0/task:0/device:CPU:0"
#: map threads an ``AUTOTUNE`` map gets on the simulated clock (the nominal simulated host's cores)
AUTOTUNE_MAP_THREADS = 8
ACCELERATOR = "/job:localhost/replica:0/task:0/device:GPU:0"


@dataclasses.dataclass(frozen=True)
class PipelineSpec:
    """The stages of a simulated input pipeline and the training step it feeds.

    Attributes:
        map_cost_s: host CPU time of one map call (s).
        calls_per_batch: map calls per batch (the batch size when ``map`` comes before ``batch``).
        num_parallel_calls: map threads (1: the map runs on the thread that asks for elements).
        prefetch: batches the prefetch buffer holds (0: no prefetch).
        step_s: one training step on the accelerator (s).
        batch_bytes: bytes copied host → accelerator per batch.
        link: the copy's :class:`~dfcore.runtime.cost_model.LinkProfile` (PCIe 3.0 x16).
        stage: the map stage's lane name (``Map``, ``ParallelMap``, ``client`` for feed_dict, ``QueueRunner``).
        host, accelerator: device names; the same name means no copy.
        name: a title for the run.

    Raises:
        ValueError: a negative cost or size, or fewer than one call per batch or map thread.
    """

    map_cost_s: float
    calls_per_batch: int
    num_parallel_calls: int
    prefetch: int
    step_s: float
    batch_bytes: int = 0
    link: LinkProfile = cost_model.PCIE_3_X16
    stage: str = ""
    host: str = HOST
    accelerator: str = ACCELERATOR
    name: str = ""

    def __post_init__(self) -> None:
        if min(self.map_cost_s, self.step_s, self.prefetch, self.batch_bytes) < 0:
            raise ValueError(f"PipelineSpec needs costs and sizes >= 0, got {self}")
        if self.calls_per_batch < 1 or self.num_parallel_calls < 1:
            raise ValueError("PipelineSpec needs calls_per_batch >= 1 and num_parallel_calls >= 1, got "
                             f"{self.calls_per_batch} and {self.num_parallel_calls}")
        if not self.stage:
            object.__setattr__(self, "stage", "ParallelMap" if self.num_parallel_calls > 1 else "Map")
        if not self.name:
            object.__setattr__(self, "name", f"{self.stage} x{self.num_parallel_calls}, prefetch {self.prefetch}")


def spec_of(dataset: Any, step_s: float, batch_bytes: int = 0, **kwargs: Any) -> PipelineSpec:
    """The :class:`PipelineSpec` of a ``tf.data`` pipeline: its (first) ``map``'s simulated cost and
    threads, its ``batch`` size (map calls per batch when the map comes before the batch), its
    outermost ``prefetch`` buffer (AUTOTUNE: 2; an AUTOTUNE map: :data:`AUTOTUNE_MAP_THREADS` threads);
    ``kwargs`` go to :class:`PipelineSpec`.

    Raises:
        ValueError: the pipeline has no ``map`` or no ``batch``.
    """
    from .batching import BatchDataset
    from .dataset_ops import AUTOTUNE
    from .prefetch import AUTOTUNE_BUFFER, PrefetchDataset
    from .transformations import MapDataset

    chain, node = [], dataset
    while node is not None:
        chain.append(node)
        node = getattr(node, "_input", None)
    maps = [i for i, d in enumerate(chain) if isinstance(d, MapDataset)]
    batches = [i for i, d in enumerate(chain) if isinstance(d, BatchDataset)]
    if not maps or not batches:
        raise ValueError("spec_of needs a pipeline with a map and a batch, e.g. "
                         "Dataset.from_tensor_slices(x).map(decode, 2).batch(32).prefetch(1)")
    mapped, batched = chain[maps[0]], chain[batches[0]]
    size = int(batched._batch_size)
    prefetch = next((d for d in chain if isinstance(d, PrefetchDataset)), None)
    buffer = 0 if prefetch is None else int(prefetch._buffer_size)
    buffer = AUTOTUNE_BUFFER if buffer < 0 else buffer
    threads = AUTOTUNE_MAP_THREADS if mapped.num_parallel_calls == AUTOTUNE else mapped._parallel
    return PipelineSpec(mapped.simulated_cost_s, size if maps[0] > batches[0] else 1, threads, buffer,
                        step_s, batch_bytes, **kwargs)


def simulate_pipeline(spec: PipelineSpec, steps: int) -> PipelineRun:
    """``steps`` training steps fed by ``spec``'s pipeline, on the simulated clock (see the module doc).

    Raises:
        ValueError: ``steps < 1``.
    """
    if steps < 1:
        raise ValueError(f"simulate_pipeline needs steps >= 1, got {steps}")
    tasks = _tasks(spec, steps)
    result = sim_clock.simulate(tasks)
    return _run(spec, steps, result)


def _tasks(spec: PipelineSpec, steps: int) -> list[sim_clock.SimTask]:
    b, p, k = spec.calls_per_batch, spec.num_parallel_calls, spec.prefetch
    tasks: list[sim_clock.SimTask] = []

    def add(name, deps, resource="", duration=0.0, priority=0):
        tasks.append(sim_clock.SimTask(name, resource or name, duration, [d for d in deps if d], priority))

    def last_call(j):
        return f"consumed/{j * b + b - 1}"

    for j in range(steps):
        add(f"getnext/{j}", [f"train/{j - 1}" if j else ""])
        if k:
            add(f"pull/{j}", [f"put/{j - 1}" if j else ""])
            add(f"put/{j}", [last_call(j), f"taken/{j - k}" if j >= k else ""])
            add(f"taken/{j}", [f"getnext/{j}", f"put/{j}"])
        else:
            add(f"pull/{j}", [f"getnext/{j}"])
            add(f"taken/{j}", [last_call(j)])
        copy = spec.host != spec.accelerator
        if copy:
            add(f"copy/{j}", [f"taken/{j}"], f"{spec.host} -> {spec.accelerator}",
                cost_model.transfer_time_s(spec.batch_bytes, spec.link), j)
        add(f"train/{j}", [f"copy/{j}" if copy else f"taken/{j}"], spec.accelerator, spec.step_s, j)
        for c in range(j * b, j * b + b):
            add(f"request/{c}", [f"consumed/{c - 1}" if c % b else f"pull/{j}"])
            add(f"map/{c}", [f"request/{max(0, c - p + 1)}"], lane_device(spec.host, spec.stage, c % p),
                spec.map_cost_s, c)
            add(f"consumed/{c}", [f"map/{c}", f"request/{c}"])
    return tasks


#: The training side's wait: a feed_dict loop's client, a queue's dequeue_many, else IteratorGetNext.
_WAIT_BY_STAGE = {"client": "FeedDict", "QueueRunner": "QueueDequeueManyV2"}


def _buffer_name(spec: PipelineSpec) -> str:
    return "queue" if spec.stage == "QueueRunner" else "Prefetch"


def _us(seconds: float) -> int:
    return int(round(seconds * 1e6))


def _run(spec: PipelineSpec, steps: int, result: sim_clock.SimResult) -> PipelineRun:
    start, end = result.start_s, result.end_s
    b, p = spec.calls_per_batch, spec.num_parallel_calls
    lanes = LaneRecorder(simulated=True)
    for c in range(steps * b):
        lanes.add(lane_device(spec.host, spec.stage, c % p), f"Iterator::{spec.stage}#{c}", spec.stage,
                  _us(start[f"map/{c}"]), _us(end[f"map/{c}"]), thread_id=c % p)
    changes = []
    for j in range(steps):
        if spec.prefetch:
            lanes.add(lane_device(spec.host, "Prefetch", 0), f"Iterator::Prefetch#{j}", "Prefetch",
                      _us(start[f"pull/{j}"]), _us(end[f"put/{j}"]))
            changes += [(_us(end[f"put/{j}"]), 1), (_us(end[f"taken/{j}"]), -1)]
        wait = _WAIT_BY_STAGE.get(spec.stage, "IteratorGetNext")
        lanes.add(spec.host, f"{wait}#{j}", wait, _us(start[f"getnext/{j}"]), _us(end[f"taken/{j}"]),
                  (spec.batch_bytes,))
        if spec.host != spec.accelerator:
            lanes.add_copy(spec.host, spec.accelerator, j, _us(end[f"taken/{j}"]), _us(start[f"copy/{j}"]),
                           _us(end[f"copy/{j}"]), spec.batch_bytes)
        lanes.add(spec.accelerator, f"train_step#{j}", TRAIN_STEP, _us(start[f"train/{j}"]), _us(end[f"train/{j}"]))
    return PipelineRun(
        name=spec.name, clock="simulated", step_stats=lanes.step_stats(),
        step_starts_us=tuple(_us(start[f"getnext/{j}"]) for j in range(steps)),
        step_ends_us=tuple(_us(end[f"train/{j}"]) for j in range(steps)),
        waits_us=tuple(_us(end[f"taken/{j}"] - start[f"getnext/{j}"]) for j in range(steps)),
        occupancy={_buffer_name(spec): occupancy_series(changes)} if spec.prefetch else {},
        busy_us=sum(_us(end[f"train/{j}"]) - _us(start[f"train/{j}"]) for j in range(steps)))
