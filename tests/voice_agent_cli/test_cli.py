"""``voice-agent bench|acceptance|audit``: the parsers build; only the chosen tool is imported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agent.config import AgentConfig
from bench import agent_latency, audit
from tts_client import acceptance
from voice_agent_cli import cli

RUNTIME = ("agent", "observability", "tts_client", "tts_protocol", "tts_server")


def imported_after(code: str) -> list[str]:
    """The tool modules (``bench``, ``tts_client.acceptance``) loaded by ``code``, run fresh."""
    probe = (
        f"import json, sys\n{code}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'bench'"
        " or m.startswith('tts_client.acceptance') or m == 'voice_agent_cli.cli')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    for name in ("dev", *(name for name, _, _ in cli.TOOLS)):
        assert name in out
    assert "latency benchmark" in out and "dependency floors" in out


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["bench", "--quick"], agent_latency),
        (["acceptance", "ws://127.0.0.1:9/ws"], acceptance),
        (["audit", "--allow-offline"], audit),
    ],
)
def test_each_tool_parser_builds_from_its_module(
    argv: list[str], module: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.build_parser(argv[0]).parse_args(argv).run is module.run
    with pytest.raises(SystemExit) as exit:
        cli.main([argv[0], "--help"])
    assert exit.value.code == 0
    assert str(module.__doc__).splitlines()[0] in capsys.readouterr().out


def test_the_cli_imports_no_tool_until_one_is_chosen() -> None:
    setup = "import voice_agent_cli.cli as c\nc.build_parser()\nc.build_parser('dev')"
    assert imported_after(setup) == ["voice_agent_cli.cli"]
    audit_only = imported_after(f"{setup}\nc.build_parser('audit')")
    assert "bench.audit" in audit_only and "bench.agent_latency" not in audit_only


def test_the_benchmark_does_not_import_the_cli() -> None:
    assert "voice_agent_cli.cli" not in imported_after("import bench.agent_latency")


def test_no_runtime_package_names_the_tooling() -> None:
    """Only this package reaches ``bench`` and ``deploy``, and nothing reaches it."""
    root = Path(__file__).resolve().parents[2]
    tooling = re.compile(
        r"^\s*(from|import) (bench|deploy|voice_agent_cli)\b|[\"'](bench|deploy)\.", re.M
    )
    for package in RUNTIME:
        for path in (root / package).rglob("*.py"):
            assert not tooling.search(path.read_text()), path


@pytest.mark.parametrize(
    ("flags", "hosts"),
    [
        ([], ("localhost", "127.0.0.1", "::1")),
        (["--host", "0.0.0.0"], ("localhost", "127.0.0.1", "::1")),  # names are the user's to list
        (["--host", "192.168.1.5"], ("localhost", "127.0.0.1", "::1", "192.168.1.5")),
        (["--host", "0.0.0.0", "--allow-host", "voice.lan"], ("voice.lan",)),
    ],
)
def test_the_dev_server_answers_to_loopback_names_its_host_and_those_allowed(
    flags: list[str], hosts: tuple[str, ...]
) -> None:
    args = cli.build_parser().parse_args(["dev", *flags])
    assert cli.served_hosts(AgentConfig(), args) == hosts
