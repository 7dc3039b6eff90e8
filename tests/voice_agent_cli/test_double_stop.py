"""A second signal close after the first (Ctrl+C pressed twice, or SIGTERM then Ctrl+C): still
one line, the first signal's status (130, or 143 after SIGTERM), no traceback, every child and
port let go; the second one stops now (docs/operations.md, "Stopping").

Real processes on loopback ports of their own (``tests.stops``), stopped while they serve, while
they wait for something to end (a request the dev server still answers, the TTS server's drain,
``voice-agent dev``'s TTS child warming up), and while they still import: ``voice-agent dev``
(with the fast TTS server of ``tests.fake_server`` where the test is not about the child, and
its real child where it is), ``make run``, ``tts-server``, ``voice-agent bench`` and
``python -m tts_client``. In process: ``voice-agent``'s child, passed the second signal.

One signal alone is bounded too: a request still running 5 s after the stop began (after the
drain, for the TTS server) is cut short the same way, said in the one line, where the dev server
used to wait for it with no limit and the TTS server logged uvicorn's "Cancel 1 running task(s)"
and the request's traceback.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from observability.stopping import Stopped, stops_caught
from observability.stopping_server import GRACE_S
from tests.fake_server import ServerProcess, free_port
from tests.stops import Command, Ended, gone, listens, only_line, slow_uvicorn
from tts_protocol import PING_PATH, STREAM_PATH, Speak, encode
from voice_agent_cli import local_tts
from voice_agent_cli.local_tts import end_child

VOICE_AGENT = [sys.executable, "-m", "voice_agent_cli"]
FAKE_TTS = [sys.executable, "-m", "tests.fake_server"]
KEPT = "nothing was lost: the agent keeps nothing on disk"
CUT = (  # where the stop cut a request short: not "nothing was lost"
    "the agent keeps nothing on disk; the replies cut short ended unfinished, and their clients "
    "may ask again"
)
SAID = {signal.SIGINT: "Ctrl+C (SIGINT)", signal.SIGTERM: "SIGTERM"}
WAIT_S = 30.0  # how long a command may take to reach what the test waits for (a loaded box)
MARGIN_S = 10.0  # past the stop's grace: its cut, the app's shutdown, a loaded box


@pytest.fixture(scope="module")
def speech() -> Iterator[ServerProcess]:
    """One fast TTS server for the module's dev servers that start no child of their own."""
    server = ServerProcess().start()
    yield server
    server.kill()


def until(what: str, met: Callable[[], object], command: Command) -> None:
    """Until ``met()`` holds, else fail naming ``what`` (the command killed)."""
    deadline = time.monotonic() + WAIT_S
    while not met():
        if time.monotonic() > deadline or command.child.poll() is not None:
            command.kill()
            raise AssertionError(f"{command.argv}: never {what}")
        time.sleep(0.02)


def dev_line(signum: int, *ended: str, kept: str = KEPT) -> str:
    return f"voice-agent dev: stopped by {SAID[signum]}; {', '.join(ended)} ended; {kept}"


@pytest.mark.parametrize(("first", "gap_s"), [(signal.SIGINT, 0.05), (signal.SIGTERM, 0.2)])
def test_dev_stopped_twice_while_it_serves(speech: ServerProcess, first: int, gap_s: float) -> None:
    """Ctrl+C twice to the whole group (a terminal's), or SIGTERM then Ctrl+C: the first
    signal's line and status."""
    port = free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-url", speech.ws_url])
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping")
        ended = dev.stop_twice(first, signal.SIGINT, gap_s=gap_s, group=first == signal.SIGINT)
    finally:
        dev.kill()
    assert ended.status == -first
    assert only_line(ended) == dev_line(first, f"the dev server on 127.0.0.1:{port}")
    assert not listens(port)


def held_request(port: int) -> socket.socket:
    """A turn whose body never comes whole: the dev server answers it until it does."""
    held = socket.create_connection(("127.0.0.1", port))
    head = "POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    held.sendall(f"{head}Content-Length: 100\r\n\r\n{{".encode())
    return held


def test_dev_waiting_for_a_request_is_stopped_at_once_by_a_second_ctrl_c(
    speech: ServerProcess,
) -> None:
    """The first Ctrl+C waits for the requests still running; the second cuts them short,
    and the line says so."""
    port = free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-url", speech.ws_url])
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping")
        with held_request(port):
            time.sleep(0.3)  # the request read, its body awaited
            ended = dev.stop_twice(signal.SIGINT, signal.SIGINT, gap_s=0.5)
    finally:
        dev.kill()
    assert ended.status == -signal.SIGINT
    cut = "(the second signal cut short 1 request(s) still running)"
    said = dev_line(signal.SIGINT, f"the dev server on 127.0.0.1:{port} {cut}", kept=CUT)
    assert only_line(ended) == said


def test_dev_waiting_for_a_request_past_the_grace_cuts_it_short_at_one_ctrl_c(
    speech: ServerProcess,
) -> None:
    """One Ctrl+C, a request that never completes: the stop cuts it short at 5 s (it waited
    for ever), and the line says so."""
    port = free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-url", speech.ws_url])
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping")
        with held_request(port):
            time.sleep(0.3)  # the request read, its body awaited
            ended = dev.stop(signal.SIGINT, group=True, limit_s=GRACE_S + MARGIN_S)
    finally:
        dev.kill()
    assert ended.status == -signal.SIGINT
    cut = f"(the stop's {GRACE_S:g} s limit cut short 1 request(s) still running)"
    said = dev_line(signal.SIGINT, f"the dev server on 127.0.0.1:{port} {cut}", kept=CUT)
    assert only_line(ended) == said
    assert not listens(port)


def test_dev_stopped_twice_while_its_tts_child_warms_up_ends_the_child_soon() -> None:
    """The first Ctrl+C sends the child SIGTERM, which it can only obey once its engine is
    warm; the second is passed on, and the child is killed 5 s later at most."""
    port, tts_port = free_port(), free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-port", str(tts_port)])
    try:
        until("started its TTS child", dev.children, dev)
        (child,) = dev.children()
        until("had its TTS child serve", lambda: listens(tts_port), dev)  # /ping 503: warming
        ended = dev.stop_twice(signal.SIGINT, signal.SIGINT, group=True)
    finally:
        dev.kill()
    assert ended.status == -signal.SIGINT
    tts = f"the TTS server on 127.0.0.1:{tts_port}"
    killed = f"{tts} (killed: it did not end 5 s after a second signal)"
    assert only_line(ended) in (dev_line(signal.SIGINT, tts), dev_line(signal.SIGINT, killed))
    assert gone(child) and not listens(tts_port)


def test_make_run_stopped_by_ctrl_c_twice_says_one_line(speech: ServerProcess) -> None:
    port = free_port()
    flags = f"ARGS=--port {port} --tts-url {speech.ws_url}"
    make = Command(["make", "--no-print-directory", "run", flags])
    try:
        make.wait_for(f"http://127.0.0.1:{port}/ping")
        ended = make.stop_twice(signal.SIGINT, signal.SIGINT, group=True)
    finally:
        make.kill()
    assert ended.shell_status == 130
    assert only_line(ended) == dev_line(signal.SIGINT, f"the dev server on 127.0.0.1:{port}")
    assert not listens(port)


@pytest.mark.parametrize(("first", "gap_s"), [(signal.SIGINT, 0.05), (signal.SIGTERM, 0.2)])
def test_tts_server_stopped_twice_while_it_serves(first: int, gap_s: float) -> None:
    port = free_port()
    server = Command([*FAKE_TTS, "--log-level", "warning", "--port", str(port)])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        ended = server.stop_twice(first, signal.SIGINT, gap_s=gap_s)
    finally:
        server.kill()
    assert ended.status == -first
    assert only_line(ended) == (
        f"tts-server: stopped by {SAID[first]}; every open session finished its queued speech "
        "first; nothing was lost"
    )
    assert not listens(port)


def test_tts_server_draining_is_cut_short_by_a_second_ctrl_c_and_says_so() -> None:
    """A session with seconds of speech queued: the second Ctrl+C ends the drain. (The cut is
    logged too, as a warning: the server's own log, for a server without its banner.)"""
    port = free_port()
    server = Command([*FAKE_TTS, "--log-level", "error", "--infer-s", "0.4", "--port", str(port)])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        with connect(f"ws://127.0.0.1:{port}{STREAM_PATH}") as session:
            session.recv()  # ready
            for n in range(10):
                session.send(encode(Speak(id=f"s{n}", text="One short sentence to speak.")))
            session.recv()  # the first one's start: speaking
            ended = server.stop_twice(signal.SIGINT, signal.SIGINT, gap_s=0.3)
    finally:
        server.kill()
    assert ended.status == -signal.SIGINT
    assert only_line(ended) == (
        "tts-server: stopped by Ctrl+C (SIGINT); the drain was cut short (a second signal, or "
        "its 20 s): sessions still speaking were closed with 1012, and their clients may retry"
    )


TTS_CUT = "the stop's 5 s limit cut short 1 request(s) still running, and their clients may retry"


def test_tts_server_stopped_once_with_a_request_held_open_cuts_it_short_at_5_s() -> None:
    """A request whose body never comes whole (the drain does not wait for it): SIGTERM, then
    5 s, and uvicorn's "Cancel 1 running task(s)" and the request's traceback are left out."""
    port = free_port()
    server = Command([*FAKE_TTS, "--log-level", "warning", "--port", str(port)])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        with held_request(port):
            time.sleep(0.3)  # the request read, its body awaited
            ended = server.stop(signal.SIGTERM, limit_s=GRACE_S + MARGIN_S)
    finally:
        server.kill()
    assert ended.status == -signal.SIGTERM
    assert only_line(ended) == (
        f"tts-server: stopped by SIGTERM; every open session finished its queued speech first; "
        f"{TTS_CUT}"
    )
    assert not listens(port)


def streaming_speech(url: str, streaming: threading.Event) -> None:
    """An OpenAI-API speech request that streams for a while (40 sentences), read to its end
    or its cut; ``streaming`` is set once its first audio came."""
    text = "One short sentence. " * 40
    body = {"model": "kokoro", "input": text, "voice": "af_fake", "response_format": "pcm"}
    speaking = httpx.stream("POST", url, json=body, timeout=WAIT_S)  # its first audio: ~5 s
    with contextlib.suppress(httpx.HTTPError), speaking as reply:
        for _audio in reply.iter_bytes():
            streaming.set()


def test_tts_server_stopped_once_past_its_drain_and_its_grace_cuts_the_speech_short() -> None:
    """A speech request still streaming when the drain (0.5 s here) and the 5 s after it have
    passed: one Ctrl+C, one line, the request counted."""
    port = free_port()
    flags = ["--log-level", "error", "--infer-s", "0.4", "--drain-s", "0.5"]  # no drain warning
    server = Command([*FAKE_TTS, *flags, "--port", str(port)])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        streaming = threading.Event()
        url = f"http://127.0.0.1:{port}/v1/audio/speech"
        threading.Thread(target=streaming_speech, args=(url, streaming), daemon=True).start()
        assert streaming.wait(WAIT_S)
        ended = server.stop(signal.SIGINT, limit_s=GRACE_S + MARGIN_S)
    finally:
        server.kill()
    assert ended.status == -signal.SIGINT
    assert only_line(ended) == (
        "tts-server: stopped by Ctrl+C (SIGINT); the drain was cut short (a second signal, or "
        f"its 0.5 s): sessions still speaking were closed with 1012; {TTS_CUT}"
    )


def stopped_twice_importing(argv: list[str], directory: Path, first: int) -> Ended:
    """``argv`` held in its imports (``slow_uvicorn``), then ``first`` and Ctrl+C."""
    env, mark = slow_uvicorn(directory)
    command = Command(argv, env)
    try:
        until("began importing uvicorn", mark.exists, command)
        return command.stop_twice(first, signal.SIGINT)
    finally:
        command.kill()


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        ([*VOICE_AGENT, "dev"], "voice-agent dev"),
        ([sys.executable, "-m", "tts_server"], "tts-server"),
    ],
    ids=["voice-agent", "tts-server"],
)
@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_command_stopped_twice_while_it_still_imports(
    tmp_path: Path, argv: list[str], name: str, first: int
) -> None:
    ended = stopped_twice_importing(argv, tmp_path, first)
    assert ended.status == -first
    assert (
        only_line(ended)
        == f"{name}: stopped by {SAID[first]}; it was still starting; nothing was lost"
    )


def test_bench_stopped_twice_mid_run_writes_no_report(
    speech: ServerProcess, tmp_path: Path
) -> None:
    bench = [*VOICE_AGENT, "bench", "--quick", "--tts-url", speech.ws_url, "--out", str(tmp_path)]
    command = Command(bench)
    try:
        time.sleep(4)  # its dev server up, measuring
        ended = command.stop_twice(signal.SIGINT, signal.SIGINT, group=True)
    finally:
        command.kill()
    assert ended.status == -signal.SIGINT
    said = [line for line in ended.err.splitlines() if not line.startswith("bench: load average")]
    assert said == [
        "voice-agent bench: stopped by Ctrl+C (SIGINT); "
        "no report was written: docs/benchmarks/ keep the last one"
    ], ended.err
    assert "Traceback" not in ended.out + ended.err
    assert list(tmp_path.iterdir()) == []


def test_tts_client_stopped_twice_waiting_for_the_handshake(tmp_path: Path) -> None:
    output = tmp_path / "out.wav"
    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.settimeout(WAIT_S)
        url = f"ws://127.0.0.1:{silent.getsockname()[1]}/ws"
        client = Command(
            [sys.executable, "-m", "tts_client", "--url", url, "--output", str(output), "Hi."]
        )
        try:
            connection, _address = silent.accept()
            with connection:
                ended = client.stop_twice(signal.SIGINT, signal.SIGINT)
        finally:
            client.kill()
    assert ended.status == -signal.SIGINT
    assert only_line(ended) == (
        "python -m tts_client: stopped by Ctrl+C (SIGINT); "
        f"no WAV was written, so nothing was lost: {output} is as it was"
    )
    assert not output.exists()


# --- in process: a child passed the second signal ------------------------------------------

DEAF = "import signal, time\n{}print('deaf', flush=True)\ntime.sleep(60)\n"  # deaf to these


def deaf_child(*signals: str) -> subprocess.Popen[bytes]:
    """A child that ignores ``signals`` (names), started once it does."""
    ignore = "".join(f"signal.signal(signal.{name}, signal.SIG_IGN)\n" for name in signals)
    child = subprocess.Popen([sys.executable, "-c", DEAF.format(ignore)], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"deaf\n"
    child.stdout.close()
    return child


@contextlib.contextmanager
def hurried_stop() -> Iterator[None]:
    """Within: a stop under way (SIGTERM), hurried by a second signal (Ctrl+C)."""
    with stops_caught():
        with pytest.raises(Stopped):
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        yield


def test_a_hurried_stop_passes_ctrl_c_on_to_a_child_that_waits_out_sigterm() -> None:
    child = deaf_child("SIGTERM")
    with hurried_stop():
        assert end_child(child, "the child") == "the child"
    assert child.returncode != 0  # its own Ctrl+C ended it, long before 60 s


def test_a_child_deaf_to_the_second_signal_is_killed_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_tts, "HURRIED_END_S", 0.2)
    child = deaf_child("SIGTERM", "SIGINT")
    with hurried_stop():
        said = end_child(child, "the child")
    assert said == "the child (killed: it did not end 0.2 s after a second signal)"
    assert child.returncode == -signal.SIGKILL
