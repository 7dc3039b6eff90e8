"""The AG-UI client page (``agent/web/agui.html``, served at ``/`` with ``--protocol agui``) in
real headless Chromium against the dev server on the demo model and the real Kokoro TTS server:
a reply's ``voice.audio`` is heard. The page benchmark's init script (``bench/page/instrument.js``)
records every ``AudioBufferSourceNode`` started; this module's own init script keeps a copy of
each run's SSE body (a ``clone()`` of the response the page reads, so the page reads it as
before), so each source is matched with the ``voice.audio`` chunk it plays: sentence by sentence
in order, none overlapping the one before, and the reply's text shown."""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import BaseEvent, RunFinishedEvent

from agent.config import AgentConfig
from agent.core.llm import demo_reply
from agent.doors import devserver
from bench.page.run import INSTRUMENT
from tests.agent.agui_client import check_run, customs, ended, parse, text_of
from tests.e2e.browser_helpers import DESKTOP, PROMPT, SEAM_S, script_errors
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the browser
pytestmark = pytest.mark.timeout(300)

Page = Any  # playwright.sync_api.Page
REPLY_S = 120  # a whole reply on the loaded 2-core box
# Keeps each run's SSE body (window.__agui.runs) and the AudioContext the page plays on.
RECORD_RUNS = """(() => {
  const record = { runs: [], ctx: null };
  Object.defineProperty(window, "__agui", { value: record });
  const nativeFetch = window.fetch.bind(window);
  window.fetch = async (resource, options) => {
    const response = await nativeFetch(resource, options);
    if (String(resource).endsWith("/invocations")) {
      const run = { request: options && options.body, body: "", done: false };
      record.runs.push(run);
      response.clone().text().then(
        (text) => Object.assign(run, { body: text, done: true }),
        () => Object.assign(run, { done: true }),
      );
    }
    return response;
  };
  const start = AudioBufferSourceNode.prototype.start;
  AudioBufferSourceNode.prototype.start = function (...args) {
    record.ctx = this.context;
    return start.apply(this, args);
  };
})();"""


@pytest.fixture(scope="module")
def agui_stack(tts_server: ServerThread) -> Iterator[ServerThread]:
    """The dev server speaking AG-UI (``voice-agent dev --protocol agui``), shared by the
    module, on the demo model and the real TTS server."""
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url)
    server = ServerThread(devserver.create_app(config, protocol="agui")).start()
    yield server
    server.stop()


@pytest.fixture
def agui_page(browser: Any, agui_stack: ServerThread) -> Iterator[Page]:
    """A fresh tab of the AG-UI page (its own thread), instrumented; fails the test on any
    script error on the page."""
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    tab.add_init_script(path=str(INSTRUMENT))
    tab.add_init_script(RECORD_RUNS)
    problems = script_errors(tab)
    tab.goto(f"{agui_stack.http_url}/")
    tab.wait_for_selector("#prompt")
    yield tab
    context.close()
    assert not problems, problems


def send(page: Page, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")


def run_events(page: Page, n: int = 1) -> list[BaseEvent]:
    """Run ``n``'s events (its whole SSE body, once it ended), each parsed by ag-ui-protocol."""
    page.wait_for_function(
        f"__agui.runs.length >= {n} && __agui.runs[{n - 1}].done", timeout=REPLY_S * 1000
    )
    body: str = page.evaluate(f"__agui.runs[{n - 1}].body")
    lines = [line for line in body.splitlines() if line.startswith("data: ")]
    return [parse(line.removeprefix("data: ")) for line in lines]


def sources(page: Page) -> list[dict[str, Any]]:
    """Every source started, in order: ``when`` on the audio clock and ``duration``, seconds."""
    return page.evaluate("__page.sources.map((s) => ({...s}))")  # type: ignore[no-any-return]


def chunk_seconds(events: list[BaseEvent]) -> list[tuple[int, float]]:
    """Each ``voice.audio`` chunk's sentence and length, in the order they came."""
    return [
        (value["segmentId"], len(base64.b64decode(value["audio"])) // 2 / value["sampleRate"])
        for value in customs(events, "voice.audio")
    ]


def test_the_page_plays_each_sentence_in_order_without_overlap_and_shows_the_text(
    agui_page: Page,
) -> None:
    send(agui_page, PROMPT)
    events = check_run(run_events(agui_page))
    assert isinstance(ended(events), RunFinishedEvent) and ended(events).outcome is None
    chunks = chunk_seconds(events)
    played = sources(agui_page)
    assert len(played) == len(chunks)  # every chunk was scheduled, once
    for (_, seconds), source in zip(chunks, played, strict=True):
        assert source["duration"] == pytest.approx(seconds, abs=1e-4)
        assert source["rate"] == SAMPLE_RATE  # the player's context: no resampling
    order = [segment for segment, _ in chunks]
    assert order == sorted(order) and set(order) == {0, 1, 2, 3}  # sentence by sentence
    for before, after in itertools.pairwise(played):
        end = before["when"] + before["duration"]
        assert after["when"] >= end - SEAM_S, f"overlap: {before} {after}"
    heard: dict[int, float] = {}
    for segment, seconds in chunks:
        heard[segment] = heard.get(segment, 0.0) + seconds
    for end in customs(events, "voice.sentence.end"):
        assert heard[end["segmentId"]] * 1000 == pytest.approx(end["audioMs"], abs=0.1)
    last = played[-1]["when"] + played[-1]["duration"]
    agui_page.wait_for_function(f"__agui.ctx.currentTime >= {last}", timeout=REPLY_S * 1000)
    reply = demo_reply(PROMPT, 4)
    assert text_of(events) == reply
    assert agui_page.inner_text("#log .user") == PROMPT
    assert agui_page.inner_text("#log .assistant") == reply  # the text shown, whole
    assert agui_page.inner_text("#status").startswith("first audio ")
    assert not agui_page.locator("#log .error").count()


def test_stop_silences_the_reply_and_ends_its_turn_and_the_next_run_sends_the_thread(
    agui_page: Page, agui_stack: ServerThread
) -> None:
    send(agui_page, "Tell me a long story about the sea")
    agui_page.wait_for_function("__page.sources.length > 0", timeout=REPLY_S * 1000)
    with httpx.Client(base_url=agui_stack.http_url, timeout=5) as http:
        assert http.get("/ping").json()["status"] == "HealthyBusy"  # three sentences to go
        agui_page.click("#stop")
        stopped = len(sources(agui_page))
        assert agui_page.is_disabled("#stop")
        deadline = time.monotonic() + 5
        while http.get("/ping").json()["status"] != "Healthy":  # the turn ended
            assert time.monotonic() < deadline, "the run went on after Stop"
            time.sleep(0.05)
    agui_page.wait_for_timeout(500)
    assert len(sources(agui_page)) == stopped  # nothing more was scheduled
    send(agui_page, "And now a short one")
    events = check_run(run_events(agui_page, 2))
    assert isinstance(ended(events), RunFinishedEvent)
    sent = json.loads(agui_page.evaluate("__agui.runs[1].request"))
    roles = [message["role"] for message in sent["messages"]]
    assert roles[0] == "user" and roles[-1] == "user" and len(roles) >= 2  # the thread, whole
    assert sent["threadId"] == json.loads(agui_page.evaluate("__agui.runs[0].request"))["threadId"]
    assert len(sources(agui_page)) > stopped  # the next reply is heard
