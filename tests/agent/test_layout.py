"""The agent's house rules, as ``docs/architecture.md`` states them: the ground floor at the
root and wings below it; observation never imports the browser leg; no runtime file over 400
lines."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agent"
GROUND_FLOOR = {"__init__", "browser_leg", "config", "events", "requests"}
WINGS = {"core", "doors", "leg", "listening", "segmenter", "testing"}
RUNTIME = ("agent", "tts_client", "tts_server", "tts_protocol")


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_the_ground_floor_lives_at_the_agent_root() -> None:
    assert {p.stem for p in AGENT.glob("*.py")} == GROUND_FLOOR
    packages = {p.name for p in AGENT.iterdir() if (p / "__init__.py").exists()}
    assert packages == WINGS


def test_the_ground_floor_imports_no_wing() -> None:
    for name in GROUND_FLOOR:
        wings = {
            m for m in imports(AGENT / f"{name}.py") if m.split(".")[1:2] and m.startswith("agent.")
        }
        assert not {m for m in wings if m.split(".")[1] in WINGS}, name


def test_metrics_and_the_turn_core_never_import_the_leg_or_the_doors() -> None:
    assert not {m for m in imports(AGENT / "doors" / "metrics.py") if m.startswith("agent.leg")}
    for path in (AGENT / "core").glob("*.py"):
        assert not {m for m in imports(path) if m.startswith(("agent.leg", "agent.doors"))}, path


def test_no_runtime_file_is_over_400_lines() -> None:
    long = [
        f"{path.relative_to(ROOT)} ({n})"
        for package in RUNTIME
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 400
    ]
    assert not long, long


def test_a_turn_runs_without_strands() -> None:
    """The Python 3.12 SageMaker job runs turns on a venv without strands: only the agent
    factory and the model imports it (a tool hook in the turn's import chain broke that once)."""
    blocked = "import sys; sys.modules['strands'] = None; import agent.core.turn"
    done = subprocess.run([sys.executable, "-c", blocked], cwd=ROOT, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
