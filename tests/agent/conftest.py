"""Fixtures the agent's tests share: a real TTS server on the fast fake engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread


@pytest.fixture(scope="module")
def fake_tts() -> Iterator[ServerThread]:
    """A real TTS server on the fast fake engine, one per test module: the turn, not the
    model, is under test."""
    server = start_server(FakeEngine())
    yield server
    server.stop()
