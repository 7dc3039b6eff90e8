#!/usr/bin/env bash
# The GPU load run, on a machine with Python 3.12, torch and CUDA but no network:
# install the carried cp312 wheels (scripts/fetch_gpu_wheels.sh made them), then run
# bench/load/gpu_run.py, which builds the calibrated checkpoint and runs the load benchmark
# batched and unbatched. Everything it writes goes to $OUT (default: ./gpu_out).
#
#   scripts/gpu_load_run.sh [--phoneme-table FILE] [--quick] [--device cpu] [...]
#
# Flags go to `python -m bench.load.gpu_run`. PYTHON picks the interpreter (default: python3),
# GPU_WHEELS the wheel folder (default: gpu_wheels; skipped when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
wheels=${GPU_WHEELS:-gpu_wheels}
out=${OUT:-gpu_out}
if [ -d "$wheels" ]; then
    # offline, from the carried wheels: what the machine already has stays as it is
    install=("$python" -m pip install --quiet --no-index --find-links "$wheels")
    "${install[@]}" --no-deps kokoro  # the model only: not its G2P's dependencies
    "${install[@]}" --no-deps num2words  # the normalizer's number words (not its CLI's docopt)
    "${install[@]}" fastapi uvicorn websockets httpx transformers loguru attrs prometheus-client \
        opentelemetry-api opentelemetry-sdk python-json-logger
fi
mkdir -p "$out" && "$python" -m pip list --format=freeze >"$out/pip-freeze.txt"  # what ran
exec "$python" -m bench.load.gpu_run --out "$out" "$@"
