"""The origin and host guard of the dev server, as ASGI middleware around a bare app.

Allow-list matches are exact (scheme, host and port): a name that merely starts like an
allowed origin, such as ``https://app.example.com.evil.example``, is foreign.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from agent.doors.origins import (
    CLOSE_POLICY,
    OriginGuard,
    check_host,
    check_origin,
    host_name,
    own_origin,
)

FRONT_END = "https://app.example.com"
SERVED = "served"  # what the wrapped app answers


def scope(
    kind: str = "http",
    headers: dict[str, str] | None = None,
    scheme: str = "http",
    extensions: dict[str, Any] | None = None,
) -> Scope:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    built: Scope = {"type": kind, "scheme": scheme, "headers": raw, "path": "/", "method": "GET"}
    if extensions is not None:
        built["extensions"] = extensions
    return built


async def inner(scope: Scope, receive: Receive, send: Send) -> None:
    received = await receive() if scope["type"] != "lifespan" else None
    await send({"type": SERVED, "scope_type": scope["type"], "received": received})


async def call(guard: OriginGuard, request: Scope) -> list[Message]:
    """The messages ``guard`` sends for ``request``."""
    sent: list[Message] = []

    async def receive() -> Message:
        if request["type"] == "websocket":
            return {"type": "websocket.connect"}
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard(request, receive, send)
    return sent


def guard(*allow: str, hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")) -> OriginGuard:
    return OriginGuard(inner, allow=allow, hosts=hosts)


def page(origin: str | None, host: str = "localhost:8000") -> dict[str, str]:
    headers = {"Host": host}
    if origin is not None:
        headers["Origin"] = origin
    return headers


# --- allow-list entries and host names ------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "canonical"),
    [
        (" HTTPS://App.Example.com/ ", FRONT_END),
        ("https://app.example.com:8443", "https://app.example.com:8443"),
        ("HTTPS://APP.EXAMPLE.BOX/", "https://app.example.box"),  # only the one "/" is cut
        ("https://a.example:1", "https://a.example:1"),  # the lowest port
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("*", "*"),
        (" * ", "*"),
        ("null", "null"),
        ("NULL", "null"),
    ],
)
def test_an_allowed_origin_is_kept_as_a_browser_writes_it(entry: str, canonical: str) -> None:
    assert check_origin(entry) == canonical


@pytest.mark.parametrize(
    "entry",
    [
        "app.example.com",  # no scheme
        "https://",  # no host
        "https://a.example/path",
        "https://a.example?q=1",
        "https://a.example#top",
        "https://a:x",  # a port that is not a number
        "https://a.example:0",
        "https://a.example:70000",
        "https://user@a.example",
    ],
)
def test_an_allowed_origin_is_scheme_host_and_port_only(entry: str) -> None:
    with pytest.raises(ValueError, match=r"^an allowed origin is scheme://host\[:port\]") as bad:
        check_origin(entry)
    assert repr(entry.strip().rstrip("/").lower()) in str(bad.value)


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        ("localhost", "localhost"),
        (" LocalHost ", "localhost"),
        ("voice.lan:8000", "voice.lan"),
        ("::1", "::1"),  # a bare IPv6 address
        ("[::1]", "::1"),
        ("[::1]:8000", "::1"),
        ("*", "*"),
        (" * ", "*"),
    ],
)
def test_an_allowed_host_is_a_lower_cased_name(entry: str, name: str) -> None:
    assert check_host(entry) == name


@pytest.mark.parametrize("entry", ["", "http://x", "a b", "x:port", "x/y", "u@x"])
def test_an_allowed_host_that_is_not_a_name_fails(entry: str) -> None:
    with pytest.raises(ValueError, match=r"^an allowed host is a name or an address, or '\*'"):
        check_host(entry)


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("localhost:8000", "localhost"),
        ("[::1]:8000", "::1"),
        ("LOCALHOST", "localhost"),
        ("localhost:x", None),
        ("u@localhost", None),
        ("u:p@localhost", None),
        ("localhost/x", None),
        ("localhost?x", None),
        ("", None),
    ],
)
def test_the_name_in_a_host_header(host: str, name: str | None) -> None:
    assert host_name(host) == name


@pytest.mark.parametrize(
    ("scheme", "host", "origin"),
    [
        ("http", "LocalHost:8000", "http://localhost:8000"),
        ("https", "voice.lan", "https://voice.lan"),
        ("ws", "localhost:8000", "http://localhost:8000"),
        ("wss", "voice.lan", "https://voice.lan"),
    ],
)
def test_the_servers_own_origin_is_its_host_header_with_the_page_scheme(
    scheme: str, host: str, origin: str
) -> None:
    assert own_origin(scope(headers={"Host": host}, scheme=scheme)) == origin


def test_a_request_without_a_host_header_has_no_own_origin() -> None:
    assert own_origin(scope()) is None


# --- which pages get in ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [
        "https://app.example.com.evil.example",  # starts like the allowed origin
        "https://app.example.community",
        "https://app.example.co",
        "https://app.example.com:8443",
        "http://app.example.com",
        "https://evil.example/https://app.example.com",
        "https://sub.app.example.com",
        "null",
    ],
)
def test_only_an_exact_allow_list_match_lets_a_foreign_page_in(origin: str) -> None:
    allowed = guard(FRONT_END)
    assert allowed.allowed(FRONT_END, scope(headers=page(FRONT_END)))
    assert allowed.allowed("HTTPS://APP.EXAMPLE.COM", scope(headers=page(FRONT_END)))
    assert not allowed.allowed(origin, scope(headers=page(origin)))
    refused = allowed.refusal(scope(headers=page(origin)))
    assert refused is not None
    error, status = refused
    assert (error.code, status) == ("origin_not_allowed", 403)
    assert error.message == f"origin {origin!r} may not use this server"


def test_its_own_origin_and_a_client_without_one_get_in() -> None:
    plain = guard()
    assert plain.refusal(scope(headers=page(None))) is None
    assert plain.refusal(scope(headers=page("http://localhost:8000"))) is None
    assert plain.refusal(scope(headers=page("HTTP://LOCALHOST:8000"))) is None
    assert plain.refusal(scope(headers=page("http://localhost:8001"))) is not None
    assert plain.refusal(scope(headers=page("https://localhost:8000"))) is not None


def test_an_allow_list_of_any_and_of_null() -> None:
    assert guard("*").refusal(scope(headers=page("https://anything.example"))) is None
    opaque = guard("null")
    assert opaque.refusal(scope(headers=page("null"))) is None
    assert opaque.refusal(scope(headers=page("https://anything.example"))) is not None


def test_a_host_the_server_does_not_answer_to_is_refused_first() -> None:
    allowed = guard("*")
    refused = allowed.refusal(scope(headers=page(None, host="evil.example:8000")))
    assert refused is not None
    error, status = refused
    assert (error.code, status) == ("host_not_allowed", 400)
    assert error.message == (
        "host 'evil.example:8000' is not a name of this server (add it with --allow-host)"
    )
    no_host = allowed.refusal(scope())
    assert no_host is not None and no_host[0].message.startswith("host '' ")
    assert guard(hosts=("*",)).refusal(scope(headers=page(None, host="evil.example"))) is None
    assert guard(hosts=("voice.lan",)).refusal(scope(headers=page(None, host="voice.lan"))) is None


# --- the middleware's answers ---------------------------------------------------------------


async def test_an_allowed_request_reaches_the_app() -> None:
    sent = await call(guard(FRONT_END), scope(headers=page(FRONT_END)))
    received = {"type": "http.request", "body": b"", "more_body": False}
    assert sent == [{"type": SERVED, "scope_type": "http", "received": received}]


async def test_lifespan_is_passed_through_unchecked() -> None:
    sent = await call(guard(), {"type": "lifespan"})
    assert sent == [{"type": SERVED, "scope_type": "lifespan", "received": None}]


async def test_a_refused_request_is_a_typed_403_and_the_app_never_runs() -> None:
    origin = "https://app.example.com.evil.example"
    sent = await call(guard(FRONT_END), scope(headers=page(origin)))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 403
    assert json.loads(sent[1]["body"]) == {
        "error": {
            "code": "origin_not_allowed",
            "message": f"origin {origin!r} may not use this server",
        }
    }


async def test_a_refused_handshake_is_a_denial_response_where_the_server_can_send_one() -> None:
    headers = page("https://evil.example")
    denial = {"websocket.http.response": {}}
    sent = await call(guard(), scope("websocket", headers, "ws", extensions=denial))
    assert sent[0]["type"] == "websocket.http.response.start" and sent[0]["status"] == 403
    body = b"".join(m.get("body", b"") for m in sent[1:])
    assert json.loads(body)["error"]["code"] == "origin_not_allowed"


async def test_a_refused_handshake_is_closed_with_policy_violation_otherwise() -> None:
    sent = await call(guard(), scope("websocket", page("https://evil.example"), "ws"))
    assert sent == [
        {"type": "websocket.close", "code": CLOSE_POLICY, "reason": "origin_not_allowed"}
    ]
    assert CLOSE_POLICY == 1008
    for extensions in ({}, {"other": {}}):
        sent = await call(guard(), scope("websocket", page("null"), "ws", extensions=extensions))
        assert sent[0]["type"] == "websocket.close"
