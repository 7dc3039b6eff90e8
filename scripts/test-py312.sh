#!/usr/bin/env bash
# The Python 3.12 test job: the SageMaker SDK (aws-sdk-sagemaker-runtime-http2) needs Python
# >= 3.12. Creates or reuses .venv312 with the `sagemaker` and `sagemaker-local` extras (no
# torch) and runs the tests that use the real SDK: its types, and the real client against the
# local emulator (sagemaker_local/) and a real tts-server; --noconftest keeps the server
# fixtures (torch, onnx) out of it.
# Idempotent: a second run only checks a stamp. Without any Python 3.12 it fails under CI=true
# and, elsewhere, says loudly that it skipped.
# Arguments are passed on to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Any 3.12.x: $PYTHON312, else the newest pyenv 3.12.*, else python3.12 on PATH.
find_python312() {
  if [ -n "${PYTHON312:-}" ]; then echo "$PYTHON312"; return; fi
  local root candidate
  root=$(pyenv root 2>/dev/null || true)
  if [ -n "$root" ]; then
    candidate=$(ls -d "$root"/versions/3.12.* 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$candidate" ] && [ -x "$candidate/bin/python" ]; then echo "$candidate/bin/python"; return; fi
  fi
  command -v python3.12 || true
}
python312=$(find_python312)
if [ -z "$python312" ] || ! "$python312" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "test-py312: no Python 3.12 found; CI must run the SageMaker SDK tests, failing" >&2
    exit 1
  fi
  echo "test-py312: SKIPPED: no Python 3.12 found (set PYTHON312); the SageMaker SDK tests did not run"
  exit 0
fi
echo "test-py312: $("$python312" --version) at $python312"
[ -x .venv312/bin/python ] || "$python312" -m venv .venv312
stamp=".venv312/.installed-$(cat pyproject.toml scripts/test-py312.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "test-py312: installing into .venv312 (log: .venv312/install.log)"
  if ! {
    .venv312/bin/python -m pip install -q --upgrade pip &&
      .venv312/bin/python -m pip install -q -e ".[sagemaker,sagemaker-local]" awscrt \
        pytest pytest-asyncio pytest-timeout websockets httpx \
        opentelemetry-api opentelemetry-sdk python-json-logger \
        starlette  # agent.turn's telemetry; agent.requests reads bodies with Starlette
  } >.venv312/install.log 2>&1; then
    cat .venv312/install.log
    exit 1
  fi
  rm -f .venv312/.installed-*
  touch "$stamp"
fi
# The end-to-end file starts the real tts-server with the main venv's interpreter (onnxruntime
# and the embedded model live there, not here).
export TTS_SERVER_PYTHON="${TTS_SERVER_PYTHON:-$PWD/.venv/bin/python}"
exec .venv312/bin/python -m pytest -q --noconftest -p no:cacheprovider \
  tests/tts_client/transports/test_sagemaker_sdk.py \
  tests/sagemaker_local/test_emulator.py tests/sagemaker_local/test_end_to_end.py "$@"
