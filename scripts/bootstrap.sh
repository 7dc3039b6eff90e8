#!/usr/bin/env bash
# Create or reuse .venv/ and install the project. Idempotent: a second run only checks a stamp.
#   scripts/bootstrap.sh run   what `voice-agent dev` runs: the ONNX TTS server, the agent,
#                              listening (extras tts, agent, listen); no torch, no test tools
#   scripts/bootstrap.sh       everything (`make test`, `make bench`, `make audit`): the PyTorch
#                              engine, OTLP and the dev tools too
# pipecat-ai is installed with --no-deps, after the project: listening needs only the Smart Turn
# model file inside its wheel (agent/listening/turn_model.py), and its dependencies must not
# move ours.
# torch is installed first, as the CPU build (torch==X+cpu) from PyTorch's CPU wheel index, so
# that pip never resolves a multi-GB CUDA build for the `torch>=2.10` floor. Where that index
# cannot be reached, the same CPU build is looked for where pip is configured to look (this
# machine keeps it on disk); if it is nowhere, the script stops and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
torch_version=2.13.0
cpu_index=https://download.pytorch.org/whl/cpu
profile=${1:-all}
case "$profile" in
  run) extras="tts,agent,listen" ;;
  all) extras="tts,torch,agent,listen,otlp,dev" ;;
  *) echo "usage: scripts/bootstrap.sh [run|all]" >&2; exit 2 ;;
esac
hash=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ -f ".venv/.installed-all-$hash" ] || [ -f ".venv/.installed-$profile-$hash" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install -q)
"${pip[@]}" --upgrade pip
if [ "$profile" = all ]; then
  # Linux x86_64 is where PyPI's torch is a CUDA build; the CPU index names its build +cpu.
  # Elsewhere (aarch64, macOS) PyPI's torch is the CPU build.
  torch="torch==$torch_version"
  if [ "$(uname -sm)" = "Linux x86_64" ]; then torch="$torch+cpu"; fi
  if .venv/bin/python -c "import urllib.request as u; u.urlopen('$cpu_index/torch/', timeout=10)" \
    2>/dev/null; then
    "${pip[@]}" --extra-index-url "$cpu_index" "$torch"
  else
    echo "bootstrap: PyTorch's CPU wheel index ($cpu_index) cannot be reached;" \
      "looking for $torch where pip is configured to look" >&2
    if ! "${pip[@]}" "$torch"; then
      echo "bootstrap: no $torch found: reach $cpu_index, or put its wheel where pip looks" \
        "(pip config list); a plain 'pip install torch' would fetch a CUDA build" >&2
      exit 1
    fi
  fi
fi
"${pip[@]}" -e ".[$extras]"
"${pip[@]}" --no-deps "pipecat-ai==1.14.0"
rm -f .venv/.installed-*
touch ".venv/.installed-$profile-$hash"
