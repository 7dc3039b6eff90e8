"""The mutation report: mutmut's verdicts per module, tallied with mutmut's own status table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.mutation_report import main, markdown, tally


def _meta(root: Path, module: str, verdicts: dict[str, int | None]) -> None:
    path = root / f"{module}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": verdicts, "durations_by_key": {}}))


@pytest.fixture
def mutants(tmp_path: Path) -> Path:
    root = tmp_path / "mutants"
    # 1 failed the tests, 36 timed out, 0 survived, 33 ran no test, None was never checked
    _meta(root, "tts_protocol/client.py", {"c_1": 1, "c_2": 1, "c_3": 36, "c_4": 0, "c_5": 33})
    _meta(root, "agent/segmenter/sentences.py", {"s_1": 1, "s_2": None})
    return root


def test_counts_and_rate_per_module(mutants: Path) -> None:
    modules = tally(mutants)
    client = modules["tts_protocol/client.py"]
    assert (client["mutants"], client["killed"], client["survived"]) == (5, 3, 1)
    assert client["not_covered"] == 1 and client["not_checked"] == 0
    assert client["kill_rate"] == 0.6
    assert client["survivors"] == ["c_4", "c_5"]
    sentences = modules["agent/segmenter/sentences.py"]
    assert (sentences["killed"], sentences["not_checked"], sentences["kill_rate"]) == (1, 1, 1.0)


def test_markdown_has_a_row_per_module_and_the_total(mutants: Path) -> None:
    report = markdown(tally(mutants))
    assert "| `tts_protocol/client.py` | 5 | 3 | 1 | 1 | 60.0% |" in report
    assert "| **all** | 7 | 4 | 1 | 1 | 66.7% |" in report


def test_main_writes_both_files(mutants: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    main(["--mutants", str(mutants), "--out", str(out)])
    assert json.loads((out / "mutation.json").read_text())["tts_protocol/client.py"]["killed"] == 3
    assert (out / "mutation.md").read_text().startswith("# Mutation testing")


def test_no_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="run `make mutate` first"):
        tally(tmp_path)
