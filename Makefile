.PHONY: run test

# Set up .venv/ and start the local stack on 127.0.0.1 (embedded CPU model, no network).
run:
	scripts/run.sh

# Set up .venv/ and run lint plus every test.
test:
	scripts/test.sh
