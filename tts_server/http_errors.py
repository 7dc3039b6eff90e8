"""One error shape on every HTTP status, FastAPI's own answers (404, 405, 500) included.

The server's routes answer ``{"error": {"code", "message"}}`` (the protocol's shape), and the
OpenAI routes (``/v1/...``) OpenAI's ``{"error": {"message", "type", "param", "code"}}``,
which has the same two fields. FastAPI's default ``{"detail": ...}`` never leaves the server.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from tts_protocol import ErrorCode

OPENAI_PREFIX = "/v1/"


def status_code_name(status: int) -> str:
    """The code of a status no route answers itself: ``405`` → ``method_not_allowed``."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return f"http_{status}"
    return phrase.lower().replace(" ", "_").replace("-", "_")


def error_response(
    request: Request, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """``code`` and ``message`` in the shape of the route asked for."""
    error: dict[str, Any] = {"code": code, "message": message}
    if request.url.path.startswith(OPENAI_PREFIX):
        kind = "server_error" if status >= 500 else "invalid_request_error"
        error = {"message": message, "type": kind, "param": None, "code": code}
    return JSONResponse({"error": error}, status_code=status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    status, path = exc.status_code, request.url.path
    headers = dict(exc.headers or {})
    if status == 404:
        message = f"there is no route {path}"
    elif status == 405:
        allowed = headers.get("allow", headers.get("Allow", ""))
        message = f"{path} does not take {request.method}; it takes {allowed or 'no method'}"
    else:
        message = str(exc.detail)
    return error_response(request, status, status_code_name(status), message, headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return error_response(request, 400, ErrorCode.INVALID_MESSAGE, message)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug's 500 (Starlette re-raises ``exc`` afterwards, so the server logs its traceback)."""
    return error_response(request, 500, ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}")


def install(app: FastAPI) -> None:
    """Answer Starlette's HTTP errors, validation errors and unhandled ones in our shape."""
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
