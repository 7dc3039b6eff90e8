"""Stopping ``voice-agent chat``, ``acceptance``, ``deploy`` and ``audit`` mid-wait, and any
``voice-agent`` or ``tts-server`` while it still imports: one line, the shell's 130 or 143,
every child ended, no traceback.

Each command is a real process in a session of its own (``tests.stops.Command``), made to wait
on loopback only: a listening socket that accepts and never answers stands in for the agent,
the TTS endpoint, AWS or the vulnerability service (the test knows the command waits once it
has connected), and a WebSocket server that sends the agent's ``ready`` and then nothing holds
``chat`` reading its prompts from stdin. A uvicorn that takes a minute to import, first on the
child's ``PYTHONPATH``, holds a command in its imports. Last, in process: a stop inside an anyio
task group (httpx's), which asyncio must not report as unhandled.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

from observability.stopping import Stopped, stops_caught
from tests.stops import ROOT, Command, Ended, Silent, gone, only_line, slow_uvicorn

VOICE_AGENT = [sys.executable, "-m", "voice_agent_cli"]
WAIT_S = 30.0  # how long a command may take to reach its wait (imports on a loaded box)


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A loopback port that accepts connections and never answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(WAIT_S)
        yield listener


def port(listener: socket.socket) -> int:
    """Where ``listener`` listens."""
    return int(listener.getsockname()[1])


def waiting(command: Command, listener: socket.socket) -> socket.socket:
    """The connection ``command`` opened to ``listener`` (it waits for an answer now)."""
    try:
        connection, _address = listener.accept()
    except TimeoutError:
        command.kill()
        raise AssertionError(f"{command.argv} did not connect within {WAIT_S} s") from None
    return connection


def stopped(argv: list[str], listener: socket.socket, signum: int, **env: str) -> Ended:
    """Run ``argv``, wait until it has connected to ``listener``, send ``signum``."""
    command = Command(argv, env)
    try:
        with waiting(command, listener):
            return command.stop(signum, limit_s=20)
    finally:
        command.kill()


def test_chat_waiting_for_the_handshake_stopped_by_ctrl_c(silent: socket.socket) -> None:
    url = f"ws://127.0.0.1:{port(silent)}/ws"
    ended = stopped([*VOICE_AGENT, "chat", "--url", url, "--prompt", "Hi"], silent, signal.SIGINT)
    assert ended.shell_status == 130 and ended.status == -signal.SIGINT
    assert only_line(ended) == (
        "voice-agent chat: stopped by Ctrl+C (SIGINT); "
        "nothing was lost: the conversation lives on in the agent"
    )


@pytest.fixture
def ready_agent() -> Iterator[tuple[Server, threading.Event]]:
    """A WebSocket server that sends the agent's ``ready`` frame and then waits; the event is
    set once the client has closed its connection."""
    closed = threading.Event()

    def conversation(connection: ServerConnection) -> None:
        connection.send('{"type": "ready", "conversation": "c1"}')
        with contextlib.suppress(ConnectionClosed):
            for _frame in connection:  # until the client goes
                pass
        closed.set()

    with serve(conversation, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server, closed
        server.shutdown()


def test_chat_reading_its_prompts_from_stdin_stopped_by_sigterm_does_not_wait_for_a_line(
    ready_agent: tuple[Server, threading.Event],
) -> None:
    """stdin is read in a thread; a stop must not wait for the line that thread waits for."""
    server, closed = ready_agent
    url = f"ws://127.0.0.1:{server.socket.getsockname()[1]}/ws"
    chat = Silent([*VOICE_AGENT, "chat", "--url", url])
    try:
        deadline = time.monotonic() + WAIT_S
        while not server.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # past the ready frame, reading stdin (a stop before is one line too)
        ended = chat.stop(signal.SIGTERM, limit_s=10)
    finally:
        chat.kill()
    assert ended.shell_status == 143
    assert only_line(ended) == (
        "voice-agent chat: stopped by SIGTERM; "
        "nothing was lost: the conversation lives on in the agent"
    )
    assert closed.wait(5), "the connection to the agent was left open"


def test_acceptance_waiting_for_ping_stopped_by_sigterm(silent: socket.socket) -> None:
    url = f"ws://127.0.0.1:{port(silent)}/invocations-bidirectional-stream"
    ended = stopped([*VOICE_AGENT, "acceptance", url], silent, signal.SIGTERM)
    assert ended.shell_status == 143 and ended.status == -signal.SIGTERM
    assert only_line(ended) == (
        "voice-agent acceptance: stopped by SIGTERM; "
        "no verdict; nothing was written, the endpoint was only asked to speak"
    )
    assert ended.out == f"acceptance: {url}\n"  # what it tests; no check reported


def test_deploy_waiting_for_aws_stopped_by_ctrl_c(silent: socket.socket) -> None:
    aws = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port(silent)}",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "not-a-secret",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    argv = [*VOICE_AGENT, "deploy", "status", "--region", "us-east-1"]
    ended = stopped(argv, silent, signal.SIGINT, **aws)
    assert ended.shell_status == 130
    assert only_line(ended) == (
        "voice-agent deploy: stopped by Ctrl+C (SIGINT); "
        "the AWS calls already made stand; nothing else was changed"
    )


def proxied(listener_port: int) -> dict[str, str]:
    """Every HTTPS request of the child through ``127.0.0.1:listener_port``."""
    proxy = f"http://127.0.0.1:{listener_port}"
    return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}


def test_audit_waiting_for_the_vulnerability_service_stopped_by_ctrl_c(
    silent: socket.socket, tmp_path: Path
) -> None:
    argv = [*VOICE_AGENT, "audit", "--env", ".venv", "--sbom-dir", str(tmp_path)]
    ended = stopped(argv, silent, signal.SIGINT, **proxied(port(silent)))
    assert ended.shell_status == 130
    assert only_line(ended) == (
        "voice-agent audit: stopped by Ctrl+C (SIGINT); "
        "files it had already written stay as they are; run it again for a whole audit"
    )
    assert list(tmp_path.iterdir()) == []


def test_audit_stopped_while_its_sbom_tool_runs_ends_the_tool_and_names_it(
    tmp_path: Path,
) -> None:
    """No service (a closed port as the proxy): floors, then the SBOM's child process."""
    with socket.create_server(("127.0.0.1", 0)) as closed_port:
        refused = port(closed_port)
    argv = [*VOICE_AGENT, "audit", "--allow-offline", "--env", ".venv"]
    audit = Command([*argv, "--sbom-dir", str(tmp_path)], proxied(refused))
    try:
        deadline = time.monotonic() + WAIT_S
        while not (children := audit.children()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert children, f"{argv} started no child within {WAIT_S} s"
        ended = audit.stop(signal.SIGTERM, limit_s=20)  # the parent alone, as systemd would
    finally:
        audit.kill()
    assert ended.shell_status == 143
    assert only_line(ended) == (
        "voice-agent audit: stopped by SIGTERM; cyclonedx-py (the SBOM of .venv) ended; "
        "files it had already written stay as they are; run it again for a whole audit"
    )
    assert all(gone(child) for child in children)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def slow_import(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``PYTHONPATH`` whose uvicorn touches a file, then takes a minute to import; the file."""
    return slow_uvicorn(tmp_path)


def stopped_importing(
    argv: list[str], slow: tuple[dict[str, str], Path], signum: int, **env: str
) -> Ended:
    """Run ``argv`` with ``slow``'s uvicorn (and ``env``); signal it once the import has begun."""
    path, mark = slow
    command = Command(argv, {**path, **env})
    try:
        deadline = time.monotonic() + WAIT_S
        while not mark.exists():
            assert time.monotonic() < deadline and command.child.poll() is None, argv
            time.sleep(0.02)
        return command.stop(signum, limit_s=10)
    finally:
        command.kill()


ENTRY = "import sys; from {} import main; sys.exit(main())"  # what a console script runs


@pytest.mark.parametrize(
    ("argv", "signum", "line"),
    [
        (
            [*VOICE_AGENT, "dev"],
            signal.SIGINT,
            "voice-agent dev: stopped by Ctrl+C (SIGINT); it was still starting; nothing was lost",
        ),
        (
            [sys.executable, "-c", ENTRY.format("voice_agent_cli.entry"), "chat", "--url", "x"],
            signal.SIGTERM,
            "voice-agent chat: stopped by SIGTERM; it was still starting; nothing was lost",
        ),
        (
            [sys.executable, "-m", "tts_server", "--port", "9"],
            signal.SIGINT,
            "tts-server: stopped by Ctrl+C (SIGINT); it was still starting; nothing was lost",
        ),
        (
            [sys.executable, "-c", ENTRY.format("tts_server.entry")],
            signal.SIGTERM,
            "tts-server: stopped by SIGTERM; it was still starting; nothing was lost",
        ),
    ],
    ids=["voice-agent-sigint", "voice-agent-script-sigterm", "tts-server", "tts-server-script"],
)
def test_a_stop_while_the_command_still_imports_is_one_line(
    slow_import: tuple[dict[str, str], Path], argv: list[str], signum: int, line: str
) -> None:
    ended = stopped_importing(argv, slow_import, signum)
    assert ended.shell_status == 128 + signum
    assert only_line(ended) == line


@pytest.mark.parametrize(
    ("flags", "env"), [(["--no-banner"], {}), ([], {"TTS_BANNER": "0"})], ids=["flag", "variable"]
)
def test_tts_server_child_stopped_while_it_still_imports_says_nothing(
    slow_import: tuple[dict[str, str], Path], flags: list[str], env: dict[str, str]
) -> None:
    """The banner off (``voice-agent dev``'s child: ``--no-banner``): the parent says the line."""
    argv = [sys.executable, "-m", "tts_server", *flags]
    ended = stopped_importing(argv, slow_import, signal.SIGTERM, **env)
    assert ended.shell_status == 143 and ended.err == ""


def test_the_console_scripts_start_at_the_entry_modules() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {
        "tts-server": "tts_server.entry:main",
        "voice-agent": "voice_agent_cli.entry:main",
    }


def test_a_stop_in_an_anyio_task_group_leaves_no_report_from_asyncio(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """anyio (httpx's) wraps the stop in a ``BaseExceptionGroup``; asyncio would report it as
    unhandled while ``asyncio.run`` shuts down, before the stop's one line."""

    async def stop_here() -> None:
        signal.raise_signal(signal.SIGTERM)

    async def requests() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(stop_here)
            await anyio.sleep(10)

    with stops_caught(), pytest.raises(Stopped):
        asyncio.run(requests())
    assert caplog.records == []
