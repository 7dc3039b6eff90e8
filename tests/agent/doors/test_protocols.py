"""Which protocol the doors speak: the setting, its CLI flag, the image, the runtime, and what
each door serves once it is chosen (no TTS server needed: speech is down, the text still runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from agent.config import AgentConfig
from agent.doors import agentcore, devserver
from agent.doors.protocols import (
    PROTOCOL_VARIABLE,
    SERVER_PROTOCOL,
    ProtocolSettingError,
    check_protocol,
    protocol_from_env,
)
from deploy import plan
from tests.agent.agui_client import check_run, kinds, parse, run_input
from voice_agent_cli import cli

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port
CONFIG = AgentConfig(model="demo", tts_url=NOWHERE)
DOORS = {"agentcore": agentcore.create_app, "devserver": devserver.create_app}


@pytest.mark.parametrize(
    ("env", "protocol"),
    [({}, "http"), ({PROTOCOL_VARIABLE: ""}, "http"), ({PROTOCOL_VARIABLE: " AGUI "}, "agui")],
)
def test_the_setting_defaults_to_ours(env: dict[str, str], protocol: str) -> None:
    assert protocol_from_env(env) == protocol


def test_a_bad_setting_names_its_variable() -> None:
    with pytest.raises(
        ProtocolSettingError, match=f"{PROTOCOL_VARIABLE} must be one of http, agui"
    ):
        protocol_from_env({PROTOCOL_VARIABLE: "mcp"})
    with pytest.raises(ProtocolSettingError, match="--protocol"):
        check_protocol("a2a", "--protocol")
    assert issubclass(ProtocolSettingError, ValueError)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_door_refuses_a_bad_setting_with_its_typed_error_before_it_is_built(
    door: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROTOCOL_VARIABLE, "AGUI-WS")
    message = "VOICE_AGENT_PROTOCOL must be one of http, agui, not 'AGUI-WS'"
    with pytest.raises(ProtocolSettingError) as refused:
        DOORS[door](CONFIG)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        (PROTOCOL_VARIABLE, "mcp", "VOICE_AGENT_PROTOCOL must be one of http, agui, not 'mcp'"),
        (
            "VOICE_AGENT_EAGER_START",
            "maybe",
            "VOICE_AGENT_EAGER_START must be on or off, not 'maybe'",
        ),
        (
            "VOICE_AGENT_MODEL",
            "nonsense:x",
            "unknown model spec 'nonsense:x'; use 'demo', "
            "'bedrock:<model-id>' or 'openai:<base-url>#<model>'",
        ),
    ],
)
def test_the_agentcore_app_does_not_start_on_a_bad_setting(
    variable: str, value: str, line: str
) -> None:
    """The image's command (``python -m agent.doors.agentcore``) says what is wrong in one
    line and exits 2, as ``voice-agent dev`` does."""
    env = {**os.environ, variable: value}
    argv = [sys.executable, "-m", "agent.doors.agentcore"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"voice-agent (AgentCore): {line}"]


def test_voice_agent_dev_takes_the_protocol() -> None:
    parser = cli.build_parser("dev")
    assert parser.parse_args(["dev", "--protocol", "agui"]).protocol == "agui"
    assert parser.parse_args(["dev"]).protocol is None  # then VOICE_AGENT_PROTOCOL, else http
    with pytest.raises(SystemExit):
        parser.parse_args(["dev", "--protocol", "mcp"])


def test_deploy_names_the_runtimes_protocol_as_the_doors_do() -> None:
    assert plan.SERVER_PROTOCOL == SERVER_PROTOCOL
    spec = plan.AgentSpec("n", "image", "role", tts_endpoint="tts", region="us-east-1")
    (ours,) = plan.agent_calls(spec, None)
    assert ours.params["protocolConfiguration"] == {"serverProtocol": "HTTP"}
    assert "VOICE_AGENT_PROTOCOL" not in ours.params["environmentVariables"]
    agui = plan.AgentSpec("n", "image", "role", "tts", "us-east-1", protocol="agui")
    (call,) = plan.agent_calls(agui, None)
    assert call.params["protocolConfiguration"] == {"serverProtocol": "AGUI"}
    assert call.params["environmentVariables"]["VOICE_AGENT_PROTOCOL"] == "agui"
    bad = plan.AgentSpec("n", "image", "role", "tts", "us-east-1", protocol="mcp")
    assert any("--protocol 'mcp'" in p for p in bad.problems(built=True))


@pytest.fixture(params=sorted(DOORS))
def agui_client(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    """A door chosen by the environment, as the image chooses it."""
    monkeypatch.setenv(PROTOCOL_VARIABLE, "agui")
    app = DOORS[request.param](CONFIG)
    assert app.state.protocol == "agui"
    with TestClient(app, base_url="http://localhost") as client:
        yield client


def test_a_door_chosen_agui_answers_a_run_in_ag_ui_even_without_speech(
    agui_client: TestClient,
) -> None:
    response = agui_client.post("/invocations", json=run_input("Hello", "t-nospeech"))
    assert response.status_code == 200
    events = check_run(
        [parse(line.removeprefix("data: ")) for line in response.text.splitlines() if line]
    )
    assert kinds(events)[:3] == ["RUN_STARTED", "voice.start", "voice.error"]  # tts_unavailable
    assert kinds(events)[-1] == "RUN_FINISHED" and "TEXT_MESSAGE_CONTENT" in kinds(events)
    ours = agui_client.post("/invocations", json={"prompt": "Hello"})
    assert ours.json()["error"]["code"] == "invalid_run_input"  # our body is not a run here


def test_over_ws_a_door_chosen_agui_refuses_what_is_not_a_run_and_goes_on(
    agui_client: TestClient,
) -> None:
    with agui_client.websocket_connect("ws://localhost/ws") as socket:
        socket.send_text("[]")
        assert parse(socket.receive_text()).model_dump()["code"] == "invalid_run_input"
        socket.send_bytes(b"\xff")
        assert parse(socket.receive_text()).model_dump()["code"] == "invalid_utf8"
        socket.send_text("x" * (1024 * 1024 + 1))
        assert parse(socket.receive_text()).model_dump()["code"] == "message_too_large"
        socket.send_text("\u00e9" * (512 * 1024 + 1))  # its bytes over 1 MiB, not its characters
        assert parse(socket.receive_text()).model_dump()["code"] == "message_too_large"
        socket.send_text("{}")
        assert parse(socket.receive_text()).model_dump()["code"] == "invalid_run_input"


def test_the_dev_server_serves_the_ag_ui_page_at_its_root() -> None:
    with TestClient(
        devserver.create_app(CONFIG, protocol="agui"), base_url="http://localhost"
    ) as c:
        page = c.get("/")
        assert page.status_code == 200 and "AG-UI" in page.text
        assert c.get("/web/agui.js").status_code == 200
    with TestClient(
        devserver.create_app(CONFIG, protocol="http"), base_url="http://localhost"
    ) as c:
        assert "AG-UI" not in c.get("/").text  # ours: the voice chat
