#!/usr/bin/env bash
# Mutation testing (issue 16): devtools/mutation_run.py runs mutmut over a tier of the modules that
# carry the contract, each group in its own copy under build/mutate/ ([tool.mutmut] in
# pyproject.toml holds the shared settings), then devtools/mutation_report.py writes the kill rate
# per module to docs/benchmarks/mutation_<tier>.{md,json}. Not part of `make test`.
#   scripts/mutate.sh contract   # the pure modules against their unit tests: ~10 min, 2 cores
#   scripts/mutate.sh io         # each I/O module against its own tests: ~3.5 h on 2 cores
#   scripts/mutate.sh edges      # scheduler, origins, audio encoding, deploy plan and IAM
#   scripts/mutate.sh serving    # admission, the OpenAI routes, the agent's /ws leg
#   (one group: .venv/bin/python -m devtools.mutation_run io --group session)
#   scripts/mutate.sh            # all four
# MUTATE_JOBS sets the parallel workers (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
tiers=("$@")
[[ ${#tiers[@]} -gt 0 ]] || tiers=(contract io edges serving)
for tier in "${tiers[@]}"; do
    .venv/bin/python -m devtools.mutation_run "$tier" --jobs "${MUTATE_JOBS:-$(nproc)}"
    .venv/bin/python -m devtools.mutation_report --tier "$tier"
done
