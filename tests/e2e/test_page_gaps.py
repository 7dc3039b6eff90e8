"""What the page plays has no hole: a reply in real headless Chromium, its Web Audio
instrumented by the page benchmark's init script (``bench/page/instrument.js``), every chunk
of the reply scheduled within 5 ms of the one before, on both legs. How soon it starts is the
benchmark's to say (``python -m bench.page``); a gap is a defect whatever the timing."""

from __future__ import annotations

from typing import Any

import pytest

from bench.page.figures import GAP_MS, chunks, gaps, where_dry
from bench.page.run import INSTRUMENT
from tests.e2e.browser_helpers import DESKTOP, Page, open_chat, type_and_send, use_transport
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the stack (dev server, real TTS), the browser
pytestmark = pytest.mark.timeout(300)

PROMPT = "Why stream audio over one connection?"  # the demo's four-sentence reply, about 14 s


def played(page: Page) -> dict[str, Any]:
    """The init script's record once the first turn has ended and all its audio has played."""
    page.wait_for_function(
        """() => {
          const t = voiceChat.turns;
          if (t.length < 1 || t[0].status === 'streaming') return false;
          const s = window.__page.sources;
          const last = s[s.length - 1];
          return !!last && performance.now() > last.plays + last.duration * 1000 + 200;
        }""",
        timeout=180_000,
    )
    return page.evaluate("window.__page")  # type: ignore[no-any-return]


def reply_in_a_new_tab(browser: Any, stack: ServerThread, transport: str) -> dict[str, Any]:
    """A new tab (a new conversation, the player's first lead) asks, and hears the reply."""
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        page.add_init_script(path=str(INSTRUMENT))
        open_chat(page, stack)
        use_transport(page, transport)
        type_and_send(page, PROMPT)
        record = played(page)
        assert page.evaluate("voiceChat.turns[0].status") == "complete"
    finally:
        context.close()
    return record


@pytest.fixture(scope="module")
def measured_here(browser: Any, stack: ServerThread) -> None:
    """One reply first, so that the TTS server's decode rate is this box's as the test loads it
    (Chromium, the agent and the server on the same cores), not the idle calibration's."""
    reply_in_a_new_tab(browser, stack, "websocket")


@pytest.mark.parametrize("transport", ["websocket", "sse"])
@pytest.mark.usefixtures("measured_here")
def test_a_reply_plays_without_a_gap_over_5_ms(
    browser: Any, stack: ServerThread, transport: str
) -> None:
    record = reply_in_a_new_tab(browser, stack, transport)
    reply = chunks(record["sources"], record["submitted"][0])
    assert sum(c.duration_ms for c in reply) > 8_000  # the whole reply was heard
    assert max(gaps(reply)) <= GAP_MS, where_dry(reply)
    assert min(gaps(reply)) > -0.01  # no chunk overlaps the one before
