"""Reliability benchmark: a soak of many turns and a fault matrix, agent and TTS in one process.

- ``run``: ``python -m bench.reliability.run [--quick]``, the benchmark: the soak, then the
  fault matrix; exits 1 when a bound is exceeded;
- ``faults``: the fault matrix, each fault injected by a proxy at a turn's first audio;
- ``client``: the two servers in this process and one turn over SSE as a client sees it;
- ``stats``: process resources, a soak phase's figures, a fault's outcome, the bounds;
- ``report``: ``reliability.json`` and ``reliability.md``.
"""
