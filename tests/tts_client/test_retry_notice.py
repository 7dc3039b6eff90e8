"""RetryNotice: an outage is logged when it starts and told once if it outlasts the delay."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tts_client.errors import TTSBusy, TTSConnectionError, TTSError
from tts_client.retry_notice import RetryNotice


def notice(told: list[TTSError], delay: float = 0.05) -> RetryNotice:
    return RetryNotice("ws://tts.example/ws", delay, told.append)


async def test_an_outage_that_lasts_is_logged_at_once_and_told_after_the_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[TTSError] = []
    busy = TTSBusy("every session has work")
    with caplog.at_level(logging.INFO, logger="tts_client"):
        notice(told).started(busy)
        assert told == []
        await asyncio.sleep(0.2)
    assert told == [busy]
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "ws://tts.example/ws: every session has work; retrying"


async def test_progress_before_the_delay_tells_nothing() -> None:
    told: list[TTSError] = []
    retry = notice(told)
    retry.started(TTSBusy("busy"))
    retry.progressed()
    await asyncio.sleep(0.2)
    assert told == []


async def test_one_notice_is_armed_at_a_time() -> None:
    told: list[TTSError] = []
    retry = notice(told)
    first, second = TTSBusy("first"), TTSBusy("second")
    retry.started(first)
    retry.started(second)
    await asyncio.sleep(0.2)
    assert told == [first]


async def test_reconnects_are_told_once_per_outage_and_only_while_audio_is_owed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[TTSError] = []
    retry = notice(told, delay=0.0)
    lost = TTSConnectionError("connection lost")
    with caplog.at_level(logging.INFO, logger="tts_client"):
        retry.reconnecting(lost, audio_owed=False)  # nobody waits: no notice
        await asyncio.sleep(0.05)
        assert told == []
        retry.reconnecting(lost, audio_owed=True)
        await asyncio.sleep(0.05)
        retry.cancel()  # connected again, but no progress yet: the same outage
        retry.reconnecting(lost, audio_owed=True)
        await asyncio.sleep(0.05)
        assert told == [lost]
        retry.progressed()
        retry.reconnecting(lost, audio_owed=True)  # a new outage
        await asyncio.sleep(0.05)
    assert told == [lost, lost]
    levels = [r.levelname for r in caplog.records]
    assert levels == ["INFO", "WARNING", "INFO", "WARNING"]
    assert caplog.records[1].getMessage() == "ws://tts.example/ws: connection lost; reconnecting"
