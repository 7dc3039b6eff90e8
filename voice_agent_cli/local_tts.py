"""The local TTS server as a child process, for ``voice-agent dev`` and ``voice-agent bench``.

``local_tts`` reuses a healthy server on the port, else checks the port is free (``PortInUse``
if not: nothing is started) and starts ``python -m tts_server`` there (with
``$TTS_SERVER_PYTHON``, default this interpreter; its engine and model directory as asked;
without its banner: the caller prints its own) and waits until its ``/ping`` proves a real
synthesis, polling as ``READINESS_POLL``, which the child does not log. ``local_sagemaker``
puts the local SageMaker emulator (``sagemaker_local``) in front of it, so the agent reaches
speech through the real SageMaker SDK. Children die with their parent, and run in a session
of their own: a terminal's Ctrl+C reaches the parent alone, which ends them (SIGTERM: the TTS
server drains; SIGKILL after ``CHILD_END_S``) and names them in its stop line; a second signal
meanwhile is passed on (SIGINT: the TTS server cuts its drain short), SIGKILL following after
``HURRIED_END_S``. ``bind`` is the dev server's own listening socket, bound before anything is
started or printed.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

from observability.stopping import Stopped, hurried
from tts_protocol import READINESS_POLL, STREAM_PATH

TTS_READY_LIMIT_S = 180.0
# What the local TTS server is asked for, by the TTS_* variable that would say otherwise: the
# windows paced to a listener's page, and the ONNX engine's lanes (ignored by torch): two
# sessions, each on every core, so that a second conversation's windows run beside the first's
# instead of queueing behind a window of seconds, and one conversation's still get all the
# cores (docs/tts_server.md, "Two listeners at once"). Two conversations speaking at once on
# the page: 9 underruns against 25 with one lane (docs/benchmarks/page.md, page_one_lane/).
# While both speak, each lane runs its one-thread session (the server's default,
# ``--onnx-narrow``): four threads on two cores waste them.
# A variable the user sets wins: the child reads it itself (docs/tts_server.md, "The engine's
# threads": TTS_ONNX_THREADS=1 on a busy box).
LISTENER_DEFAULTS = {
    "TTS_WINDOW_PACE": ["--window-pace"],
    "TTS_ONNX_WORKERS": ["--onnx-workers", "2"],
    "TTS_ONNX_THREADS": ["--onnx-threads", str(os.cpu_count() or 1)],
}
EMULATOR_READY_LIMIT_S = 30.0
PR_SET_PDEATHSIG = 1  # prctl option, <linux/prctl.h>
CHILD_END_S = 30.0  # a child's SIGTERM to its end: the TTS server's drain (20 s) and more
HURRIED_END_S = 5.0  # a second signal passed on to a child, to its end (its warm-up: 10-20 s)
END_POLL_S = 0.05

log = logging.getLogger("voice_agent_cli.local_tts")


class LocalTTSFailed(RuntimeError):
    """The local TTS server did not become healthy."""


class PortInUse(OSError):
    """``host:port`` cannot be bound: something else listens there."""

    def __init__(self, host: str, port: int, flag: str, reason: str) -> None:
        super().__init__(f"{host}:{port} is in use ({reason}); pick another port with {flag} PORT")
        self.host, self.port, self.flag = host, port, flag


def bind(host: str, port: int, flag: str) -> socket.socket:
    """A socket listening on ``host:port`` as uvicorn would bind it; raises ``PortInUse``
    naming ``flag``, the option that picks another port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT is free
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise PortInUse(host, port, flag, exc.strerror or str(exc)) from exc
    sock.set_inheritable(True)
    return sock


def _healthy(url: str) -> bool:
    try:  # as the readiness poll: the child leaves these out of its access log
        return httpx.get(f"{url}{READINESS_POLL}", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def listener_flags(env: Mapping[str, str]) -> list[str]:
    """The local TTS server's flags from ``LISTENER_DEFAULTS``, each but those whose variable
    ``env`` sets (an empty one is unset: the flag is kept)."""
    chosen = [flags for name, flags in LISTENER_DEFAULTS.items() if not env.get(name)]
    return [flag for flags in chosen for flag in flags]


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, however it dies (Linux).

    uvicorn re-raises SIGTERM after its shutdown, which kills the parent before any ``finally``
    could stop the child.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def local_tts(
    host: str,
    port: int,
    log_level: str | None = None,
    *,
    engine: str | None = None,
    model_dir: Path | None = None,
    flag: str = "--tts-port",
) -> Iterator[str]:
    """A healthy TTS server at ``host:port``: reuse a running one, else start a child process
    (``engine`` and ``model_dir``: the server's ``--engine`` and ``--model-dir``, its defaults
    if None). Raises ``PortInUse`` (naming ``flag``) if something else holds the port."""
    http = f"http://{host}:{port}"
    ws = f"ws://{host}:{port}{STREAM_PATH}"
    if _healthy(http):
        if engine or model_dir:
            log.warning(
                "a TTS server already answers on %s: it is used as it is, without --engine or "
                "--model-dir (stop it, or pick another port with %s)",
                http,
                flag,
            )
        yield ws
        return
    bind(host, port, flag).close()  # free now; the child binds it a moment later
    python = os.environ.get("TTS_SERVER_PYTHON") or sys.executable
    command = [python, "-m", "tts_server", "--host", host, "--port", str(port), "--no-banner"]
    command += listener_flags(os.environ)
    command += ["--log-level", log_level] if log_level else []
    command += ["--engine", engine] if engine else []
    command += ["--model-dir", str(model_dir)] if model_dir else []
    with _child(command, f"the TTS server on {host}:{port}") as child:
        deadline = time.monotonic() + TTS_READY_LIMIT_S
        while not _healthy(http):
            if child.poll() is not None or time.monotonic() > deadline:
                raise LocalTTSFailed(f"tts-server on {http} did not become healthy")
            time.sleep(0.2)
        yield ws


@contextlib.contextmanager
def _child(command: list[str], name: str) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` as a child process in its own session, ended on the way out; a stop's
    ``Stopped.ended`` names it (``name``) once it has ended."""
    child = subprocess.Popen(command, preexec_fn=_die_with_parent, start_new_session=True)
    try:
        yield child
    except Stopped as stopped:
        stopped.ended.append(end_child(child, name))
        raise
    finally:
        end_child(child, name)


def end_child(child: subprocess.Popen[bytes], name: str, limit_s: float = CHILD_END_S) -> str:
    """SIGTERM, then SIGKILL after ``limit_s``; a second signal meanwhile (``hurried``) is
    passed on as SIGINT, and SIGKILL follows ``HURRIED_END_S`` after it. What became of the
    child, for a stop line."""
    if child.poll() is not None:
        return name
    child.terminate()
    deadline = time.monotonic() + limit_s
    after = f"{limit_s:g} s after SIGTERM"
    passed_on = False
    while child.poll() is None:
        if hurried() and not passed_on:
            child.send_signal(signal.SIGINT)
            passed_on = True
            deadline = min(deadline, time.monotonic() + HURRIED_END_S)
            after = f"{HURRIED_END_S:g} s after a second signal"
        if time.monotonic() >= deadline:
            child.kill()
            child.wait()
            return f"{name} (killed: it did not end {after})"
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=END_POLL_S)
    return name


def _listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def sagemaker_local_problem() -> str | None:
    """Why ``local_sagemaker`` cannot run in this interpreter, or None."""
    if sys.version_info < (3, 12):
        return (
            "--tts sagemaker-local needs Python >= 3.12 (the SageMaker SDK does): run it from a "
            "3.12 venv with '.[agent,sagemaker,sagemaker-local]', e.g. "
            "TTS_SERVER_PYTHON=.venv/bin/python .venv312/bin/voice-agent dev --tts sagemaker-local"
        )
    for module in ("aws_sdk_sagemaker_runtime_http2", "awscrt", "hypercorn", "cryptography"):
        if importlib.util.find_spec(module) is None:
            return (
                f"--tts sagemaker-local needs {module}: pip install '.[sagemaker,sagemaker-local]'"
            )
    return None


@contextlib.contextmanager
def local_sagemaker(
    host: str,
    tts_port: int,
    port: int,
    *,
    engine: str | None = None,
    model_dir: Path | None = None,
) -> Iterator[dict[str, str]]:
    """The local TTS server (``local_tts``) behind the SageMaker emulator on ``port``; yields the
    client's env."""
    if problem := sagemaker_local_problem():
        raise SystemExit(f"voice-agent dev: {problem}")
    speech = local_tts(host, tts_port, engine=engine, model_dir=model_dir)
    with speech, tempfile.TemporaryDirectory() as tls_dir:
        command = [sys.executable, "-m", "sagemaker_local", "--container"]
        command += [f"http://{host}:{tts_port}", "--host", host, "--port", str(port)]
        emulator = f"the SageMaker emulator on {host}:{port}"
        with _child([*command, "--tls-dir", tls_dir], emulator) as child:
            deadline = time.monotonic() + EMULATOR_READY_LIMIT_S
            while not _listening(host, port):
                if child.poll() is not None or time.monotonic() > deadline:
                    raise LocalTTSFailed(f"the SageMaker emulator on {host}:{port} did not start")
                time.sleep(0.1)
            env = {
                "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": f"https://localhost:{port}",
                "TTS_SAGEMAKER_CA_BUNDLE": f"{tls_dir}/ca.pem",
                "TTS_SAGEMAKER_ENDPOINT": "kokoro-tts",
            }
            yield env | _signing_keys()


def _signing_keys() -> dict[str, str]:
    """Fake static keys when the AWS chain has none: the emulator checks signatures are there,
    nothing is sent to AWS."""
    import boto3

    if boto3.Session().get_credentials() is not None:
        return {}
    return {"AWS_ACCESS_KEY_ID": "AKIDLOCALEMULATOR", "AWS_SECRET_ACCESS_KEY": "local"}
