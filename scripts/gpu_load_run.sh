#!/usr/bin/env bash
# The GPU load run (issue 11), on a machine with Python 3.12, torch and CUDA but no network:
# install the carried cp312 wheels (scripts/fetch_gpu_wheels.sh made them), then run
# bench/gpu_run.py, which builds the calibrated checkpoint and runs the load benchmark
# batched and unbatched. Everything it writes goes to $OUT (default: ./gpu_out).
#
#   scripts/gpu_load_run.sh [--phoneme-table FILE] [--quick] [--device cpu] [...]
#
# Flags go to `python -m bench.gpu_run`. PYTHON picks the interpreter (default: python3),
# GPU_WHEELS the wheel folder (default: gpu_wheels; skipped when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
wheels=${GPU_WHEELS:-gpu_wheels}
out=${OUT:-gpu_out}
if [ -d "$wheels" ]; then
    # --no-deps: exactly the carried wheels; what they need beyond them is already installed
    "$python" -m pip install --quiet --no-index --no-deps "$wheels"/*.whl
fi
exec "$python" -m bench.gpu_run --out "$out" "$@"
