"""Jupyter widgets that render what the dfcore engine did (placement, partitions, traces).

- :class:`GraphView`: the dataflow graph coloured by device, with a node picker (and a run's dead nodes greyed).
- :class:`PartitionView`: a run's graph before and after ``_Send``/``_Recv`` insertion, each device's copy of a
  loop's control, the transfers per loop iteration, the nodes that ran dead.
- :class:`DeviceLog`: the device mapping, the placement log, rendezvous events, memory.
- :class:`TimelineView`: a traced step as lanes per device (loop iterations marked, dead runs grey), with a
  kernel-free step-through.
- :class:`AllReduceView`: an all-reduce round by round (chunks, partial sums, bytes) and busbw from algbw.
- :class:`AllReduceComparison`: ring vs reduce-to-one vs tree on one input (bytes, rounds, time).
- :class:`ParameterServerView`: parameter-server runs (sync / async / SSP): lanes per task, ps load,
  staleness histograms, loss and accuracy against time.
- :class:`PipelineView`: input-pipeline runs as lanes per input thread, the starved waits, buffer occupancy.
- :class:`PlacementView`: the cost-model placer's decisions (candidates, finish times, winner), node by node.
- :class:`ClusterView`: the jobs, tasks and devices of a cluster, and the variables on its ps tasks.
- :class:`Choice`, :class:`SliderQuestion`, :class:`NumberQuestion`: answer widgets with a hint on a wrong answer
  and the answer only on request (choice and slider need no kernel); :class:`Quiz` shows several.
- :class:`Exercise`: the exercise checker (what is wrong, the expected values only on request).
- :class:`WhatIf`: pickers over a grid of parameter values and the engine's precomputed pane for each.

All are stock ipywidgets (``VBox`` subclasses) with stable ``repr``s; graphs are laid
out by Graphviz's ``dot`` when it is installed, else shown as DOT text.
"""

from .all_reduce_compare import AllReduceComparison
from .all_reduce_view import AllReduceView
from .cluster_view import ClusterView
from .device_log import DeviceLog
from .exercise import Exercise, Requirement
from .graph_view import GraphView
from .parameter_server_view import ParameterServerView
from .partition_view import PartitionView
from .pipeline_view import PipelineView
from .placement_view import PlacementView
from .quiz import Choice, NumberQuestion, Quiz, SliderQuestion
from .timeline_view import TimelineView
from .what_if import WhatIf

__all__ = ["AllReduceComparison", "AllReduceView", "Choice", "ClusterView", "DeviceLog", "Exercise", "GraphView",
           "NumberQuestion", "ParameterServerView", "PartitionView", "PipelineView", "PlacementView", "Quiz",
           "Requirement", "SliderQuestion", "TimelineView", "WhatIf"]
