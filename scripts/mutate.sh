#!/usr/bin/env bash
# Mutation testing (issue 16): mutmut plants one-line bugs in the modules that carry the
# contract ([tool.mutmut] in pyproject.toml lists them and the tests that guard them), runs the
# tests that cover each mutated function against it, then writes the kill rate per module to
# docs/benchmarks/mutation_<tier>.{md,json}. Not part of `make test`.
#   scripts/mutate.sh contract   # the pure modules: about 10 minutes on 2 cores
#   scripts/mutate.sh io         # the modules around sockets: about 2 hours on 2 cores
#   scripts/mutate.sh            # both, one after the other
# MUTATE_JOBS sets the parallel workers (default: the number of cores). The verdicts stay in
# mutants/ between runs; a tier's run re-checks all of its mutants.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
tiers=("$@")
[[ ${#tiers[@]} -gt 0 ]] || tiers=(contract io)
for tier in "${tiers[@]}"; do
    read -r -a patterns <<<"$(.venv/bin/python -m bench.mutation_report --patterns "$tier")"
    .venv/bin/mutmut run --max-children "${MUTATE_JOBS:-$(nproc)}" "${patterns[@]}"
    .venv/bin/python -m bench.mutation_report --tier "$tier"
done
