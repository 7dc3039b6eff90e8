"""The voice chat page in real headless Chromium against the real local stack (demo model).

The dev server serves agent/web/ at ``/``; the page POSTs prompts, parses the event stream
incrementally and plays the audio with the Web Audio API. These tests read the page's own
state (``window.voiceChat``, docs/web.md) to check what a listener would hear: text streaming,
gapless chunk scheduling, barge-in, Stop, and errors. They take a screenshot of a finished
turn; with UPDATE_SCREENSHOT=1 it replaces docs/screenshot.png (the one the README shows).

Needs Chromium (``apt-get install chromium``) and the ``playwright`` package; Playwright's own
browser downloads are not used.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import sync_playwright

from agent import devserver
from agent.config import AgentConfig
from agent.devserver import SESSION_HEADER
from agent.llm import demo_reply
from tests.e2e.browser_helpers import (
    CHROMIUM_ARGS,
    DOCS,
    STATE_JS,
    chromium_path,
)
from tests.servers import ServerThread

CHROMIUM = chromium_path()

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
    """The dev server with the demo model and the real Kokoro TTS server."""
    app = devserver.create_app(AgentConfig(model="demo", tts_url=tts_server.ws_url))
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
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    """A fresh tab (its own conversation); fails the test on any script error on the page."""
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    yield tab
    context.close()
    assert not problems, problems


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


def test_a_turn_streams_text_and_plays_gaplessly(
    page: Page, stack: ServerThread, tmp_path: Path
) -> None:
    open_chat(page, stack)
    snapshot = state(page)
    assert snapshot["config"]["model"] == "demo"
    assert "not a real LLM" in page.inner_text("#model")  # the demo model says what it is
    voices = page.eval_on_selector_all("#voice option", "options => options.map(o => o.value)")
    assert voices == snapshot["config"]["voices"] and {"jf_alpha", "jm_kumo"} <= set(voices)
    assert page.input_value("#voice") == snapshot["config"]["defaultVoice"] == "jf_alpha"

    type_and_send(page, PROMPT)
    page.wait_for_selector(".msg.agent .seg")  # a segment is marked while text still streams
    wait_turn(page, 1)
    snapshot = state(page)
    turn = snapshot["turns"][0]
    latency = turn["latency"]

    # The text streamed in: the whole reply, over more than a second. The first sentence was
    # playing before the turn's last audio arrived (heard while the turn still streams).
    assert turn["text"] == demo_reply(PROMPT, 4)
    assert page.inner_text(".msg.agent .body").strip() == turn["text"]
    assert turn["textEndMs"] - latency["ttftMs"] > 1000
    segments = turn["segments"]
    assert [s["seq"] for s in segments] == [0, 1, 2, 3]
    assert latency["ttfaMs"] < segments[0]["playStartMs"] < segments[-1]["firstChunkMs"]
    assert not turn["errors"]

    # Every chunk was scheduled, in order, seam to seam unless it came late (an underrun,
    # counted the same way everywhere; on an idle machine there are none).
    chunks = chunks_of(snapshot, 1)
    assert len(chunks) == latency["chunks"] == sum(s["chunks"] for s in turn["segments"])
    assert_gapless(chunks)
    underruns = sum(c["underrun"] for c in chunks)
    assert latency["underruns"] == snapshot["underruns"] == underruns
    scheduled_ms = sum(c["duration"] for c in chunks) * 1000
    assert scheduled_ms == pytest.approx(turn["server"]["audio_ms"], abs=1)
    assert latency["audioBytes"] == round(scheduled_ms * 48)  # 24 kHz, 2 bytes a sample
    assert latency["bytes"] > latency["audioBytes"]  # base64 and the text around it

    # The audio clock runs (headless Chromium plays into nowhere, but in real time).
    page.wait_for_function(f"voiceChat.audioTime() > {chunks[0]['startTime'] + 0.5}", timeout=5000)
    audio = state(page)["audio"]
    assert audio["running"] is True and audio["contextState"] == "running", audio
    assert audio["sampleRate"] == 24000

    # The latency panel shows the turn's numbers.
    number = re.compile(r"^\d[\d,]* ms$")
    for name in ("ttft", "ttfa", "total"):
        assert number.match(metric(page, name)), (name, metric(page, name))
    assert metric(page, "underruns") == str(underruns)
    assert re.match(r"^[\d.]+ (KB|MB)$", metric(page, "bytes"))
    assert page.locator("#timeline .tl-play").count() == 4

    # The sentence being heard is highlighted; screenshot it for the docs.
    page.wait_for_selector(".seg.speaking", timeout=15_000)
    assert page.inner_text("#status") == "Speaking"
    page.wait_for_timeout(300)  # let the highlight's fade finish
    shot = DOCS / "screenshot.png" if os.environ.get("UPDATE_SCREENSHOT") else tmp_path / "turn.png"
    page.screenshot(path=shot)
    assert shot.stat().st_size < SCREENSHOT_LIMIT

    # Phone width: one column, nothing wider than the screen.
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(100)
    no_horizontal_overflow(page)
    for selector in ("#prompt", "#send", "#stop", "#timeline", ".metrics"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    page.screenshot(path=tmp_path / "phone.png", full_page=True)


def test_barge_in_stops_the_old_turn_at_once_and_plays_the_new_one(
    page: Page, stack: ServerThread
) -> None:
    headers: list[dict[str, str]] = []
    page.on(
        "request",
        lambda request: (
            headers.append(request.headers) if request.url.endswith("/invocations") else None
        ),
    )
    open_chat(page, stack)
    type_and_send(page, "Tell me about streaming speech")
    wait_playing(page, 1)  # turn 1 is audible and still streaming

    type_and_send(page, "Stop, and tell me something else")  # barge in
    page.wait_for_function("voiceChat.turns.length === 2")
    page.wait_for_timeout(300)
    snapshot = state(page)
    first = snapshot["turns"][0]
    assert first["status"] == "interrupted" and first["stoppedAt"] is not None
    old = chunks_of(snapshot, 1)
    assert old, "turn 1 had scheduled audio"
    # Nothing of turn 1 was scheduled after the barge-in, and every source of it has stopped,
    # including those that were due to play seconds later.
    assert all(c["scheduledAt"] <= first["stoppedAt"] for c in old)
    assert all(c["endedAt"] is not None for c in old), "a source of turn 1 is still playing"
    cut_short = [c for c in old if c["startTime"] + c["duration"] > first["stoppedAt"] + 0.1]
    assert cut_short, "barge-in came after turn 1's audio had all played: nothing to test"
    assert all(c["endedAt"] < c["startTime"] + c["duration"] for c in cut_short)
    assert all(c["endedAt"] <= first["stoppedAt"] + 0.1 for c in old)

    # The new turn plays, and is the one highlighted.
    wait_turn(page, 2)
    wait_playing(page, 2)
    snapshot = state(page)
    assert_in_order(chunks_of(snapshot, 2))
    assert len(chunks_of(snapshot, 1)) == len(old)  # no late chunk of turn 1
    page.wait_for_selector(".msg.agent:last-of-type .seg.speaking")
    assert page.locator(".msg.agent").first.locator(".seg.speaking").count() == 0

    # Both requests belong to this tab's conversation.
    ids = {h.get(SESSION_HEADER.lower()) for h in headers}
    assert len(headers) == 2 and len(ids) == 1
    uuid4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert re.fullmatch(uuid4, ids.pop())


def test_stop_button_silences_the_turn_and_cancels_the_request(
    page: Page, stack: ServerThread
) -> None:
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda request: (
            bodies.append(request.post_data_json) if request.url.endswith("/invocations") else None
        ),
    )
    open_chat(page, stack)
    assert page.is_disabled("#stop")
    page.select_option("#voice", "jm_kumo")
    page.fill("#speed", "1.5")
    assert page.inner_text("#speed-value") == "1.5×"
    type_and_send(page, "A long answer please")
    wait_playing(page, 1)
    sent = {"prompt": "A long answer please", "mode": "stream", "speed": 1.5, "voice": "jm_kumo"}
    assert bodies == [sent]
    page.click("#stop")
    page.wait_for_timeout(300)
    snapshot = state(page)
    turn = snapshot["turns"][0]
    assert snapshot["state"] == "idle" and page.is_disabled("#stop")
    assert turn["status"] in ("stopped", "complete")  # complete: its stream had already ended
    chunks = chunks_of(snapshot, 1)
    assert all(c["endedAt"] is not None for c in chunks), "audio still playing after Stop"
    assert any(c["endedAt"] < c["startTime"] + c["duration"] for c in chunks)
    assert page.locator(".seg.speaking").count() == 0
    assert page.inner_text("#status") == "Ready"
    if turn["status"] == "stopped":
        assert "stopped" in page.inner_text(".msg.agent .meta")
    # The server saw the client go and cancelled the turn.
    deadline = time.monotonic() + 10
    while httpx.get(f"{stack.http_url}/ping").json()["status"] != "Healthy":
        assert time.monotonic() < deadline, "the server is still busy with the stopped turn"
        time.sleep(0.05)
    page.wait_for_timeout(500)
    assert len(chunks_of(state(page), 1)) == len(chunks)  # nothing scheduled after Stop


def test_speech_down_shows_the_error_while_text_still_streams(
    page: Page, speechless_stack: ServerThread
) -> None:
    open_chat(page, speechless_stack)
    assert state(page)["config"]["source"] == "fallback"  # no voices from the server
    assert page.input_value("#voice") == ""  # "Server default": the request names no voice
    page.click("label[for=mode-batch]")
    prompt = "Are you there?"
    type_and_send(page, prompt)
    wait_turn(page, 1)
    snapshot = state(page)
    turn = snapshot["turns"][0]
    assert turn["mode"] == "batch" and turn["voice"] is None
    assert turn["text"] == demo_reply(prompt, 4)
    assert [e["code"] for e in turn["errors"]] == ["tts_unavailable"]
    error = page.locator(".msg.agent .error")
    assert error.count() == 1 and error.get_attribute("role") == "alert"
    assert "Speech is unavailable" in error.inner_text() and "tts_unavailable" in error.inner_text()
    assert not chunks_of(snapshot, 1) and turn["latency"]["ttfaMs"] is None
    assert metric(page, "ttfa") == "—" and re.match(r"^\d[\d,]* ms$", metric(page, "ttft"))
    assert snapshot["state"] == "idle"


def test_event_parser_is_independent_of_network_chunking(page: Page, stack: ServerThread) -> None:
    """sse.js gives the same events however the body is cut: CRLF split, UTF-8 split, pings."""
    open_chat(page, stack)
    result = page.evaluate(
        """async () => {
          const { readEvents } = await import("/web/sse.js");
          const body = ': ping\\r\\n\\r\\n' +
            'data: {"type":"text.delta","text":"Grüße, 世界"}\\r\\n\\r\\n' +
            'data: {"type":"segment",\\r\\ndata: "seq":0}\\r\\n\\r\\n' +
            'event: x\\ndata: {"type":"turn.end"}\\n\\n';
          const bytes = new TextEncoder().encode(body);
          const parse = async (size) => {
            const stream = new ReadableStream({ start(c) {
              for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size));
              c.close();
            } });
            const events = [];
            for await (const e of readEvents(new Response(stream))) events.push(e);
            return JSON.stringify(events);
          };
          const results = new Set();
          for (let size = 1; size <= bytes.length; size++) results.add(await parse(size));
          return [...results];
        }"""
    )
    assert len(result) == 1, result
    assert json.loads(result[0]) == [
        {"type": "text.delta", "text": "Grüße, 世界"},
        {"type": "segment", "seq": 0},
        {"type": "turn.end"},
    ]
