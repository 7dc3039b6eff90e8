#!/usr/bin/env bash
# The test job: set up, lint, run the whole suite, then the Python 3.12 (SageMaker SDK) job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  # The browser tests drive Debian's Chromium (nothing can download a browser build here).
  if [ "$(id -u)" -ne 0 ]; then
    echo "test: the browser tests need Debian's chromium and chromium-driver; install them" >&2
    exit 1
  fi
  apt-get update -qq && apt-get install -y -qq chromium chromium-driver fonts-dejavu-core fonts-liberation >/dev/null
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q --durations=25 "$@"  # the slowest, to keep the suite fast
if [ -x scripts/test-py312.sh ]; then
  scripts/test-py312.sh
fi
