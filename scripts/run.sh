#!/usr/bin/env bash
# The main job: set up, then run the local stack on embedded defaults (no AWS, no network).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh run
exec .venv/bin/voice-agent dev "$@"
