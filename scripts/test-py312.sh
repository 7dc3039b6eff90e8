#!/usr/bin/env bash
# The Python 3.12 test job: the SageMaker SDK (aws-sdk-sagemaker-runtime-http2) needs Python
# >= 3.12. Creates or reuses .venv312 with the `sagemaker` extra (no torch) and runs the tests
# that use the real SDK types; --noconftest keeps the server fixtures (torch, onnx) out of it.
# Idempotent: a second run only checks a stamp. Skips with exit 0 when 3.12 is not installed.
# Arguments are passed on to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python312="${PYTHON312:-$(pyenv root 2>/dev/null || echo /nonexistent)/versions/3.12.1/bin/python}"
if [ ! -x "$python312" ]; then
  echo "test-py312: Python 3.12 not found at $python312; skipping the SageMaker SDK tests"
  exit 0
fi
[ -x .venv312/bin/python ] || "$python312" -m venv .venv312
stamp=".venv312/.installed-$(cat pyproject.toml scripts/test-py312.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "test-py312: installing into .venv312 (log: .venv312/install.log)"
  if ! {
    .venv312/bin/python -m pip install -q --upgrade pip &&
      .venv312/bin/python -m pip install -q -e ".[sagemaker]" awscrt \
        pytest pytest-asyncio pytest-timeout websockets
  } >.venv312/install.log 2>&1; then
    cat .venv312/install.log
    exit 1
  fi
  rm -f .venv312/.installed-*
  touch "$stamp"
fi
exec .venv312/bin/python -m pytest -q --noconftest -p no:cacheprovider \
  tests/tts_client/transports/test_sagemaker_sdk.py "$@"
