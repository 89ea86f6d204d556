"""``tf.train``: optimizers, global step, moving averages, Saver; clusters (``ClusterSpec``,
``Server``), ``replica_device_setter``, ``SyncReplicasOptimizer``, ``QueueRunner``/``Coordinator``,
the queue-based input pipeline (``batch``, ``shuffle_batch``, ``*_input_producer``), ``Example`` and its messages,
``MonitoredTrainingSession`` and its hooks.

Source: ``tensorflow/python/training/``; names as TF1's ``tf.train``.
"""

from ..framework.protos import (  # TF 1.x exports these messages here
    BytesList,
    ClusterDef,
    Example,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
    JobDef,
    SaverDef,
    SequenceExample,
)
from .adadelta import AdadeltaOptimizer
from .adagrad import AdagradOptimizer
from .adam import AdamOptimizer
from .basic_session_run_hooks import (
    CheckpointSaverHook,
    FeedFnHook,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StopAtStepHook,
)
from .checkpoint_management import (
    CheckpointState,
    checkpoint_exists,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from .cluster_spec import ClusterSpec
from .coordinator import Coordinator, LooperThread
from .device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn, ps_load_table, replica_device_setter
from .ftrl import FtrlOptimizer
from .gradient_descent import GradientDescentOptimizer
from .graph_io import write_graph
from .input import (
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from .learning_rate_decay import exponential_decay, piecewise_constant, piecewise_constant_decay, polynomial_decay
from .momentum import MomentumOptimizer
from .monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from .moving_averages import ExponentialMovingAverage
from .optimizer import Optimizer
from .queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from .rmsprop import RMSPropOptimizer
from .saver import Saver, export_meta_graph, import_meta_graph
from .session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from .summary_hooks import ProfilerHook, StepCounterHook, SummarySaverHook
from .supervisor import Supervisor
from .sync_replicas import SyncReplicasOptimizer
from .training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)


def __getattr__(name: str):
    """``tf.train.Server`` (distribute/ defines it, on top of train/), or for a TF 1.x name dfcore lacks an
    AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    if name == "Server":
        from ..distribute.cluster import Server
        return Server
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.train", name)
