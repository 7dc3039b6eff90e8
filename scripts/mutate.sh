#!/usr/bin/env bash
# Mutation testing (issue 16): mutmut plants one-line bugs in the modules that carry the
# contract ([tool.mutmut] in pyproject.toml lists them and the tests that guard them), runs
# those tests against each, then writes the kill rate per module to
# docs/benchmarks/mutation.{md,json}. About ten minutes on 2 cores; not part of `make test`.
# MUTATE_JOBS sets the parallel workers (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
rm -rf mutants
.venv/bin/mutmut run --max-children "${MUTATE_JOBS:-$(nproc)}"
.venv/bin/python -m bench.mutation_report
