"""tests/gpu: checks on real CUDA GPUs through cupy (``make test-gpu``). Every test here is skipped, with the
reason, where cupy is missing or no GPU is visible; ``make test`` does not collect this folder."""

import pytest

from dfcore.runtime import real_gpus


def pytest_collection_modifyitems(config, items):
    reason = None
    try:
        import cupy  # noqa: F401
    except Exception as error:  # not installed, or its CUDA libraries are missing
        reason = f"cupy is not importable ({type(error).__name__}: {error})"
    else:
        if real_gpus.simulated_gpus_requested():
            reason = f"{real_gpus.SIMULATED_GPUS_ENV} is set: the GPUs are simulated"
        elif not real_gpus.detect_gpus():
            reason = "cupy sees no CUDA GPU (CUDA_VISIBLE_DEVICES, driver)"
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def gpus():
    """The visible GPUs (:class:`dfcore.runtime.real_gpus.PhysicalGpu`), printed once for the log."""
    found = real_gpus.detect_gpus()
    print("\nGPUs:", "; ".join(g.desc for g in found))
    return found
