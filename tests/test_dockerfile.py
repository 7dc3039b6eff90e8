"""The Dockerfile cannot be built here (no Docker engine), so its contract is checked by parsing."""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

DOCKERFILE = Path(__file__).resolve().parents[1] / "Dockerfile"


def stages() -> dict[str, list[tuple[str, str]]]:
    """Instructions per named stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            name = rest.split(" AS ")[-1].strip() if " AS " in rest else rest
            current = result.setdefault(name, [])
        elif current is not None:
            current.append((instruction.upper(), rest.strip()))
    return result


@pytest.fixture
def tts() -> list[tuple[str, str]]:
    return stages()["tts-server"]


def values(stage: list[tuple[str, str]], instruction: str) -> list[str]:
    return [rest for name, rest in stage if name == instruction]


def test_tts_server_declares_bidirectional_streaming(tts: list[tuple[str, str]]) -> None:
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in values(
        tts, "LABEL"
    )


def test_tts_server_listens_on_8080_on_all_interfaces(tts: list[tuple[str, str]]) -> None:
    assert values(tts, "EXPOSE") == ["8080"]
    env = " ".join(values(tts, "ENV"))
    assert "TTS_PORT=8080" in env and "TTS_HOST=0.0.0.0" in env


def test_tts_server_torch_meets_the_advisory_floor(tts: list[tuple[str, str]]) -> None:
    arg = next(v for v in values(tts, "ARG") if v.startswith("TORCH_SPEC="))
    spec = SpecifierSet(shlex.split(arg.partition("=")[2])[0].removeprefix("torch"))
    assert "2.9.1" not in spec and "2.10.0" in spec
    assert any("${TORCH_SPEC}" in run for run in values(tts, "RUN"))


def test_tts_server_runs_the_gpu_engine_offline_as_non_root(tts: list[tuple[str, str]]) -> None:
    env = " ".join(values(tts, "ENV"))
    assert "TTS_ENGINE=torch" in env and "TTS_MODEL_DIR=/opt/ml/model" in env
    assert "HF_HUB_OFFLINE=1" in env
    user = values(tts, "USER")
    assert user and user[-1] not in ("root", "0")
    assert json.loads(values(tts, "ENTRYPOINT")[-1]) == ["tts-server"]
    assert json.loads(values(tts, "CMD")[-1]) == ["serve"]  # SageMaker passes 'serve'


def test_weights_are_fetched_at_build_time_into_the_model_dir(tts: list[tuple[str, str]]) -> None:
    fetch = [run for run in values(tts, "RUN") if "snapshot_download" in run]
    assert fetch and "/opt/ml/model" in fetch[0] and "kokoro-v1_0.pth" in fetch[0]


def test_pyproject_pins_the_torch_floor() -> None:
    pyproject = (DOCKERFILE.parent / "pyproject.toml").read_text()
    assert re.search(r'"torch>=2\.1\d', pyproject)


@pytest.fixture
def agent() -> list[tuple[str, str]]:
    return stages()["agent"]


def test_agent_image_is_arm64_python312_on_8080_as_non_root(agent: list[tuple[str, str]]) -> None:
    base = next(line for line in DOCKERFILE.read_text().splitlines() if line.endswith(" AS agent"))
    assert "--platform=linux/arm64" in base and "python:3.12" in base
    assert values(agent, "EXPOSE") == ["8080"]
    user = values(agent, "USER")
    assert user and user[-1] not in ("root", "0")
    assert json.loads(values(agent, "CMD")[-1]) == ["python", "-m", "agent.doors.agentcore"]


def test_agent_image_installs_the_sagemaker_extra_without_the_server(
    agent: list[tuple[str, str]],
) -> None:
    installs = [run for run in values(agent, "RUN") if "pip install" in run]
    assert any("sagemaker" in run and "agent" in run and "tts" not in run for run in installs)
    copied = " ".join(values(agent, "COPY"))
    assert "tts_client" in copied and "tts_server" not in copied


def test_agent_image_installs_the_turn_models_wheel_as_bootstrap_does(
    agent: list[tuple[str, str]],
) -> None:
    """The turn model's file comes from the pipecat-ai wheel, without its dependencies, at
    the version scripts/bootstrap.sh pins."""
    bootstrap = (Path(__file__).resolve().parents[1] / "scripts" / "bootstrap.sh").read_text()
    [pin] = re.findall(r'"(pipecat-ai==[^"]+)"', bootstrap)
    assert f'--no-deps "{pin}"' in bootstrap
    assert f'RUN pip install --no-deps "{pin}"' in [f"RUN {run}" for run in values(agent, "RUN")]


def test_agent_package_never_imports_the_server_or_torch() -> None:
    root = DOCKERFILE.parent
    heavy = re.compile(r"^\s*(from|import) (tts_server|torch|onnxruntime)\b", re.M)
    # Listening's VAD runs Silero on ONNX Runtime, which the `listen` extra brings anyway
    # (faster-whisper depends on it); nowhere else on the light side.
    listening = re.compile(r"^\s*(from|import) (tts_server|torch)\b", re.M)
    for path in [*root.glob("agent/**/*.py"), *root.glob("tts_client/**/*.py")]:
        rule = listening if path.is_relative_to(root / "agent" / "listening") else heavy
        assert not rule.search(path.read_text()), path


def _first_party_imports(entry: str) -> set[str]:
    """Top-level project packages reached from module ``entry`` by any import, transitively."""
    root = DOCKERFILE.parent
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    seen: set[str] = set()
    todo = [entry]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        base = root / module.replace(".", "/")
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            todo += [n for n in names if n.split(".")[0] in packages]
    return {module.split(".")[0] for module in seen}


@pytest.mark.parametrize(
    ("stage", "entry"), [("tts-server", "tts_server.entry"), ("agent", "agent.doors.agentcore")]
)
def test_each_image_copies_every_package_its_entry_point_imports(stage: str, entry: str) -> None:
    copied = {rest.split()[0] for rest in values(stages()[stage], "COPY")}
    needed = _first_party_imports(entry)
    assert entry.split(".")[0] in needed and "tts_protocol" in needed
    assert needed <= copied, f"{stage} image lacks {sorted(needed - copied)}"
