"""``voice-agent chat``: against the real local dev server, and AgentCore's URL with fake keys."""

from __future__ import annotations

import io
import re
import socket
import wave
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from agent.browser_leg import SESSION_HEADER
from agent.config import AgentConfig
from agent.core.llm import demo_reply
from agent.doors import devserver
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread
from voice_agent_cli import chat, cli

ARN = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/voice_agent-Ab12Cd34Ef"
SESSION = "chat-test-session-0123456789abcdef0123"  # AgentCore wants at least 33 characters


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keys in the environment, the first link of the standard chain; no files, no network."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "AWS_SESSION_TOKEN": "session-token-example",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_the_presigned_url_has_agentcores_documented_shape(fake_credentials: None) -> None:
    handshake = chat.runtime_handshake(ARN, SESSION)
    url = urlsplit(handshake.url)
    assert handshake.headers == {}  # everything is in the URL, as a browser needs it
    assert (url.scheme, url.netloc) == ("wss", "bedrock-agentcore.us-west-2.amazonaws.com")
    assert url.path == f"/runtimes/{quote(ARN, safe='')}/ws"
    query = {k: v[0] for k, v in parse_qs(url.query, strict_parsing=True).items()}
    assert query.pop("qualifier") == "DEFAULT"
    assert query.pop(SESSION_HEADER) == SESSION
    assert query.pop("X-Amz-Algorithm") == "AWS4-HMAC-SHA256"
    date = query.pop("X-Amz-Date")
    assert re.fullmatch(r"\d{8}T\d{6}Z", date)
    credential = f"AKIDEXAMPLE/{date[:8]}/us-west-2/bedrock-agentcore/aws4_request"
    assert query.pop("X-Amz-Credential") == credential
    assert query.pop("X-Amz-Expires") == "300"
    assert query.pop("X-Amz-SignedHeaders") == "host"
    assert query.pop("X-Amz-Security-Token") == "session-token-example"
    assert re.fullmatch(r"[0-9a-f]{64}", query.pop("X-Amz-Signature"))
    assert query == {}


def test_the_region_flag_wins_over_the_arns(fake_credentials: None) -> None:
    url = urlsplit(chat.runtime_handshake(ARN, SESSION, region="eu-central-1").url)
    assert url.netloc == "bedrock-agentcore.eu-central-1.amazonaws.com"
    assert (
        "/eu-central-1/bedrock-agentcore/aws4_request" in parse_qs(url.query)["X-Amz-Credential"][0]
    )


def test_a_bearer_token_goes_in_the_headers_and_nothing_is_signed(fake_credentials: None) -> None:
    handshake = chat.runtime_handshake(ARN, SESSION, qualifier="prod", bearer_token="tok")
    assert handshake.url == (
        f"wss://bedrock-agentcore.us-west-2.amazonaws.com/runtimes/{quote(ARN, safe='')}"
        "/ws?qualifier=prod"
    )
    assert handshake.headers == {"Authorization": "Bearer tok", SESSION_HEADER: SESSION}


@pytest.fixture(scope="module")
def dev_server(tts_server: ServerThread) -> Iterator[ServerThread]:
    app = devserver.create_app(AgentConfig(model="demo", tts_url=tts_server.ws_url))
    server = ServerThread(app).start()
    yield server
    server.stop()


def wav_seconds(path: Path) -> float:
    with wave.open(str(path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (SAMPLE_RATE, 1, 2)
        return wav.getnframes() / SAMPLE_RATE


def test_chat_prints_the_reply_and_saves_its_audio(
    dev_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "turn.wav"
    url = f"ws://127.0.0.1:{dev_server.port}/ws"
    prompt = "Say something short"
    cli.main(["chat", "--url", url, "--prompt", prompt, "--voice", "jm_kumo", "-o", str(output)])
    out, err = capsys.readouterr()
    assert out == demo_reply(prompt, 4) + "\n"
    seconds = wav_seconds(output)
    assert seconds > 2 and f"saved {seconds:.1f} s of audio" in err


def test_chat_reads_prompts_from_stdin_one_turn_each_on_one_socket(
    dev_server: ServerThread,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = "chat-stdin"
    voice_agent = dev_server._server.config.app.state.voice_agent  # type: ignore[union-attr]
    agent = voice_agent.conversations.get(session).agent
    agent.model.update_config(sentences=1)
    monkeypatch.setattr("sys.stdin", io.StringIO("First line\n\nSecond line\n"))
    output = tmp_path / "both.wav"
    url = f"ws://127.0.0.1:{dev_server.port}/ws"
    cli.main(["chat", "--url", url, "--session-id", session, "--output", str(output)])
    out, _ = capsys.readouterr()
    assert out == f"{demo_reply('First line', 1)}\n{demo_reply('Second line', 1)}\n"
    assert wav_seconds(output) > 1  # both turns' audio, in one file
    assert len(agent.messages) == 4  # one conversation: both turns are in its history


def test_a_refused_prompt_is_reported_and_the_exit_status_is_1(
    dev_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"ws://127.0.0.1:{dev_server.port}/ws"
    with pytest.raises(SystemExit) as exit:
        cli.main(["chat", "--url", url, "--prompt", "hi", "--speed", "9"])
    assert exit.value.code == 1
    assert "[invalid_speed]" in capsys.readouterr().err


# --- no conversation: one line on stderr, exit 2 ----------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def chat_fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``voice-agent chat``; assert exit 2 and one line on stderr; that line."""
    with pytest.raises(SystemExit) as exit:
        cli.main(["chat", *argv, "--prompt", "hi"])
    assert exit.value.code == chat.NO_CONVERSATION == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("voice-agent chat: ")
    return err


def test_nothing_listening_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"ws://127.0.0.1:{free_port()}/ws"
    assert f"nothing listens at {url}" in chat_fails(["--url", url], capsys)


def test_an_http_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    err = chat_fails(["--url", "http://127.0.0.1:8000/ws"], capsys)
    assert "http://127.0.0.1:8000/ws is not a WebSocket URL" in err


def test_a_wrong_path_is_a_404_and_one_line(
    dev_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"ws://127.0.0.1:{dev_server.port}/wrong"
    err = chat_fails(["--url", url], capsys)
    assert f"{url} refused the WebSocket handshake: HTTP 404 no WebSocket at /wrong" in err


def test_the_tts_url_by_mistake_is_one_line_at_once(
    tts_server: ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    err = chat_fails(["--url", tts_server.ws_url], capsys)
    assert f"{tts_server.ws_url} is not the agent's socket (a TTS server's socket)" in err


def test_a_runtime_without_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata lookup
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    assert "no AWS credentials" in chat_fails(["--runtime-arn", ARN], capsys)
