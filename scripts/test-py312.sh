#!/usr/bin/env bash
# The Python 3.12 test job: the SageMaker bidirectional-stream SDK needs Python >= 3.12.
# Creates (or reuses) .venv312 with the `sagemaker` extra and runs the tests that use the real
# SDK types. Skips with exit 0 when Python 3.12 is not installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv312"
PYTHON312="${PYTHON312:-$(pyenv root 2>/dev/null || echo /nonexistent)/versions/3.12.1/bin/python}"
TESTS=("${@:-tests/tts_client/test_sagemaker_sdk.py}")

if [[ ! -x "$PYTHON312" ]]; then
    echo "test-py312: Python 3.12 not found at $PYTHON312; skipping the SageMaker SDK tests"
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON312" -m venv "$VENV"
fi
STAMP="$VENV/.installed"
if [[ ! -f "$STAMP" || "$ROOT/pyproject.toml" -nt "$STAMP" ]]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[sagemaker]" \
        pytest pytest-asyncio pytest-timeout websockets
    touch "$STAMP"
fi

cd "$ROOT"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}"
