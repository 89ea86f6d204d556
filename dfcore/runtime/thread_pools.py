"""A session's inter-op thread pools and intra-op (BLAS) thread limit, as TF's ``config.proto`` says.

Source: TF ``core/protobuf/config.proto`` (the comments on ``inter_op_parallelism_threads``,
``use_per_session_threads``, ``session_inter_op_thread_pool`` and ``intra_op_parallelism_threads``) and
``core/common_runtime/direct_session.cc`` (``NumInterOpThreadsFromSessionOptions``,
``NewThreadPoolFromThreadPoolOptions``, ``GlobalThreadPool``, the ``inter_op_thread_pool`` check of ``Run``).

The rules:

* ``inter_op_parallelism_threads``: 0 = the number of cores; a negative value = every op runs on the
  caller's thread; ``n > 0`` = a pool of ``n`` threads.
* The **first** session of the process (without the two options below) fixes the size of one
  process-global pool, and every later such session shares it whatever its own setting says.
* ``use_per_session_threads=True``: the session gets its own pool of its own setting.
* ``session_inter_op_thread_pool`` (a list of ``ThreadPoolOptionProto``): one pool per entry
  (``num_threads`` 0 = as above; a ``global_name`` shares the pool with every session naming it, and
  naming it again with another ``num_threads`` is an ``InvalidArgumentError``, TF's wording); a run picks
  one with ``RunOptions.inter_op_thread_pool`` (-1 = the caller's thread; out of range: TF's error).
* ``intra_op_parallelism_threads``: ``n > 0`` limits the BLAS threads a kernel may use to ``n`` during the
  session's runs (through ``threadpoolctl``; the previous limit comes back after the run); 0 = no limit.
  BLAS thread limits are process-wide: two sessions running at once with different limits share the last
  one set.

dfcore keeps one rule of its own: no thread outlives the sessions that use a pool (a shared pool's
threads stop when the last session using it closes, and start again, with the same size, when needed).
As in TF, sessions sharing a pool share its threads: a kernel that runs another session's ``run`` on a
pool thread (a ``py_func``) can starve it; give such a session ``use_per_session_threads``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from .. import errors
from ..framework.protos import ConfigProto, RunOptions

CALLER_THREAD = 0  # the size a pool reports for "run on the caller's thread"


def num_inter_op_threads(config_threads: int) -> int:
    """Threads for an ``inter_op_parallelism_threads`` (or ``num_threads``) value: itself when non-zero
    (negative: the caller's thread), else the number of cores (TF's ``NumInterOpThreadsFromSessionOptions``)."""
    return int(config_threads) if config_threads != 0 else (os.cpu_count() or 1)


class InterOpPool:
    """A thread pool of a fixed size, shared by the sessions that :meth:`acquire` it.

    Its threads start on the first :meth:`submit` and stop when the last user :meth:`release` s it.
    ``threads`` <= 0 means the caller's thread: :meth:`submit` is never called for it.
    """

    def __init__(self, threads: int, name: str) -> None:
        self.threads = max(CALLER_THREAD, threads)
        self._name = name
        self._lock = threading.Lock()
        self._users = 0
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def acquire(self) -> InterOpPool:
        with self._lock:
            self._users += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            executor = self._executor if self._users == 0 else None
            if executor is not None:
                self._executor = None
        if executor is not None:
            executor.shutdown(wait=True)

    def submit(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` on one of the pool's threads (started when needed)."""
        executor = self._executor
        if executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = concurrent.futures.ThreadPoolExecutor(self.threads, self._name)
                executor = self._executor
        return executor.submit(fn)


_global_lock = threading.Lock()
_global_pool: InterOpPool | None = None
_named_pools: dict[str, tuple[int, InterOpPool]] = {}


def _global(threads: int) -> InterOpPool:
    """The process-global pool, sized by the first caller (TF's ``GlobalThreadPool``)."""
    global _global_pool
    with _global_lock:
        if _global_pool is None:
            _global_pool = InterOpPool(threads, "dfcore-inter-op")
        return _global_pool


def _named(name: str, num_threads: int, threads: int) -> InterOpPool:
    with _global_lock:
        if name not in _named_pools:
            _named_pools[name] = (num_threads, InterOpPool(threads, f"dfcore-inter-op-{name}"))
        configured, pool = _named_pools[name]
    if configured != num_threads:
        raise errors.InvalidArgumentError(
            None, None, f"Pool {name} configured previously with num_threads={configured}; cannot re-configure "
            f"with num_threads={num_threads}")
    return pool


class SessionThreadPools:
    """The inter-op pools of one session (TF ``DirectSession::thread_pools_``) and its intra-op limit.

    Raises:
        InvalidArgumentError: a ``session_inter_op_thread_pool`` entry names a global pool configured before
            with another ``num_threads`` (TF's wording).
    """

    def __init__(self, config: ConfigProto) -> None:
        threads = num_inter_op_threads(config.inter_op_parallelism_threads)
        pools: list[InterOpPool] = []
        try:
            if len(config.session_inter_op_thread_pool):
                for i, options in enumerate(config.session_inter_op_thread_pool):
                    n = num_inter_op_threads(options.num_threads) if options.num_threads else threads
                    pool = (_named(options.global_name, options.num_threads, n) if options.global_name
                            else InterOpPool(n, f"dfcore-inter-op-{i}"))
                    pools.append(pool.acquire())
            elif config.use_per_session_threads:
                pools.append(InterOpPool(threads, "dfcore-inter-op").acquire())
            else:  # TF sizes the global pool 1 when its first session runs on the caller's thread
                pools.append(_global(max(1, threads)).acquire())
        except errors.OpError:
            for pool in pools:
                pool.release()
            raise
        self._pools = pools
        # TF: a negative setting runs the session's ops on the caller's thread, whatever pool it shares
        self._caller_thread = config.inter_op_parallelism_threads < 0
        self.intra_op_threads = max(0, int(config.intra_op_parallelism_threads))

    def pool_for(self, options: RunOptions | None) -> InterOpPool | None:
        """The pool a run uses (None: the caller's thread).

        Raises:
            InvalidArgumentError: ``options.inter_op_thread_pool`` names no pool of the session (TF's wording).
        """
        index = options.inter_op_thread_pool if options is not None else 0
        if index < -1 or index >= len(self._pools):
            raise errors.InvalidArgumentError(None, None, f"Invalid inter_op_thread_pool: {index}")
        if index == -1 or self._caller_thread:
            return None
        pool = self._pools[index]
        return pool if pool.threads > 0 else None

    def intra_op_scope(self) -> contextlib.AbstractContextManager[Any]:
        """A context limiting BLAS to ``intra_op_threads`` threads inside the block (no limit when 0)."""
        if not self.intra_op_threads:
            return _NO_LIMIT
        return _BlasLimit(self.intra_op_threads)

    def close(self) -> None:
        """Release the session's pools (a pool's threads stop once no session uses it)."""
        pools, self._pools = self._pools, []
        for pool in pools:
            pool.release()


_libraries: Any = None
_NO_LIMIT = contextlib.nullcontext()  # reusable: it holds no state


def _blas_libraries() -> Any:
    """The loaded BLAS libraries' ``threadpoolctl`` controllers (found once, not per run)."""
    global _libraries
    if _libraries is None:
        from threadpoolctl import ThreadpoolController
        _libraries = ThreadpoolController().select(user_api="blas").lib_controllers
    return _libraries


class _BlasLimit:
    """``threads`` BLAS threads inside the block, each library's own count back after it; a library already
    at ``threads`` is left alone (the common case, a session's every run: ``threadpoolctl``'s ``limit`` reads
    and sets every library each time, ~6 us a run, measured)."""

    __slots__ = ("_threads", "_restore")

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._restore: list[tuple[Any, int]] = []

    def __enter__(self) -> None:
        for library in _blas_libraries():
            threads = library.get_num_threads()
            if threads != self._threads:
                library.set_num_threads(self._threads)
                if threads is not None:
                    self._restore.append((library, threads))

    def __exit__(self, *exc_info: object) -> None:
        for library, threads in self._restore:
            library.set_num_threads(threads)
