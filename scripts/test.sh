#!/usr/bin/env bash
# The test job: set up, lint, run the whole suite, then the Python 3.12 (SageMaker SDK) job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q "$@"
if [ -x scripts/test-py312.sh ]; then
  scripts/test-py312.sh
fi
