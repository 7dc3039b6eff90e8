"""Fixtures and helpers of the real-Chromium tests of the voice chat page.

A pytest plugin module: tests/e2e/test_browser.py (SSE) and test_ws_browser.py (WebSocket)
name it in ``pytest_plugins`` for its fixtures (the stacks, the browser, a fresh page) and
import its helpers.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from agent.config import AgentConfig, ListeningConfig
from agent.doors import devserver
from bench.page.run import CHROMIUM_ARGS, chromium_path
from tts_server.testing.server_thread import ServerThread

DOCS = Path(__file__).resolve().parents[2] / "docs"


# Page state, read in one round trip.
STATE_JS = """() => {
  const v = window.voiceChat;
  return {
    state: v.state, underruns: v.underruns, dropped: v.dropped, audio: {...v.audio},
    config: v.config, now: v.audioTime(), socket: {...v.socket},
    turns: v.turns.map((t) => ({
      ...t, latency: {...t.latency}, segments: t.segments.map((s) => ({...s})),
    })),
    scheduled: v.scheduled.map((e) => ({...e})),
  };
}"""


DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
# The demo model picks its sentences from the prompt. This one opens with a long first sentence
# (about 3.5 s of speech), as a real answer often does, so the 2-core CPU can synthesize the
# next sentence before the first one has finished playing.
PROMPT = "How does the voice agent keep speech flowing smoothly"
SCREENSHOT_LIMIT = 300 * 1024
SEAM_S = 1e-3

Page = Any  # playwright.sync_api.Page


@pytest.fixture(scope="module")
def stack(tts_server: ServerThread) -> Iterator[ServerThread]:
    """The dev server with the demo model and the real Kokoro TTS server. A reply paused for
    speech waits 4 s for its words (``resume_ms``; 1.5 s by default): the browser tests check
    what the words decide, and on a loaded 2-core box recognition can come after 1.5 s, when
    the reply would play on before its cut (the bound itself: tests/agent/leg)."""
    listening = ListeningConfig(resume_ms=4000)
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url, listening=listening)
    app = devserver.create_app(config)
    server = ServerThread(app).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def speechless_stack() -> Iterator[ServerThread]:
    """The dev server with its TTS URL pointing at a closed port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = AgentConfig(
        model="demo", tts_url=f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    )
    app = devserver.create_app(config)
    server = ServerThread(app).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    """A fresh tab (its own conversation); fails the test on any script error on the page."""
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    problems = script_errors(tab)
    yield tab
    context.close()
    assert not problems, problems


def script_errors(tab: Page) -> list[str]:
    """A list that fills with every script error of ``tab`` (uncaught, or logged as an error)."""
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    return problems


def prompt_bodies(page: Page) -> list[dict[str, Any]]:
    """A list that fills with the JSON body of every prompt the page POSTs (the SSE leg)."""
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda request: (
            bodies.append(request.post_data_json) if request.url.endswith("/invocations") else None
        ),
    )
    return bodies


def open_chat(page: Page, server: ServerThread) -> None:
    page.goto(f"{server.http_url}/")
    page.wait_for_function("window.voiceChat && voiceChat.config.source !== 'loading'")


def type_and_send(page: Page, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")


def state(page: Page) -> dict[str, Any]:
    return page.evaluate(STATE_JS)  # type: ignore[no-any-return]


def wait_turn(page: Page, n: int, status: str = "complete", timeout_s: float = 30) -> None:
    page.wait_for_function(
        f"voiceChat.turns.length >= {n} && voiceChat.turns[{n - 1}].status !== 'streaming'",
        timeout=timeout_s * 1000,
    )
    turn = state(page)["turns"][n - 1]
    assert turn["status"] == status, turn["errors"]


def wait_playing(page: Page, n: int, seconds: float = 0.3) -> None:
    """Wait until turn ``n`` has been audible for ``seconds`` on the audio clock."""
    page.wait_for_function(
        f"""() => {{
          const first = voiceChat.scheduled.find((e) => e.turn === {n});
          return first !== undefined && voiceChat.audioTime() > first.startTime + {seconds};
        }}""",
        timeout=30_000,
    )


def wait_ahead(page: Page, n: int, seconds: float = 1.0) -> None:
    """Wait until turn ``n`` has audio scheduled ``seconds`` past the audio clock: a barge-in
    then lands while some of it is still to play, however the synthesis kept pace (between
    two windows of a sentence the player may have nothing queued)."""
    page.wait_for_function(
        f"""() => voiceChat.scheduled.some(
          (e) => e.turn === {n} && e.startTime + e.duration > voiceChat.audioTime() + {seconds}
        )""",
        timeout=30_000,
    )


def chunks_of(snapshot: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [e for e in snapshot["scheduled"] if e["turn"] == n]


def assert_in_order(chunks: list[dict[str, Any]]) -> None:
    """Segments in order; each chunk starts no earlier than the one before ends (-1 ms)."""
    assert chunks, "no audio was scheduled"
    seqs = [c["seq"] for c in chunks]
    assert seqs == sorted(seqs), f"segments out of order: {seqs}"
    for before, after in itertools.pairwise(chunks):
        end = before["startTime"] + before["duration"]
        assert after["startTime"] >= end - SEAM_S, f"overlap: {before} {after}"


def assert_gapless(chunks: list[dict[str, Any]]) -> None:
    """In order; each chunk that arrived in time starts exactly where the one before ends.

    Whether audio arrives in time is the machine's business (a loaded box synthesizes slower
    than real time; the benchmark counts underruns). What the player decides is asserted: a
    chunk is marked an underrun exactly when it arrived after the one before had finished.
    """
    assert_in_order(chunks)
    for before, after in itertools.pairwise(chunks):
        end = before["startTime"] + before["duration"]
        assert after["underrun"] == (after["scheduledAt"] > end), f"{before} {after}"
        if not after["underrun"]:
            assert abs(after["startTime"] - end) < SEAM_S, f"gap at a seam: {before} {after}"


def metric(page: Page, name: str) -> str:
    return page.inner_text(f'[data-metric="{name}"]')


def no_horizontal_overflow(page: Page) -> None:
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    assert width <= inner, f"the page is {width}px wide in a {inner}px viewport"


def use_transport(page: Page, transport: str) -> None:
    """Flip the page's transport switch: "websocket" or "sse"."""
    page.click(f"label[for=transport-{transport}]")
    assert page.is_checked(f"#transport-{transport}")
