"""Check again, each in a fresh pytest, the mutants whose test command failed in mutmut (255).

    python -m devtools.mutation_recheck edges [--group normalize]

mutmut's worker turns pytest's exit 4 (usage error) into 255, which mutmut's table calls a
timeout. It means one of two things. The mutant broke a test module as it was imported (a
module-level ``encode(...)`` that raises): the mutant is caught, though no test ran. Or pytest
could not select a test whose id it escaped: nothing was checked. A fresh process tells them
apart: the mutant's tests run first without it (they must pass), then with it. The verdicts,
mutmut's exit codes (0: survived, 1: killed), go to ``<group>/mutants/recheck.json``, which
``devtools.mutation_report`` reads over mutmut's own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from devtools.mutation_run import TIERS, WORK

RUNNER_FAILED = 255
RECHECK = "recheck.json"
_MUTANT_SUFFIX = re.compile(r"__mutmut_\d+$")


def failed_runs(mutants: Path) -> list[str]:
    """The mutants under ``mutants`` whose worker's test command failed."""
    return sorted(
        name
        for meta in mutants.rglob("*.py.meta")
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()
        if code == RUNNER_FAILED
    )


def tests_of(mutants: Path, mutant: str) -> list[str]:
    """The tests mutmut runs against ``mutant``: those that call its function."""
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    return sorted(stats["tests_by_mangled_function_name"][_MUTANT_SUFFIX.sub("", mutant)])


def pytest_command(mutants: Path, tests: list[str]) -> list[str]:
    """pytest as mutmut's worker runs it, with the group's ``pytest_add_cli_args``."""
    settings = tomllib.loads((mutants.parent / "pyproject.toml").read_text())["tool"]["mutmut"]
    extra = settings.get("pytest_add_cli_args", [])
    return [sys.executable, "-m", "pytest", "--rootdir=.", "-x", "-q", *tests, *extra]


def run(mutants: Path, tests: list[str], mutant: str) -> int:
    """pytest's exit status for ``tests`` with ``mutant`` active ("": none)."""
    env = os.environ | {"MUTANT_UNDER_TEST": mutant}
    command = pytest_command(mutants, tests)
    return subprocess.run(command, cwd=mutants, env=env, capture_output=True).returncode


def recheck(
    mutants: Path, run_tests: Callable[[Path, list[str], str], int] = run
) -> dict[str, int]:
    """A verdict per failed run: 1 if its tests fail with it, 0 if they pass; a mutant whose
    tests fail without it too is left out (nothing can be said)."""
    verdicts: dict[str, int] = {}
    clean: dict[tuple[str, ...], bool] = {}  # tests -> they pass without a mutant
    for mutant in failed_runs(mutants):
        tests = tests_of(mutants, mutant)
        if tuple(tests) not in clean:
            clean[tuple(tests)] = run_tests(mutants, tests, "") == 0
        if clean[tuple(tests)]:
            verdicts[mutant] = 0 if run_tests(mutants, tests, mutant) == 0 else 1
    return verdicts


def main(argv: list[str] | None = None) -> None:
    """Recheck every group of a tier that has run, one after another."""
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation_recheck")
    parser.add_argument("tier", choices=sorted(TIERS))
    parser.add_argument("--group", help="only this group of the tier")
    parser.add_argument("--work", type=Path, default=WORK)
    args = parser.parse_args(argv)
    for group in TIERS[args.tier]:
        mutants = args.work / group.name / "mutants"
        if args.group not in (None, group.name) or not mutants.is_dir():
            continue
        verdicts = recheck(mutants)
        (mutants / RECHECK).write_text(json.dumps(verdicts, indent=1, sort_keys=True))
        killed = sum(verdicts.values())
        print(f"{group.name}: {len(verdicts)} rechecked, {killed} killed")


if __name__ == "__main__":
    main()
