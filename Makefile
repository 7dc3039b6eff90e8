.PHONY: run test bench bench-page audit mutate

# Ctrl+C or SIGTERM: the command says its one line and ends by the signal (status 130 or 143).
# STOPPED runs it so that make adds no line of its own: the recipe's shell outlives the signal
# (a no-op trap; the command gets the default handlers) and takes the stop as no failure; make,
# which got the terminal's Ctrl+C too, then ends by it (docs/operations.md, "Stopping").
STOPPED = trap : INT TERM;
STOPPED_OK = || { s=$$?; [ $$s -eq 130 ] || [ $$s -eq 143 ] || exit $$s; }

# Set up .venv/ and start the local stack on 127.0.0.1 (embedded CPU model, no network);
# ARGS go to `voice-agent dev` (e.g. ARGS="--port 8001 --tts-port 8081").
run:
	@$(STOPPED) scripts/run.sh $(ARGS) $(STOPPED_OK)

# Set up .venv/ and run lint plus every test.
test:
	scripts/test.sh

# Measure the local stack (bench/latency/agent_latency.py, about 5 minutes on 2 cores);
# writes docs/benchmarks/agent_latency.*
bench:
	scripts/bootstrap.sh
	@$(STOPPED) .venv/bin/voice-agent bench $(STOPPED_OK)

# What the voice chat page plays, in headless Chromium (bench/page, about 8 minutes on 2 cores):
# typed first audio, spoken voice to voice, every reply's gaps; writes docs/benchmarks/page.*
bench-page:
	scripts/bootstrap.sh
	.venv/bin/python -m bench.page

# Dependency floors, vulnerability scan and SBOMs (devtools/audit.py; fails closed without a
# vulnerability service)
audit:
	scripts/bootstrap.sh
	@$(STOPPED) .venv/bin/voice-agent audit $(AUDIT_FLAGS) $(STOPPED_OK)

# Mutation testing of the contract modules (mutmut; not in `make test`): TIER=contract (the pure
# modules, ~10 min), TIER=io (around sockets, ~3.5 h), or both; writes docs/benchmarks/mutation_*
mutate:
	scripts/mutate.sh $(TIER)
