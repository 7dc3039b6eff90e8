"""The page shows a turn's tool calls (``tool.start``, ``tool.end``) in the transcript and on the
timeline, on both legs, in real headless Chromium: the dev server voices the scripted
tool-calling agent of ``tests/agent/tool_model.py``. The WebSocket run takes a screenshot; with
UPDATE_SCREENSHOT=1 it replaces docs/tool_call.png (the one docs/your_agent.md shows)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.config import AgentConfig
from agent.doors import devserver
from agent.testing.tool_model import AFTER, BEFORE, prompt
from tests.agent.tool_model import create_agent
from tests.e2e.browser_helpers import (
    DOCS,
    SCREENSHOT_LIMIT,
    Page,
    open_chat,
    state,
    type_and_send,
    use_transport,
    wait_turn,
)
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the browser, a fresh page


@pytest.fixture(scope="module")
def tool_stack(tts_server: ServerThread) -> Iterator[ServerThread]:
    config = AgentConfig(agent_factory=create_agent, tts_url=tts_server.ws_url)
    server = ServerThread(devserver.create_app(config)).start()
    yield server
    server.stop()


@pytest.mark.parametrize("transport", ["websocket", "sse"])
def test_a_tool_call_is_shown_in_the_transcript_and_the_timeline(
    page: Page, tool_stack: ServerThread, transport: str, tmp_path: Path
) -> None:
    open_chat(page, tool_stack)
    use_transport(page, transport)
    type_and_send(page, prompt("calculate", expression="6 * 7"))
    wait_turn(page, 1)
    assert state(page)["config"]["model"] == "create_agent"  # not "demo": the page says so
    [call] = page.evaluate("voiceChat.turns[0].tools")
    assert (call["name"], call["status"]) == ("calculate", "ok")
    assert 0 < call["startMs"] <= call["endMs"]
    note = page.locator(".msg.agent .tool")
    assert note.get_attribute("data-status") == "ok"
    assert note.inner_text().startswith("calculate used (")
    body = page.inner_text(".msg.agent .body")
    assert body.startswith(BEFORE) and AFTER in body and "6 * 7 = 42" in body
    assert page.locator("#timeline rect.tl-tool").count() == 1
    assert [s["text"] for s in state(page)["turns"][0]["segments"]][:2] == [BEFORE, AFTER]
    if transport == "websocket":
        update = os.environ.get("UPDATE_SCREENSHOT")
        shot = DOCS / "tool_call.png" if update else tmp_path / "tool_call.png"
        page.screenshot(path=shot)
        assert shot.stat().st_size < SCREENSHOT_LIMIT
