"""A reply paused for the user's speech: held until words decide, played on at its bound."""

from __future__ import annotations

import asyncio

from agent.core.playback import Playback
from agent.events import ReplyPaused, ReplyResumed
from agent.leg.reply_hold import PlayOnTimer, ReplyHold


def test_a_pause_is_held_until_taken_and_plays_on_once() -> None:
    playback = Playback()
    playback.started("t1")
    hold = ReplyHold(playback, resume_s=1.5)
    assert not hold.holding and hold.play_on(10.0) is None  # nothing paused
    assert hold.pause(10.0) == ReplyPaused("t1") and hold.holding
    assert hold.due(11.49) is None and hold.due(11.5) == ReplyResumed("t1")
    assert hold.holding and hold.due(12.0) is None  # played on once; its words still awaited
    pause = hold.taken()
    assert pause is not None and pause.resumed and not hold.holding
    assert hold.play_on(12.0, pause) is None  # it plays on already
    hold.pause(13.0)
    hold.drop()  # cut, or another turn started
    assert not hold.holding and hold.due(20.0) is None


async def test_the_timer_awaits_its_latest_time_unless_cancelled() -> None:
    calls: list[float] = []

    async def due() -> None:
        calls.append(asyncio.get_running_loop().time())

    timer = PlayOnTimer(due)
    start = asyncio.get_running_loop().time()
    timer.at(start + 10.0)
    timer.at(start + 0.02)  # instead of the one before
    await asyncio.sleep(0.1)
    assert len(calls) == 1 and calls[0] >= start + 0.02
    timer.at(asyncio.get_running_loop().time() + 0.02)
    timer.cancel()
    await asyncio.sleep(0.05)
    assert len(calls) == 1
