"""Voice to voice: TTS-made utterances played into ``/ws`` as a microphone would, in real time.

    python -m bench.latency.voice_to_voice              # writes docs/benchmarks/voice_to_voice.*
    python -m bench.latency.voice_to_voice --utterances 3 --barge-ins 2 --out /tmp/v2v

The local stack of ``make run``: a TTS server child process, the dev server in a thread with
the demo model and the default listening knobs (Silero VAD, 500 ms end of turn, Whisper tiny.en
int8 beam 1). Each utterance is said by the project's own TTS, resampled to 16 kHz and sent as
32 ms MIC frames, each when a microphone would have it. Measured per utterance, on the
client's clock: **voice to voice**, from the frame holding the last sample of speech to the
first reply audio frame, and its stages: the end-of-turn wait (to `speech.end`), recognition
(to `transcript`), the LLM's first token (to the first `text.delta`), the first segment (to
`segment`) and synthesis (to the first audio frame). Each stage's floor: the designed silence
(rounded up to whole VAD windows), the recognizer's own time (`asr_ms`), the demo model's
first-token delay, its time to write the first sentence, and that sentence's first audio spoken
alone on the same TTS server; **overhead** = voice to voice - the sum of floors. Also: WER and
real-time factor of recognition, the VAD's cost per 32 ms window (alone, after the runs), and
barge-in: speech onset in the input to `cancelled` and to the last reply audio frame before it,
while the agent streams a long reply.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE, SESSION_HEADER, mic_frame
from agent.config import ListeningConfig
from agent.core.llm import DemoConfig, demo_reply, demo_tokens
from agent.listening.settings import WINDOW_MS
from bench.latency.agent_latency import _free_port, dev_server, machine, ws_url
from bench.latency.levels import lone_first_audio_ms
from bench.latency.stats import spread
from bench.speech.intelligibility import to_whisper_input, word_error_rate
from tts_protocol import pcm16_to_float
from voice_agent_cli.local_tts import local_tts

STEM = "voice_to_voice"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
FRAME_MS = 32
LEAD_MS, TRAIL_MS = 400, 1500  # silence around each utterance
UTTERANCES = (
    "What is the weather like in London today?",
    "Please tell me a short story about a friendly robot.",
    "How far away is the moon from the earth?",
    "Can you recommend a good book for the weekend?",
    "Turn on the lights in the kitchen.",
    "What time does the train to Boston leave?",
    "Remind me to call my sister tomorrow morning.",
    "Why is the sky blue during the day?",
    "Could you remind me what time my dentist appointment is on Friday?",
    "What is the best way to keep fresh herbs in the fridge?",
)
THREE_S = (2750, 3250)  # the clips (pre-roll, speech, tail) the 3 s recognition goal reads
BARGE_IN = "Wait, stop there please."
GOALS = {
    "asr_rtf_3s": 0.15,  # recognition of a 3 s utterance within 0.15 of its duration
    "vad_ms_per_window": 1.0,
    "overhead_ms": 50.0,  # voice to voice over the sum of its floors
    "barge_in_stop_ms": 300.0,
}
STAGES = ("eot_wait_ms", "asr_ms_seen", "llm_first_token_ms", "first_segment_ms", "synthesis_ms")


async def speech_pcm(texts: list[str]) -> dict[str, bytes]:
    """Each text said by the embedded engine, as 16 kHz s16le."""
    from tts_server.engines import load_engine
    from tts_server.settings import Settings

    engine = load_engine(Settings())

    async def say(text: str) -> bytes:
        audio = np.concatenate([c.audio async for c in engine.synthesize(engine.prepare(text))])
        samples = to_whisper_input(audio, engine.sample_rate)
        return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()

    return {text: await say(text) for text in texts}


def speech_span_ms(pcm: bytes) -> tuple[float, float]:
    """Where the speech in ``pcm`` starts and ends (first and last sample over -34 dBFS)."""
    samples = np.abs(pcm16_to_float(pcm))
    loud = np.flatnonzero(samples > 0.02)
    return loud[0] * 1000 / MIC_SAMPLE_RATE, (loud[-1] + 1) * 1000 / MIC_SAMPLE_RATE


class Session:
    """One /ws socket: sends paced MIC frames, stamps every frame received."""

    def __init__(self, url: str, conversation: str) -> None:
        self._url = f"{url}?{SESSION_HEADER}={conversation}"
        self.received: list[tuple[float, dict[str, Any] | None]] = []  # None: an audio frame
        self._arrived = asyncio.Event()

    async def __aenter__(self) -> Session:
        from websockets.asyncio.client import connect

        self._socket = await connect(self._url, max_size=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *_: object) -> None:
        self._reader.cancel()
        await self._socket.close()

    async def _read(self) -> None:
        async for data in self._socket:
            event = None if isinstance(data, bytes) else json.loads(data)
            self.received.append((time.perf_counter(), event))
            self._arrived.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self._socket.send(json.dumps(message))

    async def play(self, pcm: bytes) -> list[float]:
        """Send ``pcm`` as a microphone would; returns when each frame was sent."""
        size = MIC_SAMPLE_RATE * FRAME_MS // 1000 * 2
        sent, start = [], time.perf_counter()
        for index, offset in enumerate(range(0, len(pcm), size)):
            await asyncio.sleep(max(0.0, start + index * FRAME_MS / 1000 - time.perf_counter()))
            await self._socket.send(mic_frame(pcm[offset : offset + size]))
            sent.append(time.perf_counter())
        return sent

    async def wait_for(self, kind: str, limit_s: float = 60.0) -> float:
        """When the first frame of ``kind`` (``"audio"``: a binary frame) arrived."""
        try:
            async with asyncio.timeout(limit_s):
                while (at := self.first(kind)) is None:
                    self._arrived.clear()
                    await self._arrived.wait()
        except TimeoutError:
            got = [e["type"] if e else "audio" for _, e in self.received][-12:]
            raise TimeoutError(f"no {kind} within {limit_s} s; the last frames: {got}") from None
        return at

    def first(self, kind: str, after: float = 0.0) -> float | None:
        for at, event in self.received:
            if at >= after and (event["type"] if event else "audio") == kind:
                return at
        return None

    def event(self, kind: str) -> dict[str, Any]:
        return next(e for _, e in self.received if e and e["type"] == kind)


def decision_frame(stream: bytes) -> int:
    """The frame of ``stream`` after which the endpointer, fed it at once, ends the turn.

    The VAD and endpointer alone on the same audio, in the same 32 ms frames: the end-of-turn
    stage's floor is this frame, since Silero's probability stays up for a window or two after
    the last loud sample and the silence is counted from where it falls."""
    from agent.listening.endpointer import Ended, Endpointer
    from agent.listening.vad import VoiceActivity

    vad, endpointer = VoiceActivity(), Endpointer(ListeningConfig())
    size = MIC_SAMPLE_RATE * FRAME_MS // 1000 * 2
    for index, offset in enumerate(range(0, len(stream), size)):
        for window, probability in vad.windows(stream[offset : offset + size]):
            if any(isinstance(e, Ended) for e in endpointer.push(window, probability)):
                return index
    raise ValueError("the endpointer never ended the turn")


def _ms(later: float | None, earlier: float | None) -> float | None:
    return None if later is None or earlier is None else round((later - earlier) * 1000, 1)


def first_sentence_ms(prompt: str, segment: str, demo: DemoConfig) -> float:
    """The demo model's time from its first token to the end of ``segment`` (its first)."""
    tokens, text = demo_tokens(demo_reply(prompt, demo.sentences)), ""
    for count, token in enumerate(tokens, 1):
        text += token
        if len(text.strip()) >= len(segment):
            return round(count / demo.tokens_per_second * 1000, 1)  # + the look-ahead token
    return round(len(tokens) / demo.tokens_per_second * 1000, 1)


async def utterance(url: str, tts_url: str, index: int, text: str, pcm: bytes) -> dict[str, Any]:
    """One utterance into a fresh socket; its figures."""
    demo, config = DemoConfig(), ListeningConfig()
    async with Session(url, f"v2v-{index}") as session:
        await session.send({"type": "listen", "mode": "hands_free"})
        await session.wait_for("listening")
        stream = bytes(LEAD_MS * 32) + pcm + bytes(TRAIL_MS * 32)
        sent = await session.play(stream)
        first_audio = await session.wait_for("audio")
        await session.send({"type": "cancel"})
        await session.wait_for("cancelled")
    _, speech_end = speech_span_ms(pcm)
    last_loud = math.ceil((LEAD_MS + speech_end) / FRAME_MS) - 1  # the frame with its last sample
    ended = sent[last_loud]
    at = {kind: session.first(kind) for kind in ("speech.end", "transcript", "text.delta")}
    at["segment"], at["audio"] = session.first("segment"), first_audio
    transcript, segment = session.event("transcript"), session.event("segment")["text"]
    lone = await lone_first_audio_ms(tts_url, segment)
    floors = {
        "eot_wait_ms": (decision_frame(stream) - last_loud) * FRAME_MS,
        "asr_ms_seen": transcript["asr_ms"],
        "llm_first_token_ms": demo.first_token_delay_s * 1000,
        "first_segment_ms": first_sentence_ms(transcript["text"], segment, demo),
        "synthesis_ms": lone,
    }
    row: dict[str, Any] = {
        "text": text,
        "heard": transcript["text"],
        "wer": round(word_error_rate(text, transcript["text"]), 3),
        "speech_ms": round(speech_end - speech_span_ms(pcm)[0], 1),
        "utterance_ms": transcript["audio_ms"],
        "asr_ms": transcript["asr_ms"],
        "eot_wait_ms": _ms(at["speech.end"], ended),
        "asr_ms_seen": _ms(at["transcript"], at["speech.end"]),
        "llm_first_token_ms": _ms(at["text.delta"], at["transcript"]),
        "first_segment_ms": _ms(at["segment"], at["text.delta"]),
        "synthesis_ms": _ms(at["audio"], at["segment"]),
        "voice_to_voice_ms": _ms(first_audio, ended),
        "floors": floors,
        "designed_silence_ms": math.ceil(config.silence_ms / WINDOW_MS) * WINDOW_MS,
    }
    row["floor_ms"] = None if lone is None else round(sum(floors.values()), 1)  # type: ignore[arg-type]
    row["overhead_ms"] = (
        None if row["floor_ms"] is None else round(row["voice_to_voice_ms"] - row["floor_ms"], 1)
    )
    row["asr_rtf"] = round(row["asr_ms"] / row["utterance_ms"], 3)
    return row


async def barge_in(url: str, index: int, pcm: bytes) -> dict[str, Any]:
    """Speech over a long reply: onset in the input to ``cancelled`` and to the last reply frame."""
    async with Session(url, f"v2v-barge-{index}") as session:
        await session.send({"type": "listen", "mode": "hands_free"})
        await session.wait_for("listening")
        await session.send({"type": "prompt", "prompt": "Tell me everything about the sea"})
        await session.wait_for("audio")
        await asyncio.sleep(0.5)  # the reply is playing
        stream = bytes(LEAD_MS * 32) + pcm + bytes(TRAIL_MS * 32)
        sent = await session.play(stream)
        cancelled = await session.wait_for("cancelled")
        await session.wait_for("transcript")
        await session.send({"type": "cancel"})
    onset_ms, _ = speech_span_ms(pcm)
    onset = sent[int((LEAD_MS + onset_ms) // FRAME_MS)]
    last_reply = max(at for at, e in session.received if e is None and at <= cancelled)
    return {
        "onset_to_cancelled_ms": _ms(cancelled, onset),
        "onset_to_last_reply_frame_ms": _ms(last_reply, onset),
    }


def vad_cost(pcms: list[bytes]) -> dict[str, Any]:
    """The VAD alone on the utterances: wall and CPU time per 32 ms window."""
    from agent.listening.vad import VoiceActivity

    vad, walls = VoiceActivity(), []
    cpu_start, windows = time.process_time(), 0
    for pcm in pcms:
        for offset in range(0, len(pcm) - 1024, 1024):
            start = time.perf_counter()
            windows += len(vad.windows(pcm[offset : offset + 1024]))
            walls.append((time.perf_counter() - start) * 1000)
    cpu = (time.process_time() - cpu_start) * 1000 / windows
    return {"windows": windows, "wall_ms": spread(walls), "cpu_ms": round(cpu, 3)}


async def asr_alone(pcms: dict[str, bytes]) -> list[dict[str, Any]]:
    """Each utterance recognized alone by the process's recognizer (nothing else running)."""
    from agent.listening.whisper import shared_whisper

    recognizer, rows = shared_whisper(ListeningConfig()), []
    for text, pcm in pcms.items():
        clip = bytes(192 * 32) + pcm + bytes(256 * 32)  # as the endpointer cuts it
        recognition = await recognizer.recognize(clip)
        audio_ms = len(clip) / 32
        rows.append({"text": text, "audio_ms": audio_ms, "asr_ms": recognition.asr_ms})
    return rows


async def measure(url: str, tts_url: str, args: argparse.Namespace) -> dict[str, Any]:
    texts = list(UTTERANCES[: args.utterances])
    pcms = await speech_pcm([*texts, BARGE_IN])
    await utterance(url, tts_url, -1, texts[0], pcms[texts[0]])  # warm-up: model loads
    rows = [await utterance(url, tts_url, i, t, pcms[t]) for i, t in enumerate(texts)]
    barges = [await barge_in(url, i, pcms[BARGE_IN]) for i in range(args.barge_ins)]
    alone = await asr_alone({t: pcms[t] for t in texts})
    return {
        "utterances": rows,
        "barge_ins": barges,
        "asr_alone": alone,
        "vad": vad_cost(list(pcms.values())),
    }


def summary(results: dict[str, Any]) -> dict[str, Any]:
    rows = results["utterances"]
    keys = (*STAGES, "voice_to_voice_ms", "floor_ms", "overhead_ms", "asr_ms", "asr_rtf", "wer")
    out: dict[str, Any] = {key: spread([row[key] for row in rows]) for key in keys}
    for key in ("onset_to_cancelled_ms", "onset_to_last_reply_frame_ms"):
        out[key] = spread([b[key] for b in results["barge_ins"]])
    low, high = THREE_S
    three = [a for a in results["asr_alone"] if low <= a["audio_ms"] <= high] or results[
        "asr_alone"
    ]
    rtf_3s = statistics.median(a["asr_ms"] / a["audio_ms"] for a in three) if three else None
    measured = {
        "asr_rtf_3s": None if rtf_3s is None else round(rtf_3s, 3),
        "vad_ms_per_window": results["vad"]["wall_ms"]["median"],
        "overhead_ms": out["overhead_ms"]["median"],
        "barge_in_stop_ms": out["onset_to_cancelled_ms"]["median"],
    }
    out["goals"] = {
        name: {
            "goal": goal,
            "measured": measured[name],
            "met": measured[name] is not None and measured[name] <= goal,
        }
        for name, goal in GOALS.items()
    }
    return out


def run(args: argparse.Namespace) -> int:
    """Start the local stack, measure, write the report."""
    import matplotlib  # noqa: F401 - fail now, not after minutes of measuring

    from bench.latency.voice_to_voice_report import headline, write

    host = machine()
    if (load := host["load_average"][0]) > 1.0:
        print(f"bench: load average {load}: the figures may be noisy", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        tts_url = args.tts_url or stack.enter_context(
            local_tts("127.0.0.1", _free_port(), "warning")
        )
        url, _ = stack.enter_context(dev_server(tts_url))
        results = asyncio.run(measure(ws_url(url), tts_url, args))
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "setup": {
            "agent": "dev server in a thread, demo model",
            "tts": args.tts_url or "local child process (`python -m tts_server`, ONNX, CPU)",
            "listening": {k: getattr(ListeningConfig(), k) for k in ListeningConfig.__slots__},
            "demo": {
                "first_token_delay_s": DemoConfig().first_token_delay_s,
                "tokens_per_second": DemoConfig().tokens_per_second,
            },
            "frame_ms": FRAME_MS,
            "lead_ms": LEAD_MS,
            "trail_ms": TRAIL_MS,
        },
        **results,
        "summary": summary(results),
    }
    for path in write(report, args.out):
        print(f"wrote {path}")
    print("\n".join(headline(report)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.voice_to_voice", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--utterances", type=int, default=len(UTTERANCES), help="how many (8)")
    parser.add_argument("--barge-ins", type=int, default=4, help="barge-in trials (4)")
    parser.add_argument("--tts-url", help="a running TTS server (default: start one)")
    parser.add_argument("--out", type=Path, default=OUT, help="where voice_to_voice.* go")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
