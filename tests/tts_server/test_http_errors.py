"""The error shape of what FastAPI would answer itself: validation errors and a bug's 500."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tts_server import http_errors


def _app() -> FastAPI:
    app = FastAPI()
    http_errors.install(app)

    @app.get("/count")
    async def count(n: int) -> dict[str, int]:
        return {"n": n}

    @app.get("/v1/broken")
    async def broken() -> None:
        raise RuntimeError("a bug")

    return app


def test_a_validation_error_is_invalid_message_naming_the_parameter() -> None:
    response = TestClient(_app()).get("/count", params={"n": "many"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_message" and "query.n" in error["message"]


def test_a_bug_is_a_500_in_the_routes_shape() -> None:
    response = TestClient(_app(), raise_server_exceptions=False).get("/v1/broken")
    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "message": "RuntimeError: a bug",
            "type": "server_error",
            "param": None,
            "code": "internal",
        }
    }


def test_a_status_without_a_phrase_is_named_by_its_number() -> None:
    assert http_errors.status_code_name(405) == "method_not_allowed"
    assert http_errors.status_code_name(599) == "http_599"
