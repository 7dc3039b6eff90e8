"""The mutation report: mutmut's verdicts per module, tallied with mutmut's own status table."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from devtools.mutation_report import JUDGED, TIERS, main, markdown, patterns, tally
from devtools.mutation_run import TIERS as GROUPS
from devtools.mutation_run import prepare

LEG = Path(__file__).resolve().parents[2] / "agent" / "leg"


def _meta(root: Path, module: str, verdicts: dict[str, int | None]) -> None:
    path = root / f"{module}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": verdicts, "durations_by_key": {}}))


@pytest.fixture
def mutants(tmp_path: Path) -> Path:
    root = tmp_path / "mutants"
    # 1 failed the tests, 36 timed out, 0 survived, 33 ran no test, None was never checked
    _meta(root, "tts_protocol/client.py", {"c_1": 1, "c_2": 1, "c_3": 36, "c_4": 0, "c_5": 33})
    # 255: the worker's test command failed (pytest could not select the tests): not a kill
    _meta(root, "tts_server/health.py", {"h_1": 1, "h_2": None, "h_3": 255})
    _meta(root, "agent/segmenter/sentences.py", {"s_1": 0})  # the other tier: not in io's report
    return root


def test_counts_and_rate_per_module(mutants: Path) -> None:
    modules = tally(mutants, "io")
    assert set(modules) == {"tts_protocol/client.py", "tts_server/health.py"}
    client = modules["tts_protocol/client.py"]
    assert (client["mutants"], client["killed"], client["survived"]) == (5, 3, 1)
    assert client["not_covered"] == 1 and client["not_checked"] == 0
    assert client["kill_rate"] == 0.6
    assert client["survivors"] == ["c_4", "c_5"]
    health = modules["tts_server/health.py"]
    assert (health["killed"], health["not_checked"], health["kill_rate"]) == (1, 2, 1.0)
    assert tally(mutants, "contract")["agent/segmenter/sentences.py"]["survived"] == 1


def test_markdown_has_a_row_per_module_and_the_total(mutants: Path) -> None:
    report = markdown(tally(mutants, "io"), "io")
    assert report.startswith("# Mutation testing: kill rate per module, the io tier")
    assert "| `tts_protocol/client.py` | 5 | 3 | 1 | 1 | 0 | 60.0% |" in report
    assert "| `tts_server/health.py` | 3 | 1 | 0 | 0 | 2 | 100.0% |" in report
    assert "| **all** | 8 | 4 | 1 | 1 | 2 | 66.7% |" in report


def test_main_writes_both_files(mutants: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    main(["--tier", "io", "--mutants", str(mutants), "--out", str(out)])
    verdicts = json.loads((out / "mutation_io.json").read_text())
    assert verdicts["tts_protocol/client.py"]["killed"] == 3
    assert (out / "mutation_io.md").read_text().startswith("# Mutation testing")


def test_merge_keeps_the_rows_of_groups_run_another_day(mutants: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    row = {"mutants": 9, "killed": 9, "survived": 0, "not_covered": 0, "not_checked": 0}
    row |= {"kill_rate": 1.0, "survivors": []}
    earlier = {"tts_client/segment.py": row, "tts_server/health.py": row}
    (out / "mutation_io.json").write_text(json.dumps(earlier))
    main(["--tier", "io", "--mutants", str(mutants), "--out", str(out), "--merge"])
    merged = json.loads((out / "mutation_io.json").read_text())
    assert merged["tts_client/segment.py"] == row  # no copy of it now: kept
    assert merged["tts_server/health.py"]["mutants"] == 3  # this run's verdicts
    main(["--tier", "io", "--mutants", str(mutants), "--out", str(out)])  # no merge: this run
    assert "tts_client/segment.py" not in json.loads((out / "mutation_io.json").read_text())


def test_patterns_name_every_mutant_of_a_tier(capsys: pytest.CaptureFixture[str]) -> None:
    assert "tts_client.session.*" in patterns("io")
    assert len(patterns("contract")) == len(TIERS["contract"])
    main(["--patterns", "contract"])
    assert capsys.readouterr().out.split() == patterns("contract")


def test_no_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="run `make mutate` first"):
        tally(tmp_path, "io")


def test_the_tiers_cover_the_twenty_contract_modules_and_pyproject_leaves_them_to_the_groups(
    tmp_path: Path,
) -> None:
    assert len(set(TIERS["contract"] + TIERS["io"])) == 20  # the session in six since issue 52
    assert {"agent/leg/messages.py", "agent/leg/voice_input.py", "tts_protocol/voices.py"} <= set(
        TIERS["contract"]
    )
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    shared = tomllib.loads(pyproject.read_text())["tool"]["mutmut"]
    assert "only_mutate" not in shared
    (group,) = [g for g in GROUPS["io"] if g.name == "client"]
    copy = prepare(group, tmp_path)
    config = tomllib.loads((copy / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == ["tts_protocol/client.py"]
    assert config["pytest_add_cli_args_test_selection"] == ["tests/tts_protocol/test_client.py"]
    assert (copy / "tts_protocol" / "client.py").is_file()


def test_the_newer_modules_are_in_the_edges_and_serving_tiers_with_their_tests() -> None:
    assert set(TIERS["edges"]) == {
        "tts_server/engines/scheduler.py",
        "tts_server/engines/windows.py",
        "tts_server/engines/pace.py",
        "tts_server/engines/onnx/lanes.py",
        "tts_server/openai_api/audio_encoding.py",
        "agent/doors/origins.py",
        "deploy/iam.py",
        "deploy/plan.py",
        "tts_server/normalize/clock.py",
        "tts_server/normalize/context.py",
        "tts_server/normalize/normalizer.py",
        "tts_server/normalize/numbers.py",
        "tts_server/normalize/quantities.py",
        "tts_server/normalize/units.py",
        "tts_server/normalize/web.py",
        "tts_server/normalize/words.py",
        "agent/listening/endpointer.py",
        "agent/listening/listener.py",
        "agent/core/playback.py",
        "agent/listening/vad.py",
        "agent/listening/whisper.py",
        "agent/listening/fitted_window.py",
        "agent/core/memory.py",
        "agent/core/factory.py",
        "agent/core/tool_calls.py",
    }
    assert set(TIERS["serving"]) == {
        "tts_server/admission.py",
        "tts_server/openai_api/bodies.py",
        "tts_server/openai_api/routes.py",
        "tts_server/openai_api/speech_request.py",
        "agent/leg/socket.py",
        "agent/leg/dialogue.py",
        "agent/leg/turns.py",
        "agent/leg/voice_input.py",
        "agent/leg/reply_hold.py",
        "agent/leg/hooks.py",
        "agent/leg/sse.py",
        "agent/leg/agui.py",
        "agent/leg/agui_frames.py",
        "agent/leg/agui_input.py",
        "agent/leg/agui_socket.py",
        "agent/doors/agui.py",
        "agent/leg/continuation.py",
        "tts_server/engines/onnx/split.py",
        "tts_server/engines/onnx/norms.py",
        "tts_server/timing.py",
        "tts_server/engines/timings.py",
    }
    leg = {str(path.relative_to(Path(__file__).resolve().parents[2])) for path in LEG.glob("*.py")}
    mutated = {module for tier in TIERS.values() for module in tier}
    assert leg - {"agent/leg/__init__.py"} - mutated == set()  # every leg module in a group
    root = Path(__file__).resolve().parents[2]
    shared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    for tier in ("edges", "serving"):
        for group in GROUPS[tier]:
            assert all((root / module).is_file() for module in group.modules), group.name
            assert all((root / tests).exists() for tests in group.tests), group.name
            assert all(module.split("/")[0] in shared["source_paths"] for module in group.modules)
    names = [g.name for tier in GROUPS.values() for g in tier]
    assert len(names) == len(set(names))  # each group has its own copy under build/mutate/


def test_a_merge_drops_the_rows_of_modules_no_group_names_and_keeps_the_judgments(
    mutants: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    row = {"mutants": 1, "killed": 1, "survived": 0, "not_covered": 0, "not_checked": 0}
    row |= {"kill_rate": 1.0, "survivors": []}
    (out / "mutation_io.json").write_text(json.dumps({"agent/ws.py": row}))  # a stale name
    (out / "mutation_io.md").write_text(f"old table\n\n{JUDGED}- c_4: equivalent, because\n")
    main(["--tier", "io", "--mutants", str(mutants), "--out", str(out), "--merge"])
    assert "agent/ws.py" not in json.loads((out / "mutation_io.json").read_text())
    written = (out / "mutation_io.md").read_text()
    assert "old table" not in written and "agent/ws.py" not in written
    assert written.endswith(f"{JUDGED}- c_4: equivalent, because\n")


def test_mutation_runs_put_the_tests_that_load_the_real_model_last() -> None:
    root = Path(__file__).resolve().parents[2]
    shared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert "--real-model-last" in shared["pytest_add_cli_args"]
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    tests = ["tests/tts_server/test_openai_api.py"]
    listed = subprocess.run(
        [*collect, "--real-model-last", *tests], cwd=root, capture_output=True, text=True
    ).stdout.splitlines()
    names = [line for line in listed if "::" in line]
    real = [i for i, name in enumerate(names) if "every_format" in name or "real_model" in name]
    assert real == list(range(len(names) - len(real), len(names)))  # the last ones, together
    plain = subprocess.run([*collect, *tests], cwd=root, capture_output=True, text=True)
    assert next(line for line in plain.stdout.splitlines() if "::" in line) != names[0]
