"""DeviceLog: the device mapping, the filterable placement table, rendezvous events and memory."""

import ipywidgets
from seed_programs import placement_program

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.runtime.rendezvous import TransferRecord
from widgets import DeviceLog
from widgets.device_log import ALL, filter_records, transfer_rows

GPU2 = "/job:localhost/replica:0/task:0/device:GPU:2"


def seeds_program(trace=True):
    """The seeds' placement program, run once (traced) as built (TF's no-rewrite test config: its constants
    would be folded); returns the session and RunMetadata."""
    total = placement_program()
    sess = tf.Session(config=no_rewrite_session_config())
    run_metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE if trace else 0)
    sess.run(total, options=options, run_metadata=run_metadata)
    return sess, run_metadata


def test_device_mapping_header_is_tf_s():
    sess, run_metadata = seeds_program()
    log = DeviceLog(sess, run_metadata)
    assert log.mapping_lines[0] == "Device mapping:"
    assert log.mapping_lines[3] == (f"{GPU2} -> device: 2, name: Tesla K20m, pci bus id: 0000:04:00.0, "
                                    "compute capability: 3.5")
    assert len(log.mapping_lines) == 5
    assert "Device mapping:" in log.children[0].value


def test_placement_table_filters_by_device_and_by_op_type():
    sess, run_metadata = seeds_program()
    log = DeviceLog(sess, run_metadata)
    assert isinstance(log.device_filter, ipywidgets.Dropdown) and log.device_filter in log.children[2].children
    assert [v for _, v in log.device_filter.options][1:] == log.devices
    assert "7 of 7 nodes" in log.placements.value
    log.device_filter.value = GPU2
    html = log.placements.value
    assert "3 of 7 nodes" in html and ">MatMul<" in html and ">Const_1<" in html and ">AddN<" not in html
    log.op_type_filter.value = "Const"
    assert "2 of 7 nodes" in log.placements.value and ">MatMul<" not in log.placements.value
    log.device_filter.value = ALL
    assert "4 of 7 nodes" in log.placements.value


def test_filter_records_matches_device_and_type():
    sess, _ = seeds_program()
    records = sess.placement_records()
    assert [r.node_name for r in filter_records(records, GPU2, "MatMul")] == ["MatMul"]
    assert len(filter_records(records)) == 7
    assert filter_records(records, op_type="Nothing") == []


def test_rendezvous_events_and_memory_come_from_the_run_metadata():
    sess, run_metadata = seeds_program()
    log = DeviceLog(sess, run_metadata)
    for transfer in tf.step_records(run_metadata).transfers:
        assert f">{transfer.tensor_name}<" in log.transfers.value
    assert ">edge_4_MatMul<" in log.transfers.value and ">edge_5_MatMul_1<" in log.transfers.value
    assert len(tf.step_records(run_metadata).transfers) == 2  # the fetch leaves by the call frame, not the rendezvous
    for allocator in ("cpu", "GPU_2_bfc", "GPU_3_bfc", "GPU_2_bfc reserved"):
        assert f">{allocator}<" in log.memory.value
    assert ">5.0 GB<" in log.memory.value  # the K20m's memory, reserved up front without allow_growth
    assert repr(log) == "<DeviceLog: 7 nodes on 3 devices, 2 transfers>"


def test_transfer_rows_are_relative_to_the_first_event_and_show_the_wait():
    a, b = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:CPU:0"
    records = [TransferRecord("k1", "edge_1_x", a, b, 1500, send_time_s=10.000020, recv_request_time_s=10.000005,
                              match_time_s=10.000020),
               TransferRecord("k2", "edge_2_y", b, a, 4, send_time_s=10.000030, recv_request_time_s=10.000040,
                              match_time_s=10.000040)]
    assert transfer_rows(records) == [
        ("edge_1_x", "GPU:0", "CPU:0", "1.5 KB", "15 µs", "0 µs", "15 µs", "15 µs"),
        ("edge_2_y", "CPU:0", "GPU:0", "4 B", "25 µs", "35 µs", "35 µs", "0 µs"),
    ]


def test_without_a_trace_the_log_says_how_to_get_one():
    sess, run_metadata = seeds_program(trace=False)
    for log in (DeviceLog(sess), DeviceLog(sess, run_metadata)):
        assert "trace_level=tf.RunOptions.FULL_TRACE" in log.transfers.value
        assert "trace_level=tf.RunOptions.FULL_TRACE" in log.memory.value
        assert repr(log) == "<DeviceLog: 7 nodes on 3 devices, 0 transfers>"


def test_before_any_run_nothing_is_placed():
    tf.constant(1.0)
    log = DeviceLog(tf.Session())
    assert "Nothing placed yet" in log.placements.value
    assert repr(log) == "<DeviceLog: 0 nodes on 0 devices, 0 transfers>"
