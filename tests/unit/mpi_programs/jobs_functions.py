"""Functions for test_mpi_jobs' ``run_job(function)``: importable by the ranks from this module."""

from mpi4py import MPI


def scaled_rank(scale, offset=0):
    """This rank's number × ``scale`` + ``offset``, after a barrier (every rank must take part)."""
    MPI.COMM_WORLD.Barrier()
    return MPI.COMM_WORLD.Get_rank() * scale + offset


def session_directory():
    """Where Open MPI's launcher keeps this job's session files (PMIx's ``PMIX_SERVER_TMPDIR``), or None."""
    import os

    return os.environ.get("PMIX_SERVER_TMPDIR")
