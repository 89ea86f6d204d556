"""The unit tests mean the same machine everywhere: every ``GPU:i`` simulated, even on a host with real GPUs
(``DFCORE_SIMULATED_GPUS=1``, :mod:`dfcore.runtime.real_gpus`); tests/gpu runs on the real ones."""

import os

from dfcore.runtime.real_gpus import SIMULATED_GPUS_ENV

os.environ.setdefault(SIMULATED_GPUS_ENV, "1")
