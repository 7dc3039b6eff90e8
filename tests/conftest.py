"""Fixtures shared by every test package: one real Kokoro ONNX engine and a server using it.

``--real-model-last`` (the mutation runs' option, ``[tool.mutmut]`` in pyproject.toml) runs the
tests that load the real model after the others: mutmut runs a mutant's tests with ``-x`` in a
fresh process, so a test without the model usually fails first, seconds before the model
would have loaded. Its runs also take hypothesis's ``mutation`` profile: the same examples in
every run and no example database, so a mutant's verdict is its own (a failure one mutant's run
stored would otherwise be replayed first in every run after it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import settings

from tts_server.app import create_app
from tts_server.engines import Engine, load_engine
from tts_server.settings import Settings
from tts_server.testing.server_thread import ServerThread

REAL_MODEL_FIXTURES = frozenset({"engine", "real_torch_engine"})

settings.register_profile("mutation", derandomize=True, database=None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-model-last",
        action="store_true",
        help="run the tests that load the real model after the others (mutation runs)",
    )


def needs_the_real_model(item: pytest.Item) -> bool:
    """Marked slow, or asks (through any fixture) for the real engine."""
    fixtures = getattr(item, "fixturenames", ())
    return item.get_closest_marker("slow") is not None or not REAL_MODEL_FIXTURES.isdisjoint(
        fixtures
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--real-model-last"):
        items.sort(key=needs_the_real_model)  # stable: collection order within each kind


@pytest.fixture(scope="session")
def engine() -> Engine:
    """The embedded CPU engine as it starts by default (decoding in windows), loaded once per
    test session (about 4 s)."""
    return load_engine(Settings())


@pytest.fixture(scope="session")
def whole_engine(engine: Engine) -> Engine:
    """The embedded CPU engine decoding every sentence whole (``--no-windows``): the model's
    own audio, for tests that compare against it or feed it to another model."""
    return load_engine(Settings(windows=False))


def wait_healthy(url: str, limit_s: float = 60.0) -> dict[str, object]:
    """Poll ``/ping`` until it answers 200; return its body."""
    deadline = time.monotonic() + limit_s
    response = httpx.get(f"{url}/ping", timeout=5)
    while response.status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"not healthy within {limit_s} s: {response.text}")
        time.sleep(0.05)
        response = httpx.get(f"{url}/ping", timeout=5)
    return response.json()


def start_server(engine: Engine, port: int = 0, **settings: object) -> ServerThread:
    """A real TTS server on loopback around ``engine``, warmed up and healthy."""
    app = create_app(Settings(**settings), loader=lambda _settings: engine)  # type: ignore[arg-type]
    server = ServerThread(app, port=port).start()
    wait_healthy(server.http_url)
    return server


@pytest.fixture(scope="session")
def tts_server(engine: Engine) -> Iterator[ServerThread]:
    """One healthy TTS server for the whole session."""
    server = start_server(engine, max_queue=16)
    yield server
    server.stop()
