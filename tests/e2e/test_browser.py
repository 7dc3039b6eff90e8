"""The voice chat page in real headless Chromium against the real local stack (demo model).

The dev server serves agent/web/ at ``/``; with the transport switch on SSE, the page POSTs
prompts, parses the event stream incrementally and plays the audio with the Web Audio API (the
WebSocket leg: test_ws_browser.py). These tests read the page's own
state (``window.voiceChat``, docs/web.md) to check what a listener would hear: text streaming,
gapless chunk scheduling, barge-in, Stop, and errors. They take a screenshot of a finished
turn; with UPDATE_SCREENSHOT=1 it replaces docs/screenshot.png (the one the README shows).

Needs Chromium (``apt-get install chromium``) and the ``playwright`` package; Playwright's own
browser downloads are not used.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import httpx
import pytest

from agent.browser_leg import SESSION_HEADER
from agent.core.llm import demo_reply
from tests.e2e.browser_helpers import (
    DOCS,
    PHONE,
    PROMPT,
    SCREENSHOT_LIMIT,
    Page,
    assert_gapless,
    assert_in_order,
    chunks_of,
    metric,
    no_horizontal_overflow,
    open_chat,
    prompt_bodies,
    state,
    type_and_send,
    use_transport,
    wait_ahead,
    wait_playing,
    wait_turn,
)
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the stacks, the browser, a fresh page


def test_a_turn_streams_text_and_plays_gaplessly(
    page: Page, stack: ServerThread, tmp_path: Path
) -> None:
    open_chat(page, stack)
    use_transport(page, "sse")
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
    assert turn["transport"] == "sse" and turn["text"] == demo_reply(PROMPT, 4)
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
    use_transport(page, "sse")
    type_and_send(page, "Tell me about streaming speech")
    wait_playing(page, 1)  # turn 1 is audible and still streaming

    wait_ahead(page, 1)  # and a second of it still to play
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
    wait_turn(page, 2, timeout_s=90)  # turn 2 waits for turn 1 to let go; slow on a busy box
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
    bodies = prompt_bodies(page)
    open_chat(page, stack)
    use_transport(page, "sse")
    assert page.is_disabled("#stop")
    page.select_option("#voice", "jm_kumo")
    page.fill("#speed", "1.5")
    assert page.inner_text("#speed-value") == "1.5×"
    type_and_send(page, "A long answer please")
    wait_playing(page, 1)
    sent = {"prompt": "A long answer please", "mode": "stream", "speed": 1.5, "voice": "jm_kumo"}
    sent["marks"] = True  # word highlighting is on by default (docs/web.md, Karaoke)
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
    use_transport(page, "sse")
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


# The widest figures each tile shows (a 29 s turn, as on a slow box), then, in the same frame,
# every part of the latency panel whose box leaves the viewport or whose text overflows.
WIDE_FIGURES_JS = """() => new Promise((resolve) => requestAnimationFrame(() => {
  const widest = {eot: "1,088 ms", asr: "29,210 ms",
                  ttft: "29,210 ms", ttfa: "29,210 ms", total: "29,210 ms", underruns: "12,345",
                  bytes: "999.9 KB", audio: "999.9 s", rate: "999.9 KB/s"};
  for (const [name, text] of Object.entries(widest)) {
    document.querySelector(`[data-metric="${name}"]`).textContent = text;
  }
  const parts = [...document.querySelectorAll("#latency-title, .metrics > div, .metrics dt, " +
    ".metrics dd, #server-metrics, #timeline, .legend")];
  const outside = parts.map((e) => [e, e.getBoundingClientRect()])
    .filter(([, r]) => r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth)
    .map(([e, r]) => `${e.id || e.className || e.tagName} ${JSON.stringify(r)}`);
  const overflowing = parts.filter((e) => e.scrollWidth > e.clientWidth)
    .map((e) => `${e.textContent}: ${e.scrollWidth} > ${e.clientWidth}`);
  const scrolls = [document.scrollingElement, document.querySelector(".side")]
    .filter((e) => e.scrollHeight > e.clientHeight).map((e) => e.className || e.tagName);
  resolve({outside, overflowing, scrolls});
}))"""


def test_at_1280_by_800_the_whole_latency_panel_is_in_view_and_no_figure_overflows(
    page: Page, speechless_stack: ServerThread
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_chat(page, speechless_stack)
    voice_agent = speechless_stack._server.config.app.state.voice_agent  # type: ignore[attr-defined]
    model = voice_agent.conversations.get(page.evaluate("voiceChat.conversationId")).agent.model
    model.update_config(sentences=12, tokens_per_second=2000)  # a long reply, a tall timeline
    type_and_send(page, "Tell me everything about streaming speech")
    wait_turn(page, 1)
    assert len(state(page)["turns"][0]["segments"]) == 12
    assert page.evaluate(WIDE_FIGURES_JS) == {"outside": [], "overflowing": [], "scrolls": []}
