"""Mutants whose test command failed in mutmut (255), checked again in a fresh pytest
(``devtools/mutation_recheck.py``), and the report reading those verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.mutation_recheck import RECHECK, main, recheck
from devtools.mutation_report import tally

# A module as mutmut's trampolines make it: which code runs depends on MUTANT_UNDER_TEST.
MODULE = """
import os

def x_double(n):
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant == "mod.x_double__mutmut_1":
        return n + n + 1  # caught by the tests
    if mutant == "mod.x_double__mutmut_2":
        raise RuntimeError("broken")  # breaks the test module at import: caught too
    return n * 2  # mutant 3 changes nothing the tests see
"""
TESTS = """
import pytest
from mod import x_double

AT_IMPORT = x_double(1)

@pytest.mark.parametrize("word", ["w\\xf6rld", "plain"])
def test_double(word):
    assert x_double(len(word)) == 2 * len(word)
"""
MUTANTS = ("mod.x_double__mutmut_1", "mod.x_double__mutmut_2", "mod.x_double__mutmut_3")


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A group's copy as devtools.mutation_run leaves it: every mutant's worker failed (255)."""
    root = tmp_path_factory.mktemp("group")
    (root / "pyproject.toml").write_text(
        '[tool.mutmut]\npytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly"]\n'
    )
    mutants = root / "mutants"
    mutants.mkdir()
    (mutants / "mod.py").write_text(MODULE)
    (mutants / "test_mod.py").write_text(TESTS)
    tests = ["test_mod.py::test_double[w\\xf6rld]", "test_mod.py::test_double[plain]"]
    stats = {"tests_by_mangled_function_name": {"mod.x_double": tests}}
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    verdicts = dict.fromkeys(MUTANTS, 255) | {"mod.x_double__mutmut_4": 1}
    (mutants / "mod.py.meta").write_text(json.dumps({"exit_code_by_key": verdicts}))
    return root


def test_a_fresh_pytest_tells_a_kill_from_a_survivor(group: Path) -> None:
    """The escaped test id is selected; an import-time failure is a kill; only 255s are run."""
    assert recheck(group / "mutants") == dict(zip(MUTANTS, (1, 1, 0), strict=True))


def test_tests_that_fail_without_the_mutant_judge_nothing(group: Path) -> None:
    calls: list[str] = []

    def failing(mutants: Path, tests: list[str], mutant: str) -> int:
        calls.append(mutant)
        return 1

    assert recheck(group / "mutants", failing) == {}
    assert calls == [""]  # the clean run, once for the function's tests


def test_the_report_reads_the_rechecked_verdicts_over_mutmuts(tmp_path: Path) -> None:
    mutants = tmp_path / "normalize" / "mutants"
    meta = mutants / "tts_server" / "normalize" / "web.py.meta"
    meta.parent.mkdir(parents=True)
    verdicts = {"w_1": 255, "w_2": 255, "w_3": 255, "w_4": 0}
    meta.write_text(json.dumps({"exit_code_by_key": verdicts}))
    # w_3 was not rechecked (its tests fail without it); w_4 was not a failed run
    (mutants / RECHECK).write_text(json.dumps({"w_1": 1, "w_2": 0, "w_4": 1}))
    web = tally(tmp_path, "edges")["tts_server/normalize/web.py"]
    assert (web["killed"], web["survived"], web["not_checked"]) == (1, 2, 1)
    assert web["survivors"] == ["w_2", "w_4"]


def test_main_writes_the_verdicts_beside_each_group_that_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    meta = work / "memory" / "mutants" / "agent" / "core" / "memory.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"m_1": 1}}))
    main(["edges", "--work", str(work)])
    assert json.loads((work / "memory" / "mutants" / RECHECK).read_text()) == {}
    assert capsys.readouterr().out == "memory: 0 rechecked, 0 killed\n"
