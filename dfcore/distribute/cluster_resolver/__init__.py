"""``tf.distribute.cluster_resolver``: where a task finds its ``ClusterSpec``, job and index.

Source: TF's ``tensorflow/python/distribute/cluster_resolver`` (``cluster_resolver.py``,
``tfconfig_cluster_resolver.py``, ``slurm_cluster_resolver.py``). A resolver reads what the
cluster manager gave the process — the ``TF_CONFIG`` variable (``python -m dfcore.launch --grpc``
sets it), Slurm's ``SLURM_*`` variables, or values passed by hand — and answers
``cluster_spec()``, ``task_type``, ``task_id``, ``master()`` and ``num_accelerators()``.
:class:`dfcore.mpi.MPIClusterResolver` answers the same for a rank of an MPI job.
"""

from .base import ClusterResolver, SimpleClusterResolver, format_master_url
from .slurm import SlurmClusterResolver, expand_hostlist, expand_tasks_per_node
from .tfconfig import TF_CONFIG_ENV, TFConfigClusterResolver

__all__ = ["TF_CONFIG_ENV", "ClusterResolver", "SimpleClusterResolver", "SlurmClusterResolver",
           "TFConfigClusterResolver", "expand_hostlist", "expand_tasks_per_node", "format_master_url"]


def __getattr__(name):
    from ...compat.missing import missing_attribute  # a TF 1.x name dfcore lacks (GCEClusterResolver ...) says so
    raise missing_attribute(__name__, "tf.distribute.cluster_resolver", name)
