"""The batch scheduler: continuous batching, buckets, order, cancellation, failures, stats."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from tts_server.engines.scheduler import BUCKET_EDGES, BatchScheduler, Piece, bucket_of


class Model:
    """A stand-in model run by the lanes: records each batch, can be held, can fail on a text.

    Its "audio" is the piece's phonemes as code points, so every caller can check that it got
    its own result.
    """

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lane_of: dict[str, int] = {}  # each piece's phonemes -> the lane that ran it
        self.interrupted: list[int] = []
        self.release = threading.Event()
        self.release.set()
        self.started = threading.Event()

    def run(self, lane: int, pieces: Sequence[Piece]) -> list[np.ndarray]:
        self.batches.append([p.phonemes for p in pieces])
        self.lane_of.update((p.phonemes, lane) for p in pieces)
        self.started.set()
        self.release.wait(30)
        if any("boom" in p.phonemes for p in pieces):
            raise ValueError("boom")
        return [np.array([ord(c) for c in p.phonemes], dtype=np.float32) for p in pieces]

    def interrupt(self, lane: int) -> None:
        self.interrupted.append(lane)
        self.release.set()


def piece(text: str) -> Piece:
    return Piece(text, (("af_heart", 1.0),), 1.0)


def text_of(audio: np.ndarray) -> str:
    return "".join(chr(int(c)) for c in audio)


@pytest.fixture
def model() -> Model:
    return Model()


def make(model: Model, **options: object) -> BatchScheduler:
    return BatchScheduler(
        model.run,
        size=lambda p: len(p.phonemes),
        interrupt=model.interrupt,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
async def held(model: Model) -> AsyncIterator[Model]:
    """The model holds its next batch until ``model.release`` is set."""
    model.release.clear()
    yield model
    model.release.set()


async def until(condition: object, limit_s: float = 10.0) -> None:
    async with asyncio.timeout(limit_s):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.001)


async def start_held_batch(scheduler: BatchScheduler, model: Model, text: str) -> asyncio.Task:
    """Submit ``text`` and wait until a lane is inside its (held) batch."""
    task = asyncio.create_task(scheduler.synthesize(piece(text)))
    await until(model.started.is_set)
    return task


def test_buckets_group_similar_lengths() -> None:
    assert bucket_of(1) == bucket_of(BUCKET_EDGES[0]) == 0
    assert bucket_of(BUCKET_EDGES[0] + 1) == 1
    assert bucket_of(10_000) == len(BUCKET_EDGES)


def test_bad_options_are_refused(model: Model) -> None:
    with pytest.raises(ValueError, match="max_batch >= 1"):
        make(model, max_batch=0)


def lane_threads(name: str) -> list[threading.Thread]:
    return sorted(
        (t for t in threading.enumerate() if t.name.startswith(f"{name}-lane-")),
        key=lambda t: t.name,
    )


def test_by_default_one_lane_runs_one_piece_at_once_without_waiting(model: Model) -> None:
    scheduler = BatchScheduler(model.run, size=len)
    assert (scheduler.lanes, scheduler.max_batch, scheduler.wait_s) == (1, 1, 0.0)
    (lane,) = lane_threads("engine")
    assert lane.daemon  # a lane never keeps the process alive
    scheduler.close()


def test_lanes_are_named_daemon_threads(model: Model) -> None:
    scheduler = make(model, lanes=2, name="named")  # a name no other engine in the run has
    assert scheduler.lanes == 2
    lanes = lane_threads("named")
    assert [t.name for t in lanes] == ["named-lane-0", "named-lane-1"]
    assert all(t.daemon for t in lanes)
    scheduler.close()


async def test_unbatched_runs_one_piece_at_a_time_in_arrival_order(
    model: Model, held: Model
) -> None:
    scheduler = make(model, max_batch=1)
    first = await start_held_batch(scheduler, model, "aaaa")
    rest = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("bbbb", "cc", "dddd")]
    await until(lambda: scheduler.stats.queued == 3)
    model.release.set()
    results = await asyncio.gather(first, *rest)
    assert [text_of(r) for r in results] == ["aaaa", "bbbb", "cc", "dddd"]
    assert model.batches == [["aaaa"], ["bbbb"], ["cc"], ["dddd"]]
    scheduler.close()


async def test_pieces_arriving_during_a_batch_join_the_next_one(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=8)
    first = await start_held_batch(scheduler, model, "a" * 5)
    late = [
        asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("b" * 5, "c" * 6, "d" * 7)
    ]
    await until(lambda: scheduler.stats.queued == 3)
    assert scheduler.stats.in_flight == 1
    model.release.set()
    results = await asyncio.gather(first, *late)
    assert [text_of(r) for r in results] == ["a" * 5, "b" * 5, "c" * 6, "d" * 7]
    assert model.batches == [["a" * 5], ["b" * 5, "c" * 6, "d" * 7]]  # continuous, not waves
    assert scheduler.stats.batches == 2 and scheduler.stats.pieces == 4
    scheduler.close()


async def test_a_batch_mixes_one_length_bucket_and_the_oldest_piece_goes_first(
    model: Model, held: Model
) -> None:
    scheduler = make(model, max_batch=8)
    first = await start_held_batch(scheduler, model, "x")
    texts = ["l" * 100, "s" * 5, "l" * 110, "s" * 6, "m" * 40]
    assert bucket_of(100) == bucket_of(110) != bucket_of(5) == bucket_of(6) != bucket_of(40)
    queued = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in texts]
    await until(lambda: scheduler.stats.queued == len(texts))
    model.release.set()
    await asyncio.gather(first, *queued)
    assert model.batches[1:] == [["l" * 100, "l" * 110], ["s" * 5, "s" * 6], ["m" * 40]]
    scheduler.close()


@dataclass(frozen=True)
class Step:
    """A job of another kind than a piece (as a window of a started sentence is)."""

    phonemes: str


async def test_a_batch_holds_jobs_of_one_kind(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=8)
    first = await start_held_batch(scheduler, model, "x")
    jobs = [piece("aa"), Step("bb"), piece("cc"), Step("dd")]  # one length bucket
    queued = [asyncio.create_task(scheduler.synthesize(job)) for job in jobs]
    await until(lambda: scheduler.stats.queued == len(jobs))
    model.release.set()
    results = await asyncio.gather(first, *queued)
    assert model.batches[1:] == [["aa", "cc"], ["bb", "dd"]]
    assert [text_of(r) for r in results[1:]] == ["aa", "bb", "cc", "dd"]
    scheduler.close()


async def test_max_batch_caps_a_batch(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=2)
    first = await start_held_batch(scheduler, model, "x")
    queued = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in "abcde"]
    await until(lambda: scheduler.stats.queued == 5)
    model.release.set()
    await asyncio.gather(first, *queued)
    assert model.batches[1:] == [["a", "b"], ["c", "d"], ["e"]]
    assert scheduler.stats.sizes == {1: 2, 2: 2}  # batches run, by pieces in each
    assert (scheduler.stats.batches, scheduler.stats.pieces) == (4, 6)
    scheduler.close()


async def test_peers_of_the_oldest_piece_are_found_past_the_first_max_batch_queued(
    model: Model, held: Model
) -> None:
    """The oldest piece's bucket-mates join it from anywhere in the queue, not only its head."""
    scheduler = make(model, max_batch=2)
    first = await start_held_batch(scheduler, model, "x")
    texts = ["s" * 5, "l" * 100, "l" * 110, "s" * 6]  # the second short piece is 4th in line
    assert bucket_of(5) == bucket_of(6) != bucket_of(100) == bucket_of(110)
    queued = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in texts]
    await until(lambda: scheduler.stats.queued == len(texts))
    model.release.set()
    await asyncio.gather(first, *queued)
    assert model.batches[1:] == [["s" * 5, "s" * 6], ["l" * 100, "l" * 110]]
    scheduler.close()


async def test_a_ready_piece_waits_for_peers_within_the_window(model: Model) -> None:
    scheduler = make(model, max_batch=2, wait_s=30.0)  # filled long before the window ends
    first = asyncio.create_task(scheduler.synthesize(piece("a")))
    await until(lambda: scheduler.stats.queued == 1)
    second = asyncio.create_task(scheduler.synthesize(piece("b")))
    assert [text_of(r) for r in await asyncio.gather(first, second)] == ["a", "b"]
    assert model.batches == [["a", "b"]]
    scheduler.close()


async def test_a_lone_piece_waits_the_window_for_peers_then_runs_alone(model: Model) -> None:
    scheduler = make(model, max_batch=4, wait_s=0.3)
    started = time.monotonic()
    async with asyncio.timeout(10):
        assert text_of(await scheduler.synthesize(piece("alone"))) == "alone"
    assert time.monotonic() - started >= 0.25  # it waited (most of) the window
    assert model.batches == [["alone"]]
    scheduler.close()


async def test_a_peer_arriving_within_a_short_window_joins_the_batch(model: Model) -> None:
    scheduler = make(model, max_batch=2, wait_s=0.5)
    first = asyncio.create_task(scheduler.synthesize(piece("a")))
    await until(lambda: scheduler.stats.queued == 1)
    await asyncio.sleep(0.05)
    second = asyncio.create_task(scheduler.synthesize(piece("b")))
    assert [text_of(r) for r in await asyncio.gather(first, second)] == ["a", "b"]
    assert model.batches == [["a", "b"]]
    scheduler.close()


async def test_a_cancelled_queued_piece_never_runs(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=1)
    first = await start_held_batch(scheduler, model, "a")
    doomed = asyncio.create_task(scheduler.synthesize(piece("doomed")))
    kept = asyncio.create_task(scheduler.synthesize(piece("kept")))
    await until(lambda: scheduler.stats.queued == 2)
    doomed.cancel()
    await until(lambda: scheduler.stats.queued == 1)
    model.release.set()
    assert text_of(await kept) == "kept" and text_of(await first) == "a"
    assert doomed.cancelled()
    assert model.batches == [["a"], ["kept"]]
    assert model.interrupted == []
    scheduler.close()


async def test_a_running_batch_is_interrupted_only_when_all_its_callers_are_gone(
    model: Model, held: Model
) -> None:
    scheduler = make(model, max_batch=2, wait_s=30.0)
    pair = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("ab", "cd")]
    await until(lambda: scheduler.stats.in_flight == 2)  # one batch, running and held
    pair[0].cancel()
    await asyncio.wait([pair[0]])  # its cancellation has been handed to the scheduler
    assert model.interrupted == []  # the other caller still wants its audio
    pair[1].cancel()
    await until(lambda: model.interrupted == [0])
    await until(lambda: scheduler.stats.in_flight == 0)
    assert all(task.cancelled() for task in pair)
    assert model.batches == [["ab", "cd"]]
    scheduler.close()


async def test_a_failing_piece_fails_alone(model: Model) -> None:
    scheduler = make(model, max_batch=4, wait_s=30.0, lanes=1)
    tasks = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("good", "boom", "fine")]
    tasks.append(asyncio.create_task(scheduler.synthesize(piece("last"))))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert text_of(results[0]) == "good" and text_of(results[2]) == "fine"
    assert isinstance(results[1], ValueError)
    assert model.batches[0] == ["good", "boom", "fine", "last"]  # then each piece alone
    assert model.batches[1:] == [["good"], ["boom"], ["fine"], ["last"]]
    assert set(model.lane_of.values()) == {0}  # retried on the batch's own lane
    scheduler.close()


async def test_a_lone_failing_piece_fails_once_and_the_lane_goes_on(model: Model) -> None:
    scheduler = make(model, max_batch=1)
    async with asyncio.timeout(10):
        with pytest.raises(ValueError, match="boom"):
            await scheduler.synthesize(piece("boom"))
        assert text_of(await scheduler.synthesize(piece("next"))) == "next"
    assert model.batches == [["boom"], ["next"]]  # not run a second time alone
    scheduler.close()


async def test_a_failed_pair_is_retried_piece_by_piece(model: Model) -> None:
    scheduler = make(model, max_batch=2, wait_s=30.0)
    pair = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("boom", "fine")]
    async with asyncio.timeout(10):
        results = await asyncio.gather(*pair, return_exceptions=True)
    assert isinstance(results[0], ValueError) and text_of(results[1]) == "fine"
    assert model.batches == [["boom", "fine"], ["boom"], ["fine"]]
    scheduler.close()


async def test_a_failed_batch_retries_the_pieces_after_a_cancelled_one(
    model: Model, held: Model
) -> None:
    scheduler = make(model, max_batch=3, wait_s=30.0)
    tasks = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("gone", "boom", "fine")]
    await until(lambda: scheduler.stats.in_flight == 3)
    tasks[0].cancel()
    await asyncio.wait([tasks[0]])
    model.release.set()
    async with asyncio.timeout(10):
        results = await asyncio.gather(*tasks[1:], return_exceptions=True)
    assert isinstance(results[0], ValueError) and text_of(results[1]) == "fine"
    assert model.batches == [["gone", "boom", "fine"], ["boom"], ["fine"]]
    assert model.interrupted == []  # two callers still waited
    scheduler.close()


async def test_a_caller_whose_loop_closed_does_not_stop_the_lane(model: Model, held: Model) -> None:
    """The result of a caller whose event loop is gone is dropped; the lane serves the next."""
    scheduler = make(model, max_batch=1)

    def orphan() -> None:
        loop = asyncio.new_event_loop()
        orphaned = loop.create_task(scheduler.synthesize(piece("orphan")))

        async def running() -> None:
            while not model.started.is_set():
                await asyncio.sleep(0.001)

        loop.run_until_complete(asyncio.wait_for(running(), 10))
        loop.close()  # its caller still waits: the lane finds the loop closed
        assert not orphaned.done()

    await asyncio.to_thread(orphan)
    model.release.set()
    async with asyncio.timeout(10):
        assert text_of(await scheduler.synthesize(piece("next"))) == "next"
    assert model.batches == [["orphan"], ["next"]]
    scheduler.close()


async def test_two_lanes_run_two_batches_side_by_side(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=1, lanes=2)
    tasks = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("a", "b")]
    await until(lambda: scheduler.stats.in_flight == 2)  # both held at once: two lanes
    model.release.set()
    assert [text_of(r) for r in await asyncio.gather(*tasks)] == ["a", "b"]
    scheduler.close()


async def test_a_cancel_interrupts_the_lane_of_the_cancelled_piece_only(
    model: Model, held: Model
) -> None:
    """With two lanes busy, cancelling one caller stops its own lane; the other one's audio
    still comes (one user's barge-in must not abort another user's synthesis)."""
    scheduler = make(model, max_batch=1, lanes=2)
    tasks = {t: asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("a", "b")}
    await until(lambda: scheduler.stats.in_flight == 2)
    on_lane_1 = next(text for text, lane in model.lane_of.items() if lane == 1)
    tasks[on_lane_1].cancel()
    await until(lambda: model.interrupted != [])
    assert model.interrupted == [1]
    (kept,) = set(tasks) - {on_lane_1}
    assert text_of(await tasks[kept]) == kept
    await asyncio.wait([tasks[on_lane_1]])
    assert tasks[on_lane_1].cancelled()
    scheduler.close()


async def test_a_cancel_after_both_lanes_have_run_still_stops_its_batch(
    model: Model, held: Model
) -> None:
    """An idle lane's empty slot is skipped when a cancel looks for the piece's batch."""
    scheduler = make(model, max_batch=1, lanes=2)
    warm = [asyncio.create_task(scheduler.synthesize(piece(t))) for t in ("a", "b")]
    await until(lambda: scheduler.stats.in_flight == 2)
    model.release.set()
    await asyncio.gather(*warm)
    model.release.clear()
    model.started.clear()
    doomed = await start_held_batch(scheduler, model, "c")
    doomed.cancel()
    await asyncio.wait([doomed])
    assert doomed.cancelled()
    assert model.interrupted == [model.lane_of["c"]]
    scheduler.close()


async def test_close_fails_queued_callers_and_refuses_new_ones(model: Model, held: Model) -> None:
    scheduler = make(model, max_batch=1)
    first = await start_held_batch(scheduler, model, "a")
    queued = asyncio.create_task(scheduler.synthesize(piece("b")))
    await until(lambda: scheduler.stats.queued == 1)
    scheduler.close()
    with pytest.raises(RuntimeError, match=r"^the engine's scheduler is closed$"):
        await queued
    with pytest.raises(RuntimeError, match=r"^the engine's scheduler is closed$"):
        await scheduler.synthesize(piece("c"))
    model.release.set()
    assert text_of(await first) == "a"
