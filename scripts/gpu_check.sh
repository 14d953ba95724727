#!/usr/bin/env bash
# The GPU check, in one go on a machine with an NVIDIA GPU and CUDA 12 (under 8 minutes):
# makes (or reuses) a virtual environment, installs scratchgrad with its cuda extra (CuPy), then
# runs scripts/gpu_check.py: the op table on "cuda" against the CPU (float32, rtol 1e-5), the
# digits CNN trained on the GPU (>= 98% held out), and W4 at batch 4096 and the character-level
# GPT timed on the GPU against the CPU; it ends with one summary table.
#
#   scripts/gpu_check.sh                 # a fresh .venv-gpu
#   VENV=/path/to/venv scripts/gpu_check.sh   # a venv that has scratchgrad[cuda] already
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv-gpu}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import cupy, scratchgrad" 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet -e '.[cuda]'
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
exec timeout 450 "$VENV/bin/python" scripts/gpu_check.py "$@"
