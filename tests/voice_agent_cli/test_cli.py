"""``voice-agent``: the parsers build; only the chosen tool is imported; ``dev`` binds its ports
before it prints its URL and hands its engine flags to the TTS child."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from strands import Agent

from agent.config import AgentConfig
from agent.doors.protocols import PROTOCOL_VARIABLE
from bench.latency import agent_latency
from devtools import audit
from tests.stops import Command
from tts_client import acceptance
from tts_protocol import READINESS_POLL
from tts_server.settings import EngineName, Settings, env_name, parse_settings
from voice_agent_cli import cli, local_tts

VOICE_AGENT = [sys.executable, "-m", "voice_agent_cli"]
RUNTIME = ("agent", "observability", "tts_client", "tts_protocol", "tts_server")


def imported_after(code: str) -> list[str]:
    """The tool modules (``bench``, ``devtools``, ``tts_client.acceptance``) loaded by ``code``."""
    probe = (
        f"import json, sys\n{code}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('bench', 'devtools')"
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
    assert "devtools.audit" in audit_only and "bench.latency.agent_latency" not in audit_only


def test_the_benchmark_does_not_import_the_cli() -> None:
    assert "voice_agent_cli.cli" not in imported_after("import bench.latency.agent_latency")


def test_no_runtime_package_names_the_tooling() -> None:
    """Only this package reaches ``bench``, ``devtools`` and ``deploy``; nothing reaches it."""
    root = Path(__file__).resolve().parents[2]
    tooling = re.compile(
        r"^\s*(from|import) (bench|devtools|deploy|voice_agent_cli)\b"
        r"|[\"'](bench|devtools|deploy)\.",
        re.M,
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


# --- voice-agent dev: ports and the TTS child ------------------------------------------------

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


@pytest.fixture(autouse=True)
def quiet_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dev`` sets up the process's logging and tracing; not in the test process."""
    monkeypatch.setattr(cli.logs, "configure", lambda *_args: None)
    monkeypatch.setattr(cli.tracing, "configure", lambda *_args: None)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture
def bound_port() -> Iterator[int]:
    """A loopback port bound by another program that does not listen (no health check waits)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield holder.getsockname()[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NoChild:
    """``subprocess.Popen`` for the TTS child: records its command; the child exits at once."""

    commands: typing.ClassVar[list[list[str]]] = []

    def __init__(self, command: list[str], **_kwargs: object) -> None:
        self.commands.append(command)

    def poll(self) -> int:
        return 1

    def terminate(self) -> None:
        pass

    def wait(self, timeout: float) -> int:
        return 1


@pytest.fixture
def no_child(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    NoChild.commands = []
    monkeypatch.setattr(local_tts.subprocess, "Popen", NoChild)
    return NoChild.commands


def test_a_dev_port_in_use_is_one_line_and_exit_3_before_any_banner(
    held_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["dev", "--port", str(held_port), "--tts-url", NOWHERE])
    assert exited.value.code == 3
    out, err = capsys.readouterr()
    assert "voice chat" not in out
    assert err == (
        f"voice-agent dev: 127.0.0.1:{held_port} is in use (Address already in use); "
        "pick another port with --port PORT\n"
    )


def test_a_tts_port_in_use_is_named_and_nothing_is_started(
    bound_port: int, no_child: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dev", "--port", str(free_port()), "--tts-port", str(bound_port), "--model", "demo"]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 3 and no_child == []
    out, err = capsys.readouterr()
    assert "voice chat" not in out
    assert err == (
        f"voice-agent dev: 127.0.0.1:{bound_port} is in use (Address already in use); "
        "pick another port with --tts-port PORT\n"
    )


def test_engine_and_model_dir_reach_the_tts_childs_command_line(
    no_child: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    tts_port = free_port()
    argv = ["dev", "--port", str(free_port()), "--tts-port", str(tts_port), "--model", "demo"]
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--engine", "torch", "--model-dir", "/models/Kokoro-82M"])
    (command,) = no_child
    assert command[1:] == [
        "-m",
        "tts_server",
        "--host",
        "127.0.0.1",
        "--port",
        str(tts_port),
        "--no-banner",  # the dev server prints the one banner
        "--window-pace",  # one listener a connection: windows paced to its buffer
        "--onnx-workers",  # two conversations' windows side by side, each on every core
        "2",
        "--onnx-threads",
        str(os.cpu_count() or 1),
        "--log-level",  # as the dev server's own: warnings and errors, no shutdown chatter
        "warning",
        "--engine",
        "torch",
        "--model-dir",
        "/models/Kokoro-82M",
    ]
    assert exited.value.code == 3  # the child exited at once: one line says so, no banner
    out, err = capsys.readouterr()
    assert "voice chat" not in out
    assert (
        err
        == f"voice-agent dev: tts-server on http://127.0.0.1:{tts_port} did not become healthy\n"
    )


def test_without_engine_flags_the_child_gets_the_servers_defaults(
    no_child: list[list[str]],
) -> None:
    argv = ["dev", "--port", str(free_port()), "--tts-port", str(free_port()), "--model", "demo"]
    with pytest.raises(SystemExit):
        cli.main(argv)
    (command,) = no_child
    assert "--engine" not in command and "--model-dir" not in command


def test_a_tts_variable_the_user_sets_wins_over_devs_choice_for_its_server(
    no_child: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TTS_ONNX_THREADS=1 (a busy box: docs/tts_server.md) and TTS_WINDOW_PACE=0 reach the
    child as the user set them, with no flag over them; an empty one is unset, the flag kept."""
    monkeypatch.setenv("TTS_ONNX_THREADS", "1")
    monkeypatch.setenv("TTS_WINDOW_PACE", "")
    monkeypatch.delenv("TTS_ONNX_WORKERS", raising=False)
    argv = ["dev", "--port", str(free_port()), "--tts-port", str(free_port()), "--model", "demo"]
    with pytest.raises(SystemExit):
        cli.main(argv)
    (command,) = no_child
    assert "--onnx-threads" not in command and "--window-pace" in command
    assert command[command.index("--onnx-workers") + 1] == "2"
    server = parse_settings(command[3:], env=os.environ)  # as the child reads them
    assert (server.onnx_threads, server.window_pace, server.onnx_workers) == (1, True, 2)
    monkeypatch.setenv("TTS_WINDOW_PACE", "0")
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert "--window-pace" not in no_child[-1]
    assert not parse_settings(no_child[-1][3:], env=os.environ).window_pace


def test_devs_choices_for_its_server_are_the_servers_settings_by_their_variables() -> None:
    """Each of LISTENER_DEFAULTS is named by the variable of the setting its flags set."""
    for name, flags in local_tts.LISTENER_DEFAULTS.items():
        [field] = [f for f in dataclasses.fields(Settings) if env_name(f.name) == name]
        server = parse_settings(flags, env={})
        assert getattr(server, field.name) != getattr(Settings(), field.name)  # the flag sets it
    assert parse_settings(local_tts.listener_flags({}), env={}) == Settings(
        window_pace=True, onnx_workers=2, onnx_threads=os.cpu_count() or 1
    )


def test_the_engine_choices_are_the_servers() -> None:
    assert typing.get_args(EngineName) == cli.ENGINES


def test_engine_flags_with_a_tts_url_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["dev", "--tts-url", NOWHERE, "--engine", "torch"])
    assert exited.value.code == 2
    assert "--engine and --model-dir set up the local TTS server" in capsys.readouterr().err


def test_a_bad_agent_is_one_line_and_exit_2_before_any_port_is_bound(
    held_port: int, no_child: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dev", "--port", str(held_port), "--agent", "examples.clock_and_math_agent:TOOLS"]
    with pytest.raises(SystemExit) as exited:  # not 3: the held port was never tried
        cli.main(argv)
    assert exited.value.code == 2 and no_child == []
    out, err = capsys.readouterr()
    assert "voice chat" not in out
    assert err == (
        "voice-agent dev: agent factory 'examples.clock_and_math_agent:TOOLS' is a list, "
        "not a function\n"
    )


def test_a_bad_protocol_setting_is_one_line_and_exit_2_before_any_port_is_bound(
    held_port: int,
    no_child: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(PROTOCOL_VARIABLE, "mcp")
    with pytest.raises(SystemExit) as exited:  # not 3: the held port was never tried
        cli.main(["dev", "--port", str(held_port)])
    assert exited.value.code == 2 and no_child == []  # no TTS child, no warm-up
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "voice-agent dev: VOICE_AGENT_PROTOCOL must be one of http, agui, not 'mcp'\n"


def test_a_bad_protocol_setting_ends_the_command_with_2_and_no_traceback() -> None:
    env = {**os.environ, PROTOCOL_VARIABLE: "AG-UI"}
    argv = [sys.executable, "-m", "voice_agent_cli", "dev", "--port", str(free_port())]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "voice-agent dev: VOICE_AGENT_PROTOCOL must be one of http, agui, not 'AG-UI'\n"
    )


def test_the_protocol_flag_replaces_the_variable() -> None:
    port = free_port()
    argv = [*VOICE_AGENT, "dev", "--port", str(port), "--tts-url", NOWHERE, "--protocol", "agui"]
    dev = Command(argv, env={PROTOCOL_VARIABLE: "mcp"})  # not read: the flag chose
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping")
        ended = dev.stop(signal.SIGTERM)
    finally:
        dev.kill()
    assert ended.shell_status == 143
    assert ended.out.startswith(f"\n  AG-UI page:  http://127.0.0.1:{port}/\n")
    assert f"POST http://127.0.0.1:{port}/invocations (SSE), ws://127.0.0.1:{port}/ws" in ended.out
    assert "voice chat" not in ended.out


def test_the_banner_says_what_the_dev_server_serves() -> None:
    config = AgentConfig(model="demo", tts_url=NOWHERE)
    ours = cli.banner("127.0.0.1:8000", config, "demo", "http")
    assert ours.startswith("\n  voice chat:  http://127.0.0.1:8000/\n  model:       demo (offline")
    assert "AG-UI" not in ours
    agui = cli.banner("127.0.0.1:8000", config, "demo", "agui")
    assert agui.splitlines()[1:3] == [
        "  AG-UI page:  http://127.0.0.1:8000/",
        "  AG-UI:       POST http://127.0.0.1:8000/invocations (SSE), ws://127.0.0.1:8000/ws "
        "(docs/agui.md)",
    ]
    assert "voice chat" not in agui and agui.endswith(f"  speech:      {NOWHERE}\n")


def model_of_the_flag() -> Agent:
    """An agent factory that tells which model ``--model`` named, by failing with it."""
    raise RuntimeError(f"asked for {os.environ['VOICE_AGENT_MODEL']}")


def test_the_model_flag_reaches_the_agent_factory_through_its_variable(
    held_port: int,
    no_child: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("VOICE_AGENT_MODEL", "demo")  # restored after: the flag sets it
    argv = ["dev", "--port", str(held_port), "--model", "bedrock:my-model"]
    argv += ["--agent", "tests.voice_agent_cli.test_cli:model_of_the_flag"]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2 and no_child == []
    assert capsys.readouterr().err == (
        "voice-agent dev: agent factory tests.voice_agent_cli.test_cli:model_of_the_flag failed: "
        "RuntimeError: asked for bedrock:my-model\n"
    )


def test_a_bad_model_spec_is_one_line_before_anything_starts(
    no_child: list[list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dev", "--port", str(free_port()), "--tts-port", str(free_port()), "--model", "gpt4"]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2 and no_child == []  # no TTS child, no warm-up
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "voice-agent dev: --model or VOICE_AGENT_MODEL: unknown model spec 'gpt4'; use 'demo', "
        "'bedrock:<model-id>' or 'openai:<base-url>#<model>'\n"
    )


def test_the_readiness_poll_is_what_the_tts_server_leaves_out_of_its_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    class Answer:
        status_code = 503

    monkeypatch.setattr(local_tts.httpx, "get", lambda url, **_: asked.append(url) or Answer())
    assert not local_tts._healthy("http://127.0.0.1:9")
    assert asked == [f"http://127.0.0.1:9{READINESS_POLL}"]
