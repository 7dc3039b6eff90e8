"""Kill rates per module from a mutmut run (``make mutate``).

    python -m bench.mutation_report [--mutants mutants] [--out docs/benchmarks]

Reads the verdicts mutmut keeps beside each mutated file (``mutants/<module>.py.meta``), maps
their exit codes to statuses with mutmut's own table, and writes
``docs/benchmarks/mutation.{md,json}``: per module the mutants made, killed (a test failed or
timed out), survived (tests ran and passed), not covered (no test ran the code) and the kill
rate, killed / (killed + survived + not covered); and the names of every surviving mutant, so
that ``docs/testing.md`` can judge each one.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from mutmut.stats import status_by_exit_code

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "suspicious"}
UNCOVERED = {"no tests"}


def module_of(meta: Path, root: Path) -> str:
    """``mutants/tts_protocol/client.py.meta`` -> ``tts_protocol/client.py``."""
    return meta.relative_to(root).as_posix().removesuffix(".meta")


def tally(root: Path) -> dict[str, Any]:
    """Counts per module and the surviving mutants' names, from every ``.meta`` under ``root``."""
    modules: dict[str, Any] = {}
    for meta in sorted(root.rglob("*.py.meta")):
        verdicts = json.loads(meta.read_text())["exit_code_by_key"]
        counts = Counter(status_by_exit_code[code] for code in verdicts.values())
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
                name
                for name, code in verdicts.items()
                if status_by_exit_code[code] in SURVIVED | UNCOVERED
            ),
        }
    if not modules:
        raise SystemExit(f"no mutmut results under {root}: run `make mutate` first")
    return modules


def markdown(modules: dict[str, Any]) -> str:
    """The report: one row per module, then a total."""
    lines = [
        "# Mutation testing: kill rate per module",
        "",
        "Made by `make mutate` (mutmut; `python -m bench.mutation_report` writes this file).",
        "Kill rate = killed / (killed + survived + not covered). The survivors are judged in",
        "[docs/testing.md](../testing.md).",
        "",
        "| module | mutants | killed | survived | not covered | kill rate |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    total = Counter[str]()
    for name, m in modules.items():
        rate = "n/a" if m["kill_rate"] is None else f"{m['kill_rate']:.1%}"
        lines.append(
            f"| `{name}` | {m['mutants']} | {m['killed']} | {m['survived']} "
            f"| {m['not_covered']} | {rate} |"
        )
        total.update({k: m[k] for k in ("mutants", "killed", "survived", "not_covered")})
    judged = total["killed"] + total["survived"] + total["not_covered"]
    rate = f"{total['killed'] / judged:.1%}" if judged else "n/a"
    lines.append(
        f"| **all** | {total['mutants']} | {total['killed']} | {total['survived']} "
        f"| {total['not_covered']} | {rate} |"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Tally a mutmut run and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.mutation_report")
    parser.add_argument("--mutants", type=Path, default=Path("mutants"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    modules = tally(args.mutants)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mutation.json").write_text(json.dumps(modules, indent=2) + "\n")
    report = markdown(modules)
    (args.out / "mutation.md").write_text(report)
    print(report, end="")


if __name__ == "__main__":
    main()
