"""The GPU all-reduce bench and lesson 05's table on a machine without a GPU: they say what they would show
and return without error; the rank placement rule (one rank per GPU, else four logical GPUs on GPU 0)."""

import pytest

from dfcore.bench import all_reduce as bench, gpu_all_reduce
from dfcore.runtime import real_gpus

_GPU = real_gpus.PhysicalGpu(0, "NVIDIA H200", "0000:19:00.0", "9.0", 1)


@pytest.fixture(autouse=True)
def _no_gpu(monkeypatch):
    monkeypatch.setattr(real_gpus, "detect_gpus", lambda: ())


def test_lesson_table_says_what_it_would_show_and_returns_none():
    lines = []
    assert gpu_all_reduce.gpu_busbw_table(out=lines.append) is None
    assert lines == [gpu_all_reduce.NO_GPU]
    assert "busbw" in lines[0] and "simulated" in lines[0] and "NCCL" in lines[0]


def test_cupy_backend_of_the_cli_says_there_is_no_gpu(capsys):
    bench.main(["--backend", "cupy", "-b", "1K", "-e", "1K"])
    assert capsys.readouterr().out.strip() == "# " + gpu_all_reduce.NO_GPU


def test_ranks_are_one_per_gpu_or_four_logical_gpus_on_one():
    other = real_gpus.PhysicalGpu(3, "NVIDIA H200", "0000:3b:00.0", "9.0", 1)
    assert gpu_all_reduce.placement(None, [_GPU]) == [0, 0, 0, 0]
    assert gpu_all_reduce.placement(None, [_GPU, other]) == [0, 3]
    assert gpu_all_reduce.placement(3, [_GPU, other]) == [0, 3, 0]
