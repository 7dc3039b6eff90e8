"""Voice to voice: TTS-made utterances played into ``/ws`` as a microphone would, in real time.

    python -m bench.latency.voice_to_voice              # writes docs/benchmarks/voice_to_voice.*
    python -m bench.latency.voice_to_voice --utterances 3 --pauses 4 --barge-ins 2 --out /tmp/v2v

The local stack of ``make run``: a TTS server child process and, in threads, one dev server
with the demo model per end-of-turn configuration of the ablation (``endpointing.CONFIGS``:
the 500 ms silence rule, + the turn model, + eager recognition), each utterance said to all
three in turn. Each utterance is said by the project's own TTS, resampled to 16 kHz and sent as
32 ms MIC frames, each when a microphone would have it. Measured per utterance, on the
client's clock: **voice to voice**, from the frame holding the last sample of speech to the
first reply audio frame, and its stages: the end-of-turn wait (to `speech.end`), recognition
(to `transcript`), the LLM's first token (to the first `text.delta`), the first segment (to
`segment`) and synthesis (to the first audio frame). Each stage's floor: the designed silence
(rounded up to whole VAD windows), the recognizer's own time (`asr_ms`), the demo model's
first-token delay, its time to write the first sentence, and that sentence's first audio spoken
alone on the same TTS server; **overhead** = voice to voice - the sum of floors. Also: WER and
real-time factor of recognition, the VAD's cost per 32 ms window (alone, after the runs), and
barge-in: speech onset in the input to `reply.paused` (the reply stops: the page pauses it
there), to `cancelled` (its words are not a backchannel: the reply is cut) and to the last reply
audio frame before the cut, while the agent streams a long reply.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from agent.config import ListeningConfig
from agent.core.llm import DemoConfig, demo_reply, demo_tokens
from agent.listening.settings import WINDOW_MS
from agent.listening.turn_model import SmartTurn
from bench.latency import pause_corpus
from bench.latency.agent_latency import (
    _free_port,
    dev_server,
    local_tts_description,
    machine,
    ws_url,
)
from bench.latency.endpointing import (
    CONFIGS,
    DEFAULT,
    FRAME_MS,
    last_ask_ms,
    pause_wait_ms,
    replay,
)
from bench.latency.levels import lone_first_audio_ms
from bench.latency.mic_session import (
    LEAD_MS,
    TRAIL_MS,
    Session,
    last_loud_frame,
    speech_span_ms,
    stream_of,
)
from bench.latency.pause_corpus import PauseItem
from bench.latency.stats import spread
from bench.speech.intelligibility import word_error_rate
from voice_agent_cli.local_tts import local_tts

STEM = "voice_to_voice"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
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
BARGE_IN = "Wait, stop there please."


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


def eot_floor_ms(replayed_frames: int, end: dict[str, Any]) -> float:
    """The end-of-turn floor: the frames the rule waits past the speech, replayed, and the
    model's own time when its answer ended the turn (the socket waits for it at the pause)."""
    model_ms = end["turn_ms"] if end.get("turn") == "complete" else 0.0
    return round(replayed_frames * FRAME_MS + model_ms, 1)


def eager_head_ms(end: dict[str, Any], config: ListeningConfig) -> float:
    """How long eager recognition ran before the turn ended: from the model's last unfinished
    answer in the pause to the end of the wait (0: not eager, or the model ended the turn)."""
    if not (config.eager_asr and end.get("turn") == "incomplete"):
        return 0.0
    return max(0.0, end["wait_ms"] - last_ask_ms(config) - end["turn_ms"])


def asr_floor_ms(asr_ms: float, end: dict[str, Any], config: ListeningConfig) -> float:
    """The recognition floor: the recognizer's own time, less the head start eager recognition
    had in the wait."""
    return round(max(0.0, asr_ms - eager_head_ms(end, config)), 1)


def eager_start_floors(
    floors: dict[str, float | None], asr_ms: float, end: dict[str, Any], config: ListeningConfig
) -> dict[str, float | None]:
    """``floors`` with the eager start: a turn the model called incomplete had its reply begun
    in the wait, so what of the wait recognition left over comes off the LLM's first token, then
    the first segment, then its synthesis (each at least 0)."""
    if not (config.eager_start and config.eager_asr and end.get("turn") == "incomplete"):
        return floors
    left = max(0.0, eager_head_ms(end, config) - asr_ms)
    out = dict(floors)
    for key in ("llm_first_token_ms", "first_segment_ms", "synthesis_ms"):
        floor = floors[key]
        if floor is not None:
            out[key], left = round(max(0.0, floor - left), 1), max(0.0, left - floor)
    return out


async def utterance(
    url: str, tts_url: str, index: int, text: str, pcm: bytes, name: str, model: SmartTurn
) -> dict[str, Any]:
    """One utterance into a fresh socket of configuration ``name``; its figures."""
    demo, config = DemoConfig(), CONFIGS[name]
    async with Session(url, f"v2v-{name}-{index}") as session:
        await session.send({"type": "listen", "mode": "hands_free"})
        await session.wait_for("listening")
        stream = stream_of(pcm)
        sent = await session.play(stream)
        first_audio = await session.wait_for("audio")
        await session.send({"type": "cancel"})
        await session.wait_for("cancelled")
    last_loud = last_loud_frame(pcm)
    ended = sent[last_loud]
    at = {kind: session.first(kind) for kind in ("speech.end", "transcript", "text.delta")}
    at["segment"], at["audio"] = session.first("segment"), first_audio
    transcript, segment = session.event("transcript"), session.event("segment")["text"]
    end = session.event("speech.end")
    lone = await lone_first_audio_ms(tts_url, segment)
    floors = eager_start_floors(
        {
            "eot_wait_ms": eot_floor_ms(replay(stream, config, model).frame - last_loud, end),
            "asr_ms_seen": asr_floor_ms(transcript["asr_ms"], end, config),
            "llm_first_token_ms": demo.first_token_delay_s * 1000,
            "first_segment_ms": first_sentence_ms(transcript["text"], segment, demo),
            "synthesis_ms": lone,
        },
        transcript["asr_ms"],
        end,
        config,
    )
    row: dict[str, Any] = {
        "text": text,
        "heard": transcript["text"],
        "wer": round(word_error_rate(text, transcript["text"]), 3),
        "speech_ms": round(speech_span_ms(pcm)[1] - speech_span_ms(pcm)[0], 1),
        "utterance_ms": transcript["audio_ms"],
        "asr_ms": transcript["asr_ms"],
        "eot_wait_ms": _ms(at["speech.end"], ended),
        "asr_ms_seen": _ms(at["transcript"], at["speech.end"]),
        "llm_first_token_ms": _ms(at["text.delta"], at["transcript"]),
        "first_segment_ms": _ms(at["segment"], at["text.delta"]),
        "synthesis_ms": _ms(at["audio"], at["segment"]),
        "voice_to_voice_ms": _ms(first_audio, ended),
        "transcript_ms": _ms(at["transcript"], ended),
        "turn": end.get("turn"),
        "turn_score": end.get("turn_score"),
        "turn_ms": end.get("turn_ms"),
        "floors": floors,
        "designed_silence_ms": pause_wait_ms(config)
        if config.endpointing == "turn_model"
        else math.ceil(config.silence_ms / WINDOW_MS) * WINDOW_MS,
    }
    row["floor_ms"] = None if lone is None else round(sum(floors.values()), 1)  # type: ignore[arg-type]
    row["overhead_ms"] = (
        None if row["floor_ms"] is None else round(row["voice_to_voice_ms"] - row["floor_ms"], 1)
    )
    row["asr_rtf"] = round(row["asr_ms"] / row["utterance_ms"], 3)
    return row


async def pause_trial(
    url: str, name: str, index: int, item: PauseItem, paused: bool
) -> dict[str, Any]:
    """A pause-corpus sentence (whole, or with its pause) into a fresh socket of configuration
    ``name``: whether its first turn ended inside the pause, when it ended, and how many frames
    of a reply came before that end (a speculative reply heard: there must be none). The
    microphone stops once the speech is out and the turn has ended; the socket closes at its
    transcript."""
    pcm = item.paused if paused else item.pcm
    last_loud = last_loud_frame(pcm)
    async with Session(url, f"v2v-pause-{name}-{index}-{int(paused)}") as session:
        await session.send({"type": "listen", "mode": "hands_free"})
        await session.wait_for("listening")
        sent = await session.play(
            stream_of(pcm), lambda i: i > last_loud and session.first("speech.end") is not None
        )
        await session.wait_for("transcript")
    end, ended = session.event("speech.end"), session.first("speech.end")
    assert ended is not None
    reply = (None, "turn.start", "text.delta", "segment")  # None: an audio frame
    early = [e for at, e in session.received if at < ended and (e and e["type"]) in reply]
    return {
        "text": item.text,
        "paused": paused,
        "pause_ms": item.pause_ms if paused else 0,
        "cut_in_pause": paused and end["at_ms"] <= LEAD_MS + item.resume_ms,
        "eot_ms": _ms(ended, sent[last_loud]),
        "reply_frames_before_end": len(early),
        "turn": end.get("turn"),
        "turn_ms": end.get("turn_ms"),
    }


def replayed_pauses(corpus: list[PauseItem], model: SmartTurn) -> dict[str, Any]:
    """The pause corpus replayed offline: each rule's false cut-offs (the turn model's rule is
    the same with and without eager recognition) and the model's cost per decision (ms)."""
    cuts, costs = {"silence": 0, "turn_model": 0}, []
    for item in corpus:
        for name in cuts:
            replayed = replay(stream_of(item.paused), CONFIGS[name], model)
            cuts[name] += replayed.at_ms <= LEAD_MS + item.resume_ms
            costs += replayed.costs
        costs += replay(stream_of(item.pcm), CONFIGS["turn_model"], model).costs
    return {"false_cutoffs": cuts, "sentences": len(corpus), "turn_model_ms": costs}


async def withdrawn(url: str) -> int:
    """The speculative replies the dev server at ``url`` (its ``/ws``) has withdrawn so far."""
    import httpx

    http = "http" + url.removeprefix("ws").removesuffix("/ws")
    async with httpx.AsyncClient(base_url=http) as client:
        text = (await client.get("/metrics")).text
    found = re.search(r"^agent_turns_withdrawn_total (\S+)$", text, re.MULTILINE)
    if found is None:
        raise ValueError(f"{http}/metrics has no agent_turns_withdrawn_total")
    return int(float(found.group(1)))


async def barge_in(url: str, index: int, pcm: bytes) -> dict[str, Any]:
    """Speech over a long reply: onset in the input to ``reply.paused`` (where the page stops
    playing it), to ``cancelled`` (the words cut it) and to the last reply frame before that."""
    async with Session(url, f"v2v-barge-{index}") as session:
        await session.send({"type": "listen", "mode": "hands_free"})
        await session.wait_for("listening")
        await session.send({"type": "prompt", "prompt": "Tell me everything about the sea"})
        await session.wait_for("audio")
        await asyncio.sleep(0.5)  # the reply is playing
        stream = bytes(LEAD_MS * 32) + pcm + bytes(TRAIL_MS * 32)
        sent = await session.play(stream)
        paused = await session.wait_for("reply.paused")
        cancelled = await session.wait_for("cancelled")
        await session.wait_for("transcript")
        await session.send({"type": "cancel"})
    onset_ms, _ = speech_span_ms(pcm)
    onset = sent[int((LEAD_MS + onset_ms) // FRAME_MS)]
    last_reply = max(at for at, e in session.received if e is None and at <= cancelled)
    return {
        "onset_to_paused_ms": _ms(paused, onset),
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
    return {"windows": windows, "wall_ms": spread(walls, 3), "cpu_ms": round(cpu, 3)}


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


async def measure(urls: dict[str, str], tts_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every utterance and pause-corpus sentence said to each configuration in turn."""
    texts = list(UTTERANCES[: args.utterances])
    spoken = await pause_corpus.say([*texts, BARGE_IN, *pause_corpus.texts(args.pauses)])
    pcms = {t: spoken[t].pcm for t in (*texts, BARGE_IN)}
    corpus = pause_corpus.items(spoken, args.pauses)
    model = SmartTurn()  # the bench's own, for the replays: the servers share theirs
    model.load()
    configs: dict[str, dict[str, Any]] = {name: {"utterances": [], "pauses": []} for name in urls}
    for name, url in urls.items():  # warm-up: the models load
        await utterance(url, tts_url, -1, texts[0], pcms[texts[0]], name, model)
    for i, text in enumerate(texts):
        for name, url in urls.items():
            row = await utterance(url, tts_url, i, text, pcms[text], name, model)
            configs[name]["utterances"].append(row)
    before = {name: await withdrawn(url) for name, url in urls.items()}
    for i, item in enumerate(corpus):
        for paused in (True, False):
            for name, url in urls.items():
                configs[name]["pauses"].append(await pause_trial(url, name, i, item, paused))
    for name, url in urls.items():
        configs[name]["withdrawn"] = await withdrawn(url) - before[name]
    barges = [await barge_in(urls[DEFAULT], i, pcms[BARGE_IN]) for i in range(args.barge_ins)]
    alone = await asr_alone({t: pcms[t] for t in texts})
    return {
        "configs": configs,
        "barge_ins": barges,
        "asr_alone": alone,
        "vad": vad_cost(list(pcms.values())),
        "replayed": replayed_pauses(corpus, model),
    }


def run(args: argparse.Namespace) -> int:
    """Start the local stack, measure, write the report."""
    import matplotlib  # noqa: F401 - fail now, not after minutes of measuring

    from bench.latency.voice_to_voice_report import headline, write
    from bench.latency.voice_to_voice_summary import summary

    host = machine()
    if (load := host["load_average"][0]) > 1.0:
        print(f"bench: load average {load}: the figures may be noisy", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        tts_url = args.tts_url or stack.enter_context(
            local_tts("127.0.0.1", _free_port(), "warning")
        )
        urls = {
            name: ws_url(stack.enter_context(dev_server(tts_url, config))[0])
            for name, config in CONFIGS.items()
        }
        results = asyncio.run(measure(urls, tts_url, args))
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "setup": {
            "agent": "dev server in a thread, demo model",
            "tts": args.tts_url or local_tts_description(),
            "listening": {k: getattr(ListeningConfig(), k) for k in ListeningConfig.__slots__},
            "configs": {
                name: {"endpointing": c.endpointing, "eager_asr": c.eager_asr}
                for name, c in CONFIGS.items()
            },
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
    parser.add_argument("--utterances", type=int, default=len(UTTERANCES), help="how many (10)")
    parser.add_argument(
        "--pauses",
        type=int,
        default=len(pause_corpus.SENTENCES),
        help="pause-corpus sentences, each whole and paused (30)",
    )
    parser.add_argument("--barge-ins", type=int, default=4, help="barge-in trials (4)")
    parser.add_argument("--tts-url", help="a running TTS server (default: start one)")
    parser.add_argument("--out", type=Path, default=OUT, help="where voice_to_voice.* go")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
