"""The shared /metrics pieces: error codes read from bodies, and the counting middleware (HTTP
errors and refused WebSocket handshakes)."""

from __future__ import annotations

from collections import Counter

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from observability.prometheus import HttpErrors, error_code


def test_the_code_comes_from_the_error_body_or_the_status() -> None:
    assert error_code(400, b'{"error": {"code": "invalid_json", "message": "x"}}') == "invalid_json"
    assert error_code(400, b'{"error": {"code": null, "type": "invalid_request_error"}}') == (
        "invalid_request_error"
    )  # OpenAI's shape
    assert error_code(422, b'{"detail": []}') == "http_422"
    assert error_code(500, b"Internal Server Error") == "http_500"
    assert error_code(400, b"[" * 5000) == "http_400"
    assert error_code(400, b'{"error": "flat"}') == "http_400"


def test_the_middleware_counts_error_responses_but_not_health_checks() -> None:
    counted: Counter[str] = Counter()
    big = {"error": {"code": "big", "message": "x" * 4096}}  # the 4096-byte cap

    async def chunks():  # an error body that streams in two parts
        yield b'{"error": {"code": '
        yield b'"streamed"}}'

    routes = [
        Route("/ok", lambda _: PlainTextResponse("fine")),
        Route("/ping", lambda _: JSONResponse({"status": "loading"}, status_code=503)),
        Route("/bad", lambda _: JSONResponse({"error": {"code": "nope"}}, status_code=400)),
        Route("/big", lambda _: JSONResponse(big, status_code=413)),
        Route("/stream", lambda _: StreamingResponse(chunks(), status_code=503)),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(HttpErrors, count=lambda code: counted.update([code]))
    with TestClient(app) as client:
        for path in ("/ok", "/ping", "/bad", "/bad", "/big", "/stream", "/missing"):
            client.get(path)
        assert client.get("/bad").json() == {"error": {"code": "nope"}}  # passed on as it was
    assert counted == {"nope": 3, "http_413": 1, "streamed": 1, "http_404": 1}


def test_the_middleware_counts_refused_handshakes_not_closes_after_accepting() -> None:
    counted: Counter[str] = Counter()

    async def refused(websocket: WebSocket) -> None:
        await websocket.close(1008, "origin_not_allowed")  # before accepting: a 403 handshake

    async def denied(websocket: WebSocket) -> None:
        body = {"error": {"code": "busy"}}
        await websocket.send_denial_response(JSONResponse(body, status_code=429))

    async def served(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.close(1000, "bye")  # an ordinary end, not an error

    routes = [
        WebSocketRoute("/refused", refused),
        WebSocketRoute("/denied", denied),
        WebSocketRoute("/served", served),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(HttpErrors, count=lambda code: counted.update([code]))
    with TestClient(app) as client:
        for path in ("/refused", "/denied"):
            with pytest.raises((WebSocketDisconnect, WebSocketDenialResponse)):
                client.websocket_connect(path).__enter__()
        with client.websocket_connect("/served") as socket, pytest.raises(WebSocketDisconnect):
            socket.receive_text()
    assert counted == {"origin_not_allowed": 1, "busy": 1}
