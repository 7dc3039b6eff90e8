.PHONY: run test bench bench-page audit mutate

# Set up .venv/ and start the local stack on 127.0.0.1 (embedded CPU model, no network).
run:
	scripts/run.sh

# Set up .venv/ and run lint plus every test.
test:
	scripts/test.sh

# Measure the local stack (bench/latency/agent_latency.py, about 5 minutes on 2 cores);
# writes docs/benchmarks/agent_latency.*
bench:
	scripts/bootstrap.sh
	.venv/bin/voice-agent bench

# What the voice chat page plays, in headless Chromium (bench/page, about 8 minutes on 2 cores):
# typed first audio, spoken voice to voice, every reply's gaps; writes docs/benchmarks/page.*
bench-page:
	scripts/bootstrap.sh
	.venv/bin/python -m bench.page

# Dependency floors, vulnerability scan and SBOMs (devtools/audit.py; fails closed without a
# vulnerability service)
audit:
	scripts/bootstrap.sh
	.venv/bin/voice-agent audit $(AUDIT_FLAGS)

# Mutation testing of the contract modules (mutmut; not in `make test`): TIER=contract (the pure
# modules, ~10 min), TIER=io (around sockets, ~3.5 h), or both; writes docs/benchmarks/mutation_*
mutate:
	scripts/mutate.sh $(TIER)
