"""The voice chat page over the WebSocket leg (/ws), in real headless Chromium, real local stack.

The same checks as the SSE tests (test_browser.py) where they apply: gapless scheduling,
barge-in silencing the old turn, Stop; plus what is the socket's own: binary audio frames,
bytes received per second of audio in the latency panel, one socket for the conversation,
the `cancel` confirmed, and the fall-back to SSE when /ws does not open.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from agent.core.llm import demo_reply
from agent.core.memory import INTERRUPTED_NOTE, NOTHING_HEARD_NOTE
from agent.core.service import VoiceAgent
from tests.e2e.browser_helpers import (
    PROMPT,
    Page,
    assert_gapless,
    assert_in_order,
    chunks_of,
    metric,
    open_chat,
    state,
    type_and_send,
    wait_ahead,
    wait_playing,
    wait_turn,
)
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the stacks, the browser, a fresh page

ONE_FRAME_S = 0.1  # an audio frame holds at most 100 ms
# The reply of turn n as shown: its text outside `.unheard`, and inside.
REPLY_JS = """(n) => {
  const reply = document.querySelectorAll(".msg.agent")[n - 1];
  const body = reply.querySelector(".body").cloneNode(true);
  const unheard = [...body.querySelectorAll(".unheard")].map((e) => e.textContent).join(" ");
  body.querySelectorAll(".unheard").forEach((e) => e.remove());
  return {heard: body.textContent, unheard, cut: reply.dataset.cut === "true"};
}"""


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class SocketLog:
    """What went over the page's WebSockets: text frames parsed, binary frames' sizes."""

    def __init__(self, page: Page) -> None:
        self.sockets = 0
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any] | int] = []
        self.posts = 0
        page.on("websocket", self._opened)
        page.on("request", self._request)

    def _opened(self, ws: Any) -> None:
        self.sockets += 1
        ws.on("framesent", lambda payload: self.sent.append(json.loads(payload)))
        ws.on("framereceived", self._received)

    def _received(self, payload: str | bytes) -> None:
        self.received.append(len(payload) if isinstance(payload, bytes) else json.loads(payload))

    def _request(self, request: Any) -> None:
        self.posts += request.url.endswith("/invocations")

    def payload_bytes(self) -> int:
        """Bytes of every frame after `ready` (the text frames are ASCII JSON)."""
        return sum(
            f if isinstance(f, int) else len(json.dumps(f, separators=(",", ":")))
            for f in self.received[1:]
        )


def test_a_turn_over_the_websocket_plays_binary_audio_gaplessly(
    page: Page, stack: ServerThread
) -> None:
    log = SocketLog(page)
    open_chat(page, stack)
    assert state(page)["config"]["transports"] == ["websocket", "sse"]
    assert page.is_checked("#transport-websocket")  # the default where the server offers it

    type_and_send(page, PROMPT)
    wait_turn(page, 1, timeout_s=90)
    snapshot = state(page)
    turn = snapshot["turns"][0]
    latency = turn["latency"]
    assert turn["transport"] == "websocket" and not turn["fellBack"]
    assert turn["text"] == demo_reply(PROMPT, 4) and not turn["errors"]
    assert [s["seq"] for s in turn["segments"]] == [0, 1, 2, 3]

    # Every binary frame became one chunk, scheduled in order, seam to seam.
    chunks = chunks_of(snapshot, 1)
    assert_gapless(chunks)
    binary = [f for f in log.received if isinstance(f, int)]
    assert len(binary) == len(chunks) == latency["chunks"]
    scheduled_ms = sum(c["duration"] for c in chunks) * 1000
    assert scheduled_ms == pytest.approx(turn["server"]["audio_ms"], abs=1)
    assert latency["audioBytes"] == round(scheduled_ms * 48) == sum(binary) - 4 * len(binary)

    # One socket, no POST; the bytes counted are the frames' payloads, and the panel shows
    # them per second of audio: raw PCM is 48,000 B/s, the headers and JSON add a little.
    assert (log.sockets, log.posts) == (1, 0)
    assert [m["type"] for m in log.sent] == ["prompt"]
    assert latency["bytes"] == log.payload_bytes()
    per_audio_s = latency["bytes"] / (scheduled_ms / 1000)
    assert 48_000 < per_audio_s < 48_000 * 1.1
    shown = re.fullmatch(r"([\d.]+) KB/s", metric(page, "rate"))
    assert shown and float(shown[1]) == pytest.approx(per_audio_s / 1024, abs=0.06)
    assert "WebSocket" in page.inner_text("#latency-turn")


def test_barge_in_over_the_websocket_silences_the_old_turn_within_one_frame(
    page: Page, stack: ServerThread
) -> None:
    log = SocketLog(page)
    open_chat(page, stack)
    type_and_send(page, "Tell me about streaming speech")
    wait_playing(page, 1)
    wait_ahead(page, 1)  # and a second of it still to play
    type_and_send(page, "Stop, and tell me something else")  # barge in
    wait_turn(page, 2, timeout_s=90)  # a loaded 2-core box synthesizes slowly
    wait_playing(page, 2)
    snapshot = state(page)
    first = snapshot["turns"][0]
    assert first["status"] == "interrupted" and first["stoppedAt"] is not None
    old = chunks_of(snapshot, 1)
    assert old and all(c["scheduledAt"] <= first["stoppedAt"] for c in old)
    assert all(c["endedAt"] is not None for c in old), "a source of turn 1 is still playing"
    assert all(c["endedAt"] <= first["stoppedAt"] + ONE_FRAME_S for c in old)
    cut_short = [c for c in old if c["startTime"] + c["duration"] > first["stoppedAt"] + 0.1]
    assert cut_short, "barge-in came after turn 1's audio had all played: nothing to test"

    # On the wire: prompt, cancel, where playback stopped, prompt on one socket; the cancel was
    # confirmed, and the frames of turn 1 still in flight were dropped, never played.
    assert (log.sockets, log.posts) == (1, 0)
    assert [m["type"] for m in log.sent] == ["prompt", "cancel", "heard", "prompt"]
    assert log.sent[2] == {"type": "heard", **first["heard"]}
    assert first["heard"]["turn_id"] == first["id"] and log.sent[3]["heard"] == first["heard"]
    sock = snapshot["socket"]
    assert (sock["opened"], sock["cancels"], sock["confirmed"]) == (1, 1, 1)
    kinds = [f if isinstance(f, int) else f["type"] for f in log.received]
    confirmed = kinds.index("cancelled")
    assert kinds[confirmed + 1] == "turn.start"  # nothing of turn 1 after its confirmation
    assert snapshot["turns"][1]["status"] == "complete"
    assert_in_order(chunks_of(snapshot, 2))

    # The page shows what the conversation kept: the words heard plain, the rest struck out.
    reply = page.evaluate(REPLY_JS, 1)
    assert reply["cut"] and reply["unheard"].strip(), reply
    voice_agent: VoiceAgent = stack._server.config.app.state.voice_agent
    key = page.evaluate("voiceChat.conversationId")
    kept = voice_agent.conversations.get(key).agent.messages[1]["content"][0]["text"]
    kept = "" if kept == NOTHING_HEARD_NOTE else kept.removesuffix(INTERRUPTED_NOTE)
    assert words(reply["heard"]) == words(kept), (reply, kept)
    assert words(reply["heard"] + " " + reply["unheard"]) == words(first["text"])


def test_stop_over_the_websocket_cancels_the_turn_on_the_server(
    page: Page, stack: ServerThread
) -> None:
    log = SocketLog(page)
    open_chat(page, stack)
    type_and_send(page, "A long answer please")
    wait_playing(page, 1)
    page.click("#stop")
    page.wait_for_function("voiceChat.socket.confirmed === 1")
    # The sources stop on the audio clock, so look once that clock is a frame past the Stop.
    page.wait_for_function(
        f"voiceChat.audioTime() > voiceChat.turns[0].stoppedAt + {ONE_FRAME_S}", timeout=5_000
    )
    snapshot = state(page)
    stopped_at = snapshot["turns"][0]["stoppedAt"]
    assert snapshot["state"] == "idle" and snapshot["turns"][0]["status"] == "stopped"
    chunks = chunks_of(snapshot, 1)
    assert all(c["endedAt"] is not None for c in chunks), "audio still playing after Stop"
    assert all(c["endedAt"] <= stopped_at + ONE_FRAME_S for c in chunks)
    assert [m["type"] for m in log.sent] == ["prompt", "cancel", "heard"]
    deadline = time.monotonic() + 10
    while httpx.get(f"{stack.http_url}/ping").json()["status"] != "Healthy":
        assert time.monotonic() < deadline, "the server is still busy with the stopped turn"
        time.sleep(0.05)
    page.wait_for_timeout(500)
    assert len(chunks_of(state(page), 1)) == len(chunks)  # nothing scheduled after Stop


def test_the_page_falls_back_to_sse_when_the_socket_does_not_open(
    page: Page, stack: ServerThread
) -> None:
    log = SocketLog(page)
    page.route_web_socket(re.compile(r"/ws\?"), lambda ws: ws.close())  # as a server without it
    open_chat(page, stack)
    prompt = "Are you there?"
    type_and_send(page, prompt)
    wait_turn(page, 1, timeout_s=90)
    turn = state(page)["turns"][0]
    assert (turn["transport"], turn["fellBack"], log.posts) == ("sse", True, 1)
    assert turn["text"] == demo_reply(prompt, 4) and turn["latency"]["chunks"] > 0
    assert "SSE (fallback)" in page.inner_text("#latency-turn")
