#!/usr/bin/env bash
# Create or reuse .venv/ and install the project with every extra. Idempotent: a second run
# only checks a stamp. torch is installed first, pinned to the CPU wheel on this machine's
# disk, so that pip never resolves a multi-GB CUDA build for the `torch>=2.10` requirement.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=".venv/.installed-$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[tts,agent,listen,otlp,dev]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
