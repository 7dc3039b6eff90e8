"""The voice picker's blend controls in real headless Chromium against the real local stack.

A blend is two voices and the first one's share (docs/web.md, Voice). The page sends it as the
grammar every route accepts, ``a(0.7)+b(0.3)``; the server speaks it, and the choice survives a
reload. Without a named first voice there is nothing to blend, so the controls are off.
"""

from __future__ import annotations

from tests.e2e.browser_helpers import (
    Page,
    chunks_of,
    open_chat,
    prompt_bodies,
    state,
    type_and_send,
    use_transport,
    wait_turn,
)
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the stacks, the browser, a fresh page


def test_a_blend_is_sent_spoken_and_remembered(page: Page, stack: ServerThread) -> None:
    bodies = prompt_bodies(page)
    open_chat(page, stack)
    use_transport(page, "sse")
    assert page.input_value("#voice") == "jf_alpha"
    assert page.is_disabled("#blend-share")  # no blend chosen: the mix does nothing
    assert page.is_disabled("#blend option[value=jf_alpha]")  # a voice is not blended with itself
    page.select_option("#blend", "jm_kumo")
    page.fill("#blend-share", "0.7")
    assert page.inner_text("#blend-share-value") == "70 / 30"
    type_and_send(page, "Blend them")
    wait_turn(page, 1)
    turn = state(page)["turns"][0]
    assert bodies[0]["voice"] == turn["voice"] == "jf_alpha(0.7)+jm_kumo(0.3)"
    assert not turn["errors"] and len(chunks_of(state(page), 1)) > 0  # the server spoke it

    page.reload()
    open_chat(page, stack)
    assert page.input_value("#blend") == "jm_kumo" and page.input_value("#blend-share") == "0.7"
    page.select_option("#voice", "jm_kumo")  # the blend's own voice: the blend is dropped
    assert page.input_value("#blend") == "" and page.is_disabled("#blend-share")
    type_and_send(page, "Just one")
    page.wait_for_function("voiceChat.turns.length === 1")
    page.wait_for_timeout(200)  # the request event reaches Python after the page records it
    assert bodies[1]["voice"] == "jm_kumo"


def test_server_default_has_nothing_to_blend(page: Page, speechless_stack: ServerThread) -> None:
    open_chat(page, speechless_stack)
    assert page.input_value("#voice") == ""  # "Server default": no voice list from the server
    assert page.is_disabled("#blend") and page.is_disabled("#blend-share")
