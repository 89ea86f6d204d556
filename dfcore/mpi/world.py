"""Which task of a cluster this MPI rank is: the job layout, rank ↔ task, and dfcore's communicators.

Source: dfcore's ``ClusterSpec``-on-ranks layout (docs/architecture.md#transports: jobs in order, ranks
assigned job by job; one ``comm.Split`` per job) and TF's
``TFConfigClusterResolver`` (``tensorflow/python/distribute/cluster_resolver``) for
the resolver API.

The launcher (:mod:`dfcore.launch`) puts the layout in ``DFCORE_CLUSTER`` as JSON, e.g.
``{"ps": 1, "worker": 3}``: rank 0 is ``/job:ps/task:0``, ranks 1–3 are
``/job:worker/task:0..2``. Task addresses are ``localhost:<2222 + rank>`` — names only:
ranks talk over MPI and nothing listens on those ports.

``mpi4py`` is imported only when a communicator is asked for.
"""

import functools
import json
import os

from .env import BASE_PORT, CLUSTER_ENV, RANK_VARIABLES


class Layout:
    """Jobs and their task counts in rank order (``Layout({"ps": 1, "worker": 3})``).

    Raises:
        ValueError: an empty layout, a job with fewer than one task, or a non-string job name.
    """

    def __init__(self, jobs):
        jobs = dict(jobs)
        if not jobs:
            raise ValueError("a cluster layout needs at least one job, e.g. {'worker': 4}")
        for job, count in jobs.items():
            if not isinstance(job, str) or not job:
                raise ValueError(f"job names must be non-empty strings, got {job!r}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError(f"job {job!r} needs a task count >= 1, got {count!r}")
        self.jobs = jobs
        self._tasks = [(job, t) for job, n in jobs.items() for t in range(n)]

    @classmethod
    def from_json(cls, text):
        """Parse ``DFCORE_CLUSTER``'s value (raises ValueError on malformed JSON)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{CLUSTER_ENV} must be a JSON object like {{\"ps\": 1, \"worker\": 3}}, "
                             f"got {text!r} ({error})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{CLUSTER_ENV} must be a JSON object like {{\"ps\": 1, \"worker\": 3}}, got {text!r}")
        return cls(data)

    def to_json(self):
        return json.dumps(self.jobs)

    @property
    def size(self):
        """The number of ranks."""
        return len(self._tasks)

    def task_of_rank(self, rank):
        """``(job, task index)`` of ``rank`` (raises ValueError out of range)."""
        if not 0 <= rank < self.size:
            raise ValueError(f"rank {rank} is outside this {self.size}-rank layout {self.jobs}")
        return self._tasks[rank]

    def rank_of(self, job, task_index):
        """The rank running ``/job:<job>/task:<task_index>``.

        Raises:
            ValueError: no such task in the layout.
        """
        try:
            return self._tasks.index((job, int(task_index)))
        except ValueError:
            raise ValueError(f"/job:{job}/task:{task_index} is not a task of this MPI job's layout {self.jobs} "
                             f"(set by dfcore.launch in {CLUSTER_ENV})") from None

    def task_name(self, rank):
        """``/job:<job>/replica:0/task:<index>`` of ``rank`` (raises ValueError out of range)."""
        job, task = self.task_of_rank(rank)
        return f"/job:{job}/replica:0/task:{task}"

    def address(self, rank):
        """The (fake) address of ``rank``'s task: ``localhost:<2222 + rank>``."""
        return f"localhost:{BASE_PORT + rank}"

    def cluster_dict(self):
        """``{job: [addresses]}`` for ``tf.train.ClusterSpec``."""
        out = {}
        for rank, (job, _) in enumerate(self._tasks):
            out.setdefault(job, []).append(self.address(rank))
        return out

    def __eq__(self, other):
        return isinstance(other, Layout) and list(self.jobs.items()) == list(other.jobs.items())

    def __repr__(self):
        return f"Layout({self.jobs})"


def layout_from_env(environ=None):
    """The launcher's :class:`Layout`, or None when this process was not started by :mod:`dfcore.launch`."""
    text = (os.environ if environ is None else environ).get(CLUSTER_ENV)
    return None if not text else Layout.from_json(text)


def _started_by_mpiexec():
    """True when an MPI launcher started this process (its rank variables are set)."""
    return any(name in os.environ for name in RANK_VARIABLES)


def in_mpi_job():
    """True when this process is a rank of a dfcore MPI job (``DFCORE_CLUSTER`` is set)."""
    return bool(os.environ.get(CLUSTER_ENV))


@functools.lru_cache(maxsize=1)
def world():
    """``(comm, layout)``: a private duplicate of ``COMM_WORLD`` for dfcore's own messages, and the layout.

    Without ``DFCORE_CLUSTER`` (plain ``mpiexec -n N python -m mpi4py ...``), every rank is a
    ``worker`` task.

    Raises:
        ImportError: mpi4py is not installed (names the extra to install).
        ValueError: the layout's rank count differs from the world size.
    """
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(f"dfcore's multi-process runtime needs mpi4py: pip install 'dfcore[mpi]' ({error})") \
            from None
    comm = MPI.COMM_WORLD
    layout = layout_from_env() or Layout({"worker": comm.Get_size()})
    if layout.size != comm.Get_size():
        raise ValueError(f"{CLUSTER_ENV}={layout.to_json()} names {layout.size} tasks but the MPI job has "
                         f"{comm.Get_size()} ranks; start it with python -m dfcore.launch")
    return comm.Dup(), layout


@functools.lru_cache(maxsize=1)
def _job_comm():
    # Split is collective over every rank: made once, with the world, in the same order everywhere.
    comm, layout = world()
    job, task = layout.task_of_rank(comm.Get_rank())
    return job, comm.Split(color=list(layout.jobs).index(job), key=task)


def ensure_world():
    """Create dfcore's communicators now (collective: every rank of the job calls it, e.g. at Server start)."""
    _job_comm()


def rank():
    """This process's rank in the job."""
    return world()[0].Get_rank()


def job_communicator(job=None):
    """A communicator of the ranks of this rank's job, in task order (``comm.Split``).

    Every rank of the job must have called :func:`ensure_world` (Server start does), since the split
    is made there, collectively.

    Raises:
        ValueError: ``job`` is another job than this rank's.
    """
    own_job, comm = _job_comm()
    if job is not None and job != own_job:
        raise ValueError(f"rank {rank()} is in job {own_job!r}; it cannot join {job!r}'s communicator")
    return comm


def gather_polling(obj, comm, root=0, timeout_s=60.0, poll_s=0.002):
    """``comm.gather(obj, root)`` that never busy-waits and has a deadline.

    A blocking MPI collective spins a core while it waits (Open MPI busy-polls), which on a
    small machine slows the ranks still working; here every rank posts non-blocking sends and
    receives and sleeps between tests.

    Returns:
        On ``root``, the list of every rank's ``obj`` in rank order; None elsewhere.
    Raises:
        DeadlineExceededError: not every message moved within ``timeout_s`` (names the ranks missing).
    """
    size, me = comm.Get_size(), comm.Get_rank()
    if me != root:
        _complete(comm, {root: comm.isend(obj, dest=root, tag=_GATHER_TAG)}, {}, timeout_s, poll_s, "gather")
        return None
    received = _complete(comm, {}, {r: _GATHER_TAG for r in range(size) if r != root}, timeout_s, poll_s, "gather")
    received[me] = obj
    return [received[r] for r in range(size)]


def bcast_polling(obj, comm, root=0, timeout_s=60.0, poll_s=0.002):
    """``comm.bcast(obj, root)`` that never busy-waits and has a deadline (see :func:`gather_polling`).

    Returns:
        ``root``'s ``obj`` on every rank.
    Raises:
        DeadlineExceededError: as :func:`gather_polling`.
    """
    size, me = comm.Get_size(), comm.Get_rank()
    if me == root:
        sends = {r: comm.isend(obj, dest=r, tag=_BCAST_TAG) for r in range(size) if r != root}
        _complete(comm, sends, {}, timeout_s, poll_s, "bcast")
        return obj
    return _complete(comm, {}, {root: _BCAST_TAG}, timeout_s, poll_s, "bcast")[root]


_GATHER_TAG, _BCAST_TAG = 7108, 7109


def _complete(comm, sends, receives, timeout_s, poll_s, what):
    """Finish ``sends`` (``{rank: isend request}``) and ``receives`` (``{rank: tag}``: a pickled message
    from each, matched with ``improbe`` so any size fits), sleeping between tests; ``{rank: received value}``."""
    import time

    from .. import errors

    results = {}
    deadline = time.monotonic() + timeout_s
    while sends or receives:
        for peer, request in list(sends.items()):
            if request.test()[0]:
                del sends[peer]
        for peer, tag in list(receives.items()):
            message = comm.improbe(source=peer, tag=tag)
            if message is not None:
                del receives[peer]
                results[peer] = message.recv()
        if sends or receives:
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"{what}: no message from/to ranks {sorted(set(sends) | set(receives))} within "
                    f"{timeout_s} s")
            time.sleep(poll_s)
    return results


class MPIClusterResolver:
    """A cluster resolver for a dfcore MPI job (the API of TF's ``TFConfigClusterResolver``).

    >>> resolver = MPIClusterResolver(Layout({"ps": 1, "worker": 3}), rank=2)
    >>> resolver.task_type, resolver.task_id, resolver.master()
    ('worker', 1, 'grpc://localhost:2224')
    >>> resolver.cluster_spec().as_dict()
    {'ps': ['localhost:2222'], 'worker': ['localhost:2223', 'localhost:2224', 'localhost:2225']}

    Args:
        layout: a :class:`Layout` (default: the launcher's, from ``DFCORE_CLUSTER``; under a plain
            ``mpiexec -n N`` without it, N worker tasks).
        rank: this process's rank (default: from MPI).
    Raises:
        ValueError: no layout given and none in the environment.
    """

    def __init__(self, layout=None, rank=None):
        if layout is None:
            layout = layout_from_env()
            if layout is None and _started_by_mpiexec():
                layout = world()[1]  # plain `mpiexec -n N python -m mpi4py script.py`: N workers
            if layout is None:
                raise ValueError(f"Not inside a dfcore MPI job ({CLUSTER_ENV} is unset): start the script with "
                                 "python -m dfcore.launch --ps 1 --workers 3 script.py")
        self._layout = layout
        self._rank = globals()["rank"]() if rank is None else int(rank)
        self.task_type, self.task_id = layout.task_of_rank(self._rank)
        self.rpc_layer = "grpc"

    def cluster_spec(self):
        """The job's ``tf.train.ClusterSpec``."""
        from ..train.cluster_spec import ClusterSpec

        return ClusterSpec(self._layout.cluster_dict())

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """``grpc://<address>`` of a task (default: this one)."""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        return f"{rpc_layer or self.rpc_layer}://{self._layout.address(self._layout.rank_of(task_type, task_id))}"

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """``{}``: ranks run on the CPU (simulated GPUs are per-process ``device_count``)."""
        return {}

    @property
    def environment(self):
        return "mpi"
