"""Kill rates per module from a mutmut run (``make mutate``), one report per tier.

    python -m devtools.mutation_report --tier io [--mutants mutants] [--out docs/benchmarks]
    python -m devtools.mutation_report --tier edges --merge  # keep the rows no copy has now
    python -m devtools.mutation_report --patterns io   # the mutmut names of a tier's mutants

The modules come in four tiers (``TIERS``): ``contract``, the pure modules (wire messages,
validation, PCM helpers, segmenter), whose tests are fast; ``io``, the modules around sockets
(the client state machine, the server connection and readiness, the client session and
segment), whose tests run real servers; ``edges``, the newer modules with in-process tests (the
batch scheduler, audio encoding, the origin guard, the deploy plan and IAM policies); and
``serving``, those behind the server's routes (admission, the OpenAI routes, the ``/ws`` leg).
Reads the verdicts mutmut keeps beside each mutated file (``mutants/<module>.py.meta``), maps
their exit codes to statuses with mutmut's own table, and writes
``docs/benchmarks/mutation_<tier>.{md,json}``: per module the mutants made, killed (a test
failed or timed out), survived (tests ran and passed), not covered (no test ran the code) and
the kill rate, killed / (killed + survived + not covered); and the names of every surviving
mutant, so that ``docs/testing.md`` can judge each one.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from mutmut.stats import status_by_exit_code

from devtools.mutation_recheck import RECHECK, RUNNER_FAILED
from devtools.mutation_run import TIERS as GROUPS
from devtools.mutation_run import WORK, modules_of

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "suspicious"}
UNCOVERED = {"no tests"}
COLUMNS = ("mutants", "killed", "survived", "not_covered", "not_checked")
TIERS = {tier: modules_of(tier) for tier in GROUPS}
JUDGED = "## Survivors, judged by hand\n"  # kept when the table above is written again


def patterns(tier: str) -> list[str]:
    """mutmut's name patterns for every mutant of ``tier``: ``tts_client.session.*``."""
    return [module.removesuffix(".py").replace("/", ".") + ".*" for module in TIERS[tier]]


def module_of(meta: Path, root: Path) -> str:
    """``<group>/mutants/tts_protocol/client.py.meta`` -> ``tts_protocol/client.py``."""
    parts = meta.relative_to(root).parts
    if "mutants" in parts:
        parts = parts[len(parts) - parts[::-1].index("mutants") :]
    return "/".join(parts).removesuffix(".meta")


def status(exit_code: int | None) -> str:
    """mutmut's status for a mutant's exit code, but a failed test command is not a kill: mutmut
    reads 255 as a timeout, yet it is the worker's -1, and no test ran against the mutant (until
    ``devtools.mutation_recheck`` judges it)."""
    return "runner failed" if exit_code == RUNNER_FAILED else status_by_exit_code[exit_code]


def rechecked(meta: Path) -> dict[str, int]:
    """The verdicts ``devtools.mutation_recheck`` wrote beside ``meta``'s mutants, if any."""
    mutants = next((parent for parent in meta.parents if parent.name == "mutants"), None)
    recheck = mutants / RECHECK if mutants else None
    return json.loads(recheck.read_text()) if recheck and recheck.is_file() else {}


def tally(root: Path, tier: str) -> dict[str, Any]:
    """Counts per module of ``tier`` and the surviving mutants' names, from ``root``'s verdicts."""
    modules: dict[str, Any] = {}
    for meta in sorted(root.rglob("*.py.meta")):
        if module_of(meta, root) not in TIERS[tier]:
            continue
        verdicts = json.loads(meta.read_text())["exit_code_by_key"]
        verdicts |= {k: v for k, v in rechecked(meta).items() if verdicts.get(k) == RUNNER_FAILED}
        counts = Counter(status(code) for code in verdicts.values())
        killed = sum(counts[s] for s in KILLED)
        survived = sum(counts[s] for s in SURVIVED)
        uncovered = sum(counts[s] for s in UNCOVERED)
        judged = killed + survived + uncovered
        modules[module_of(meta, root)] = {
            "mutants": len(verdicts),
            "killed": killed,
            "survived": survived,
            "not_covered": uncovered,
            "not_checked": len(verdicts) - judged,
            "kill_rate": round(killed / judged, 3) if judged else None,
            "survivors": sorted(
                name for name, code in verdicts.items() if status(code) in SURVIVED | UNCOVERED
            ),
        }
    if not modules:
        raise SystemExit(f"no mutmut results for {tier} under {root}: run `make mutate` first")
    return modules


def markdown(modules: dict[str, Any], tier: str) -> str:
    """The report: one row per module, then a total."""
    lines = [
        f"# Mutation testing: kill rate per module, the {tier} tier",
        "",
        f"Made by `make mutate TIER={tier}` (mutmut);",
        f"`python -m devtools.mutation_report --tier {tier}` writes this file.",
        "Kill rate = killed / (killed + survived + not covered); not run: mutants the run did",
        "not reach or whose test command failed. The survivors are judged in",
        "[docs/testing.md](../testing.md).",
        "",
        "| module | mutants | killed | survived | not covered | not run | kill rate |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total = Counter[str]()
    for name, m in modules.items():
        rate = "n/a" if m["kill_rate"] is None else f"{m['kill_rate']:.1%}"
        lines.append(
            f"| `{name}` | {m['mutants']} | {m['killed']} | {m['survived']} "
            f"| {m['not_covered']} | {m['not_checked']} | {rate} |"
        )
        total.update({k: m[k] for k in COLUMNS})
    judged = total["killed"] + total["survived"] + total["not_covered"]
    rate = f"{total['killed'] / judged:.1%}" if judged else "n/a"
    lines.append(
        f"| **all** | {total['mutants']} | {total['killed']} | {total['survived']} "
        f"| {total['not_covered']} | {total['not_checked']} | {rate} |"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Tally a mutmut run and write the report."""
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation_report")
    chosen = parser.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--tier", choices=sorted(TIERS), help="write this tier's report")
    chosen.add_argument("--patterns", choices=sorted(TIERS), help="print its mutmut patterns")
    parser.add_argument("--mutants", type=Path, default=WORK)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the report's rows for modules whose group's copy is gone (run on another day)",
    )
    args = parser.parse_args(argv)
    if args.patterns:
        print(" ".join(patterns(args.patterns)))
        return
    modules = tally(args.mutants, args.tier)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"mutation_{args.tier}"
    if args.merge and stem.with_suffix(".json").is_file():
        earlier = json.loads(stem.with_suffix(".json").read_text())
        kept = {name: row for name, row in earlier.items() if name in TIERS[args.tier]}
        modules = kept | modules  # a module no group names any more is gone from the report
    stem.with_suffix(".json").write_text(json.dumps(modules, indent=2) + "\n")
    report = markdown(modules, args.tier)
    md = stem.with_suffix(".md")
    judged = md.read_text().partition(JUDGED)[2] if md.is_file() else ""
    md.write_text(report + (f"\n{JUDGED}{judged}" if judged else ""))
    print(report, end="")


if __name__ == "__main__":
    main()
