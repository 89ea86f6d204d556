"""The runtime of a cluster whose tasks are separate processes, written once for every transport.

* :mod:`~dfcore.transport.seam` — the seam: what a transport (MPI's :mod:`dfcore.mpi.transport`,
  gRPC's :mod:`dfcore.transport.grpc_transport`) offers the runtime: one-way messages and requests between
  tasks numbered by rank, dispatched to handlers by kind.
* :mod:`~dfcore.transport.task` — one process's task: its state, devices and worker service.
* :mod:`~dfcore.transport.service` — the worker side (TF's ``RegisterGraph``/``RunGraph``/``CleanupGraph``).
* :mod:`~dfcore.transport.master` — the master side: a session's step across the tasks, all or nothing.
* :mod:`~dfcore.transport.rendezvous` — a step's rendezvous spanning processes.
"""
