"""What the page plays has no hole: a reply in real headless Chromium from the local stack as
a user starts it (``voice-agent dev``: the TTS server in its own process, paced), its Web Audio
instrumented by the page benchmark's init script (``bench/page/instrument.js``), every chunk
of the reply scheduled within 5 ms of the one before, on both legs. How soon it starts is the
benchmark's to say (``python -m bench.page``); a gap is a defect whatever the timing. So the
timing is generous: the player's lead is ``LEAD_S``, in the page and in the TTS server's pace
alike, so that the suite's own load on two cores (this test's browser, agent and server, and
whatever else runs) does not make a gap the default lead would rightly show on a loaded box."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.page.figures import GAP_MS, chunks, gaps, where_dry
from bench.page.run import local_stack, open_page, page_url, wait_played
from tests.e2e.browser_helpers import DESKTOP, use_transport

pytest_plugins = ("tests.e2e.browser_helpers",)  # the browser
pytestmark = pytest.mark.timeout(600)

PROMPT = "Why stream audio over one connection?"  # the demo's four-sentence reply, about 14 s
LEAD_S = 0.5


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """``voice-agent dev`` with the page benchmark's demo agent, shared by the module."""
    with local_stack(LEAD_S) as started:
        yield started


def reply_in_a_new_tab(browser: Any, url: str, transport: str) -> dict[str, Any]:
    """A new tab (a new conversation, the player's first lead) asks, and hears the reply."""
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = open_page(context, page_url(url, LEAD_S))
        use_transport(page, transport)
        page.fill("#prompt", PROMPT)
        page.press("#prompt", "Enter")
        record = wait_played(page)
        assert page.evaluate("voiceChat.turns[0].status") == "complete"
    finally:
        context.close()
    return record


@pytest.mark.parametrize("transport", ["websocket", "sse"])
def test_a_reply_plays_without_a_gap_over_5_ms(browser: Any, url: str, transport: str) -> None:
    record = reply_in_a_new_tab(browser, url, transport)
    reply = chunks(record["sources"], record["submitted"][0])
    assert sum(c.duration_ms for c in reply) > 8_000  # the whole reply was heard
    assert max(gaps(reply)) <= GAP_MS, where_dry(reply)
    assert min(gaps(reply)) > -0.01  # no chunk overlaps the one before
