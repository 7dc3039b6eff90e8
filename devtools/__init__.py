"""Developer tools that are not benchmarks: the dependency audit and mutation testing.

Nothing in the runtime packages imports this package; ``voice-agent audit`` imports ``audit``
only when it runs.

- ``audit``: ``voice-agent audit`` (``make audit``), dependency floors, a vulnerability scan and
  an SBOM per environment;
- ``mutation_run``: ``python -m devtools.mutation_run <tier> [--group G]`` (``make mutate``,
  ``scripts/mutate.sh``), mutmut over one tier of modules, each group in its own copy;
- ``mutation_report``: ``python -m devtools.mutation_report --tier <tier>``, the kill rate per
  module, written to ``docs/benchmarks/mutation_<tier>.{md,json}``.
"""
