#!/usr/bin/env bash
# Download the cp312 wheels the GPU machine lacks into gpu_wheels/ (git-ignored) and print
# their total size. The GPU image already has torch, numpy, transformers, huggingface-hub,
# anyio, h11, click, httpx and typing-extensions; these are the rest of the server's imports.
# Versions are pinned to what this checkout's .venv runs, so the GPU run tests the same code.
#
#   scripts/fetch_gpu_wheels.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-gpu_wheels}
python=${PYTHON:-.venv/bin/python}
# the server: fastapi's and uvicorn's own stack
packages="fastapi starlette pydantic pydantic-core annotated-types typing-inspection annotated-doc
uvicorn websockets"
# kokoro (KModel) and what `import kokoro` runs: loguru, misaki (kokoro/__init__ imports its
# pipeline, which imports misaki.en and misaki.espeak), num2words (misaki.en; its docopt is for its command line only)
packages="$packages kokoro loguru misaki num2words addict"
pins=$("$python" - $packages <<'PY'
import importlib.metadata as metadata, sys
print(" ".join(f"{name}=={metadata.version(name)}" for name in sys.argv[1:]))
PY
)
rm -rf "$dest" && mkdir -p "$dest"
# shellcheck disable=SC2086  # one argument per pin
"$python" -m pip download --quiet --no-deps --dest "$dest" --python-version 3.12 \
    --implementation cp --abi cp312 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --only-binary=:all: $pins 2>&1 | { grep -v "^WARNING: Location" || true; }
ls -l "$dest"
du -cb "$dest"/*.whl | tail -1 | awk '{printf "total: %.2f MB in %d wheels\n", $1 / 1e6, n}' \
    n="$(ls "$dest"/*.whl | wc -l)"
