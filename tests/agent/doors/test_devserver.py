"""The dev server's own request checks, before any turn starts (no TTS server needed): limits,
origins (CORS and the WebSocket handshake), and files from ``agent/web/`` only."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.staticfiles import StaticFiles
from fastapi.testclient import TestClient
from starlette.routing import Mount
from starlette.testclient import WebSocketDenialResponse
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from agent.browser_leg import SESSION_HEADER, page_module
from agent.config import AgentConfig
from agent.doors.devserver import LEG_MODULE, WEB, create_app
from agent.doors.origins import check_origin
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread
from voice_agent_cli import cli

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port
LOCAL = "http://localhost"  # a name the dev server answers to (Host), as a local browser uses


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(
        create_app(AgentConfig(model="demo", tts_url=NOWHERE)), base_url=LOCAL
    ) as client:
        yield client


def test_an_oversized_body_is_413_with_a_typed_error(client: TestClient) -> None:
    body = json.dumps({"prompt": "x" * 64 * 1024}).encode()  # over the 64 KiB limit
    response = client.post("/invocations", content=body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    assert client.get("/ping").json() == {"status": "Healthy"}  # still serving, not busy


@pytest.mark.parametrize(
    ("body", "code"), [(b"{oops", "invalid_json"), (b"\xff\xfe", "invalid_utf8")]
)
def test_a_body_that_is_not_json_is_400_typed(client: TestClient, body: bytes, code: str) -> None:
    response = client.post("/invocations", content=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize(
    ("method", "path", "status", "error", "allow"),
    [
        (
            "GET",
            "/invocations",
            405,
            {"code": "method_not_allowed", "message": "GET /invocations is not allowed; use POST"},
            "POST",
        ),
        ("POST", "/ping", 405, {"code": "method_not_allowed"}, "GET"),
        ("GET", "/nowhere", 404, {"code": "not_found", "message": "nothing at GET /nowhere"}, None),
        ("GET", "/web/nowhere.js", 404, {"code": "not_found"}, None),  # the static files too
    ],
)
def test_what_the_routing_refuses_has_the_typed_error_shape(
    client: TestClient,
    method: str,
    path: str,
    status: int,
    error: dict[str, str],
    allow: str | None,
) -> None:
    response = client.request(method, path)
    assert response.status_code == status and response.headers.get("allow") == allow
    body = response.json()
    assert body.keys() == {"error"} and body["error"].keys() == {"code", "message"}
    assert error.items() <= body["error"].items()


def test_a_validation_error_is_a_typed_400() -> None:
    app = create_app(AgentConfig(model="demo", tts_url=NOWHERE))

    @app.get("/probe")  # no route of the server validates parameters yet; a later one may
    async def probe(n: int) -> dict[str, int]:
        return {"n": n}

    with TestClient(app, base_url=LOCAL) as client:
        response = client.get("/probe", params={"n": "many"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["message"].startswith("query.n: ")


def test_config_offers_the_websocket_leg_first(client: TestClient) -> None:
    assert client.get("/config").json()["transports"] == ["websocket", "sse"]


def test_the_websocket_leg_answers_without_speech(client: TestClient) -> None:
    """/ws is served even while the TTS server is down; a bad message keeps the socket open."""
    with client.websocket_connect("ws://localhost/ws") as socket:
        assert socket.receive_json()["type"] == "ready"
        socket.send_bytes(b"not json")
        assert socket.receive_json()["code"] == "invalid_json"
        socket.send_json({"type": "cancel"})
        assert socket.receive_json() == {"type": "cancelled", "turn_id": None}


# --- origins: CORS for POST /invocations, and the /ws handshake -----------------------------

FOREIGN = "https://evil.example"
FRONT_END = "https://app.example.com"


def test_a_page_of_another_origin_cannot_start_a_turn(client: TestClient) -> None:
    response = client.post("/invocations", json={"prompt": "hi"}, headers={"Origin": FOREIGN})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in response.headers
    preflight = client.options(
        "/invocations",
        headers={"Origin": FOREIGN, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 403
    assert client.get("/ping").json() == {"status": "Healthy"}  # no turn was started


@pytest.mark.parametrize(
    "headers",
    [{}, {"Origin": LOCAL}, {"Origin": "HTTP://LocalHost"}],
    ids=["no-origin", "same-origin", "same-origin-any-case"],
)
def test_its_own_pages_and_clients_without_an_origin_get_through(
    client: TestClient, headers: dict[str, str]
) -> None:
    response = client.post("/invocations", content=b"{oops", headers=headers)
    assert response.json()["error"]["code"] == "invalid_json"  # the route itself answered


@pytest.mark.parametrize(
    "origin", ["http://localhost:8000", "https://localhost", "null", "http://127.0.0.1"]
)
def test_a_near_miss_of_its_own_origin_is_foreign(client: TestClient, origin: str) -> None:
    response = client.get("/config", headers={"Origin": origin})
    assert response.status_code == 403


def test_an_allowed_front_end_gets_cors_headers_and_others_stay_out() -> None:
    config = AgentConfig(model="demo", tts_url=NOWHERE, allow_origins=(FRONT_END + "/",))
    with TestClient(create_app(config), base_url=LOCAL) as client:
        preflight = client.options(
            "/invocations",
            headers={
                "Origin": FRONT_END,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == FRONT_END
        refused = client.post("/invocations", content=b"[]", headers={"Origin": FRONT_END})
        assert refused.json()["error"]["code"] == "invalid_request"  # through, to the parser
        assert refused.headers["access-control-allow-origin"] == FRONT_END
        assert client.get("/config", headers={"Origin": FOREIGN}).status_code == 403


def test_a_rebound_name_is_refused_even_as_its_own_origin(client: TestClient) -> None:
    """DNS rebinding: a page of evil.example, its name now pointing at 127.0.0.1, is same-origin
    by its Host header; the host check refuses it before the origin check could let it in."""
    rebound = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    response = client.post("/invocations", json={"prompt": "hi"}, headers=rebound)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "host_not_allowed"
    with pytest.raises(WebSocketDenialResponse):
        client.websocket_connect("ws://evil.example:8000/ws", headers=rebound).__enter__()
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000", "LOCALHOST"):
        response = client.post("/invocations", content=b"{oops", headers={"Host": host})
        assert response.json()["error"]["code"] == "invalid_json"  # the route itself answered


def test_any_host_is_served_when_told_and_a_malformed_entry_fails_at_start() -> None:
    config = AgentConfig(model="demo", tts_url=NOWHERE, allow_hosts=("*",))
    with TestClient(create_app(config), base_url="http://voice.lan") as client:
        assert client.get("/config").status_code == 200
    with pytest.raises(ValueError, match="a name or an address"):
        create_app(AgentConfig(model="demo", tts_url=NOWHERE, allow_hosts=("http://x",)))


@pytest.mark.parametrize("entry", ["app.example.com", "https://a.example/path", "https://a:x"])
def test_a_malformed_allowed_origin_fails_at_start(entry: str) -> None:
    with pytest.raises(ValueError, match="scheme://host"):
        create_app(AgentConfig(model="demo", tts_url=NOWHERE, allow_origins=(entry,)))
    assert check_origin(" HTTPS://App.Example.com/ ") == FRONT_END


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    """The dev server on a real socket (uvicorn), speech down."""
    config = AgentConfig(model="demo", tts_url=NOWHERE, allow_origins=(FRONT_END,))
    served = ServerThread(create_app(config)).start()
    yield served
    served.stop()


async def test_a_foreign_page_cannot_open_the_websocket(server: ServerThread) -> None:
    """Cross-site WebSocket hijacking: the handshake itself is refused, with a typed 403."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(f"ws://127.0.0.1:{server.port}/ws", origin=Origin(FOREIGN)):
            pytest.fail("the handshake was accepted")
    assert refused.value.response.status_code == 403
    body = json.loads(refused.value.response.body or b"{}")
    assert body["error"]["code"] == "origin_not_allowed"


@pytest.mark.parametrize("origin", ["own", FRONT_END, None])
async def test_its_own_page_an_allowed_one_and_a_plain_client_open_it(
    server: ServerThread, origin: str | None
) -> None:
    if origin == "own":
        origin = f"http://127.0.0.1:{server.port}"
    sent = None if origin is None else Origin(origin)
    async with connect(f"ws://127.0.0.1:{server.port}/ws", origin=sent) as socket:
        assert json.loads(await socket.recv())["type"] == "ready"


# --- files from agent/web/ only -------------------------------------------------------------


def raw_get(server: ServerThread, path: str) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (no client normalizes it)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize(
    "path",
    [
        "/web/../devserver.py",
        "/web/%2e%2e/devserver.py",
        "/web/%2E%2E/devserver.py",
        "/web/..%2fdevserver.py",
        "/web/%2e%2e%2fdevserver.py",
        "/web/..%5cdevserver.py",
        "/web/..\\devserver.py",
        "/web/....//devserver.py",
        "/web/%252e%252e/devserver.py",
        "/web//etc/passwd",
        "/web/%2fetc%2fpasswd",
        "/web/%2e%2e/%2e%2e/pyproject.toml",
        "/../agent/doors/devserver.py",
        "/web/index.html%00.py",
    ],
)
def test_no_path_reaches_a_file_outside_the_web_folder(server: ServerThread, path: str) -> None:
    status, body = raw_get(server, path)
    assert status in (400, 404)
    assert b"create_app" not in body and b"root:" not in body and b"[project]" not in body


def test_the_web_folder_itself_is_served(server: ServerThread) -> None:
    status, body = raw_get(server, "/web/app.js")
    assert status == 200 and body == (WEB / "app.js").read_bytes()


def test_the_page_reads_the_browser_legs_constants_from_the_server(server: ServerThread) -> None:
    status, body = raw_get(server, LEG_MODULE)
    assert status == 200 and body.decode() == page_module()
    assert f'export const SESSION_HEADER = "{SESSION_HEADER}";' in body.decode()
    assert f"export const SAMPLE_RATE = {SAMPLE_RATE};" in body.decode()
    imports = {
        line.split("from ")[-1]
        for path in WEB.glob("*.js")
        for line in path.read_text().splitlines()
        if line.startswith("import ")
    }
    assert '"./browser-leg.js";' in imports and not (WEB / "browser-leg.js").exists()


def test_every_file_in_the_web_folder_lies_inside_it() -> None:
    """No symlink in agent/web/ leads out of it, and one added later would not be followed."""
    root = WEB.resolve()
    for path in WEB.rglob("*"):
        assert path.resolve().is_relative_to(root), f"{path} leads outside agent/web/"
    app = create_app(AgentConfig(model="demo", tts_url=NOWHERE))
    (static,) = [route.app for route in app.routes if isinstance(route, Mount)]
    assert isinstance(static, StaticFiles) and not static.follow_symlink
    assert [Path(d) for d in static.all_directories] == [WEB]


def test_the_dev_server_binds_loopback_by_default() -> None:
    args = cli.build_parser("dev").parse_args(["dev"])
    assert (args.host, args.allow_origin) == ("127.0.0.1", None)
    args = cli.build_parser("dev").parse_args(
        ["dev", "--allow-origin", FRONT_END, "--allow-origin", "http://localhost:5173"]
    )
    assert args.allow_origin == [FRONT_END, "http://localhost:5173"]
