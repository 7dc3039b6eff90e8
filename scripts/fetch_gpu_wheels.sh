#!/usr/bin/env bash
# Download the cp312 wheels the GPU run needs into gpu_wheels/ (git-ignored) and print their
# total size. What the GPU image holds is not known here, so the wheels cover every import of
# the torch engine and the server beyond torch and numpy; scripts/gpu_load_run.sh installs only
# what the machine lacks. Versions are pinned to this checkout's .venv, so the GPU run tests the
# same code.
#
#   scripts/fetch_gpu_wheels.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-gpu_wheels}
python=${PYTHON:-.venv/bin/python}
# the server's stack, and kokoro's model (kokoro/model.py, modules.py, istftnet.py,
# custom_stft.py): transformers' ALBERT, loguru, attrs. Not its G2P pipeline (spaCy, misaki,
# eSpeak): the run reads phonemes from bench/load/phonemes.json (tts_server/engines/torch/kmodel.py).
resolved="fastapi uvicorn websockets httpx transformers loguru attrs prometheus-client
opentelemetry-api opentelemetry-sdk python-json-logger"  # + observability/
pins() {
    "$python" - "$@" <<'PY'
import importlib.metadata as metadata, sys
print(" ".join(f"{name}=={metadata.version(name)}" for name in sys.argv[1:]))
PY
}
download() {
    # shellcheck disable=SC2068  # one argument per pin and flag
    "$python" -m pip download --quiet --dest "$dest" --python-version 3.12 \
        --implementation cp --abi cp312 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        --only-binary=:all: $@ 2>&1 | { grep -v "^WARNING: Location" || true; }
}
rm -rf "$dest" && mkdir -p "$dest"
# shellcheck disable=SC2046  # one argument per pin
download $(pins $resolved)          # with what they depend on
download --no-deps $(pins kokoro)   # kokoro's declared dependencies include its G2P: not those
download --no-deps $(pins num2words)  # the normalizer's number words (docopt is its CLI's only)
rm -f "$dest"/numpy-*.whl           # the image has numpy (torch needs it)
ls -l "$dest"
du -cb "$dest"/*.whl | tail -1 | awk '{printf "total: %.2f MB in %d wheels\n", $1 / 1e6, n}' \
    n="$(ls "$dest"/*.whl | wc -l)"
