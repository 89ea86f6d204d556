"""A client attached by ``grpc://`` to a cluster of task processes, with the graph optimizer on (TF's default).

Specification: issue 16. TF's master runs Grappler once on the placed graph before partitioning
(``master_session.cc``, ``GraphExecutionState::OptimizeGraph``), so the partitions each task registers hold the
optimized nodes; with ``FULL_TRACE`` the client's ``RunMetadata`` holds every task's device stats and, with
``output_partition_graphs``, every partition (TF's ``RunStepResponse.metadata``). Reference: numpy's
``relu(x @ w + b)`` and the partitions counted by hand (:func:`fused_model.expected_partitions`).
"""

import numpy as np
import pytest
from fused_model import X, build_fused, expected_hidden, expected_partitions, partition_summary
from grpc_cluster import Cluster, cluster_dict

import dfcore as tf
from dfcore.transport import SERVERS_ENV

pytestmark = pytest.mark.timeout(120)


def test_a_grpc_client_gets_the_optimized_partitions_and_every_tasks_step_stats(monkeypatch):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with Cluster(cluster_dict()) as cluster:
        cluster.start("ps", 0, "serve").ready()
        cluster.start("worker", 0, "serve").ready()
        with tf.Graph().as_default():
            x, hidden, init = build_fused()
            with tf.Session("grpc://" + cluster.address("worker", 0)) as sess:
                sess.run(init)
                metadata = tf.RunMetadata()
                options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
                value = sess.run(hidden, {x: X}, options=options, run_metadata=metadata)
                again = sess.run(hidden, {x: X})  # the plan registered once serves the next step
    np.testing.assert_allclose(value, expected_hidden(), rtol=1e-6)
    np.testing.assert_array_equal(again, value)
    partitions, stats = partition_summary(metadata)
    assert partitions == expected_partitions()
    # one DeviceStepStats per device of each task, one NodeExecStats per node its partition ran
    names = {device: sorted(n.name for n in graph.node) for graph in metadata.partition_graphs
             for device in {n.device for n in graph.node}}
    assert stats == names
