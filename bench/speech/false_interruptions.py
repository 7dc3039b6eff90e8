"""``python -m bench.speech.false_interruptions``: what cuts a reply that should not, and how
fast a real interruption cuts it.

    python -m bench.speech.false_interruptions            # docs/benchmarks/false_interruptions.*
    python -m bench.speech.false_interruptions --out /tmp/fi --no-asr   # a quick look

Each sound is played, as the page's 20 ms microphone frames, into the server's listening path
while a reply runs: a ``VoiceInput`` listening hands-free with the defaults (Silero VAD, the
endpointer with Smart Turn, the ``barge_in_ms``, ``interrupt_ms`` and ``resume_ms`` rules),
every frame fed with ``turn_running=True``, exactly as the socket feeds it while a turn streams.
A ``PauseReply`` is the reply paused (its time from the sound's onset is the barge-in stop time:
what the user hears stop); a ``CancelTurn`` is the cut; a ``reply.resumed`` the reply played on.
The utterance's transcript (the project's recognizer) is answered as the socket answers it
(``VoiceInput.heard``). The clock is the socket's: each frame is taken when it arrives (its
audio time) or when the one before it was done, and the turn model's and the recognizer's own
time is added, as the socket's reader waits for them (frames queue meanwhile); the resume bound
runs on that clock. Recognition starts at the utterance's end (the socket may start it earlier,
at a pause the turn model called unfinished: so the bound is reached here no later than there).
The only knob changed is ``burst_s`` (the pacing bound), so that a clip may be fed faster than
real time.

The corpus is made here, offline and deterministically (nothing recorded ships):

- **backchannels**: "mm-hm", "uh-huh", "yeah", "okay", "right", "hmm", "oh", "I see", said by
  eSpeak NG in its seven bench voices and by the project's five Kokoro voices, at a talking
  level and 10 dB softer (a murmured "mm-hm");
- **noises**, synthesized with numpy: coughs (shaped noise bursts, one with a voiced onset),
  door slams (a transient and a decaying low tail), click trains, keyboard clatter and
  laugh-like trains of voiced bursts, at the levels a laptop microphone gives them;
- **interruptions**: short questions and "wait, stop", in the same twelve voices; and short
  ones ("no", "wait", "pause", "hey", "mm, wait"...) at both levels, those a murmur's reading
  could most easily take for one (``VOICE_AGENT_ASR_MURMURS``).

Every clip sits in a quiet room's floor (-70 dBFS white noise) with 0.5 s before it and 1.5 s
after. Per clip: whether the reply was paused, and when (audio time from the sound's onset, the
first 10 ms whose level is within 20 dB of the clip's loudest, to the end of the frame whose
processing paused it, plus that processing's own time): the stop time the server adds (the page
then needs the ``reply.paused``'s trip and the context's suspension); then whether it was cut
(``cancelled``: words that are not backchannels, or speech past ``interrupt_ms``) or resumed
(only backchannel words, or none, or none by ``resume_ms``), and how long it was silent. With
``--no-asr`` nothing is recognized: only the pauses and the interrupt bound's cuts are known;
with ``--no-murmurs`` an utterance over the paused reply is read as any other (Whisper's
unsure readings are not read again after the murmur prompt: ``agent.listening.whisper``).
Writes ``docs/benchmarks/false_interruptions.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import os
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.events import ReplyResumed, SpeechEnd, SpeechStart, TurnCancelled
from agent.leg.messages import MicFrame
from agent.leg.voice_input import (
    Action,
    CancelTurn,
    JudgeTurn,
    PauseReply,
    Recognize,
    Send,
    StartTurn,
    VoiceInput,
    resumed,
)
from agent.listening.backchannel import only_backchannel
from agent.listening.listener import ListeningService
from agent.listening.recognizer import Recognition, Recognizer
from agent.listening.turn_model import TurnJudge
from bench.page.run import commit
from bench.speech.espeak_voice import VOICES as ESPEAK_VOICES
from bench.speech.espeak_voice import say
from bench.speech.intelligibility import to_whisper_input

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
RATE = MIC_SAMPLE_RATE
FRAME_MS = 20  # what the page's worklet sends
LEAD_MS, TAIL_MS = 500, 1500
FLOOR_DBFS = -70.0  # a quiet room through a laptop microphone, no gain control
SPEECH_DBFS = -26.0  # active speech level at the microphone (the loudest 30 % of 20 ms frames)
SOFT_DB = -10.0  # a murmured backchannel
SEED = 49

BACKCHANNEL_TEXTS = ("Mm-hm.", "Uh-huh.", "Yeah.", "Okay.", "Right.", "Hmm.", "Oh.", "I see.")
INTERRUPTIONS = (
    "Wait, stop.",
    "No, that's not what I asked.",
    "Stop.",
    "Hold on a second.",
    "What time is it in Tokyo?",
    "Can you say that again?",
)
SHORT_INTERRUPTIONS = (  # also murmured: what a murmur's second reading must not take for one
    "No.",
    "Wait.",
    "Pause.",
    "Hold on.",
    "Hey.",
    "Enough.",
    "Mm, wait.",
    "Uh, what?",
)


# What a transcript may be and still be a backchannel (lower case, punctuation dropped): the
# proposed rule's list (docs/listening.md, "False interruptions").
@dataclass(frozen=True, slots=True)
class Sound:
    """One clip: ``kind`` (backchannel, noise, interruption), what it is and who made it."""

    kind: str
    name: str
    source: str
    samples: np.ndarray  # float32 at 16 kHz, the sound alone at its level

    @property
    def label(self) -> str:
        return f"{self.name} ({self.source})"


# --- levels and shapes ----------------------------------------------------------------------


def active_dbfs(samples: np.ndarray) -> float:
    """RMS of the loudest 30 % of 20 ms frames (at least one), in dBFS."""
    frame = RATE * FRAME_MS // 1000
    n = max(1, len(samples) // frame)
    frames = np.resize(samples, n * frame).reshape(n, frame) if len(samples) >= frame else None
    if frames is None:
        return 20 * np.log10(np.sqrt(np.mean(samples**2)) + 1e-12)
    rms = np.sort(np.sqrt((frames**2).mean(axis=1)))[int(n * 0.7) :]
    return float(20 * np.log10(np.sqrt(np.mean(rms**2)) + 1e-12))


def at_level(samples: np.ndarray, dbfs: float) -> np.ndarray:
    """``samples`` scaled so that their active level is ``dbfs``."""
    gain = 10 ** ((dbfs - active_dbfs(samples)) / 20)
    return (samples * gain).astype(np.float32)


def peak_at(samples: np.ndarray, dbfs: float) -> np.ndarray:
    """``samples`` scaled so that their peak is ``dbfs``."""
    return (samples * 10 ** (dbfs / 20) / (np.max(np.abs(samples)) + 1e-12)).astype(np.float32)


def trimmed(samples: np.ndarray) -> np.ndarray:
    """Without the synthesizer's leading and trailing near-silence (under -50 dB of the peak)."""
    loud = np.flatnonzero(np.abs(samples) > np.max(np.abs(samples)) * 10 ** (-50 / 20))
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples


def band(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """White noise kept between ``low`` and ``high`` Hz (a brick wall in the spectrum)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    spectrum[(freqs < low) | (freqs > high)] = 0
    out = np.fft.irfft(spectrum, n)
    return out / (np.max(np.abs(out)) + 1e-12)


def envelope(n: int, attack_ms: float, decay_ms: float) -> np.ndarray:
    """A linear attack, then an exponential decay (to 1/e in ``decay_ms``)."""
    t = np.arange(n) / RATE * 1000
    return np.where(t < attack_ms, t / attack_ms, np.exp(-(t - attack_ms) / decay_ms))


def ms(value: float) -> int:
    return int(RATE * value / 1000)


def voiced(rng: np.random.Generator, n: int, f0: float, formants: tuple[float, ...]) -> np.ndarray:
    """A glottal pulse train at ``f0`` (with a little jitter) through crude formant peaks."""
    pulses = np.zeros(n)
    t = 0.0
    while t < n:
        pulses[int(t)] = 1.0
        t += RATE / (f0 * (1 + 0.02 * rng.standard_normal()))
    spectrum = np.fft.rfft(pulses)
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    shape = sum(1 / (1 + ((freqs - f) / 90) ** 2) for f in formants) + 0.05
    out = np.fft.irfft(spectrum * shape, n)
    return out / (np.max(np.abs(out)) + 1e-12)


# --- the noises -----------------------------------------------------------------------------


def cough(rng: np.random.Generator, bursts: int, burst_ms: float, voiced_onset: bool) -> np.ndarray:
    """Shaped noise bursts (300-4000 Hz, a 10 ms attack and a ~``burst_ms``/3 decay), 120 ms apart;
    ``voiced_onset``: each starts with 60 ms of a rough voice, as many coughs do."""
    parts = []
    for _ in range(bursts):
        n = ms(burst_ms)
        burst = band(rng, n, 300, 4000) * envelope(n, 10, burst_ms / 3)
        if voiced_onset:
            buzz = voiced(rng, n, 130, (500, 1500, 2500)) * envelope(n, 5, 40)
            burst = 0.6 * burst + 0.8 * buzz
        parts += [burst, np.zeros(ms(120))]
    return np.concatenate(parts[:-1])


def door(rng: np.random.Generator, low_hz: float, decay_ms: float) -> np.ndarray:
    """A slam: a broadband 5 ms transient, then a low rumble (``low_hz`` and its neighbours)
    decaying over ``decay_ms``, with a little rattle."""
    n = ms(decay_ms * 5)
    t = np.arange(n) / RATE
    tail = sum(
        np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi)) for f in (low_hz, low_hz * 1.6, 230)
    )
    tail = tail * np.exp(-t * 1000 / decay_ms)
    hit = band(rng, n, 100, 6000) * envelope(n, 0.5, 5)
    rattle = band(rng, n, 1500, 5000) * envelope(n, 2, decay_ms / 4) * 0.15
    return 0.35 * tail / np.max(np.abs(tail)) + hit + rattle


def clicks(rng: np.random.Generator, per_s: float, seconds: float) -> np.ndarray:
    """A regular train of 2 ms clicks (a pen, a tongue click, a bad cable)."""
    out = np.zeros(ms(seconds * 1000))
    click = band(rng, ms(2), 500, 7000) * envelope(ms(2), 0.2, 0.5)
    for start in np.arange(0, len(out) - len(click), RATE / per_s).astype(int):
        out[start : start + len(click)] += click
    return out


def keyboard(rng: np.random.Generator, per_s: float, seconds: float) -> np.ndarray:
    """Typing: keystrokes at random (Poisson at ``per_s``), each a 2 ms click and a 15 ms
    body of 1-5 kHz noise, their loudness varying by 10 dB."""
    out = np.zeros(ms(seconds * 1000) + ms(30))
    at = 0.0
    while True:
        at += rng.exponential(1 / per_s)
        if at >= seconds:
            break
        n = ms(25)
        stroke = band(rng, n, 1000, 5000) * envelope(n, 0.3, 4)
        stroke += 0.5 * band(rng, n, 200, 1200) * envelope(n, 1, 8)
        start = ms(at * 1000)
        out[start : start + n] += stroke * 10 ** (rng.uniform(-10, 0) / 20)
    return out


def laugh(rng: np.random.Generator, bursts: int, f0: float) -> np.ndarray:
    """ "Ha-ha-ha": voiced bursts of ~110 ms with breath, 200 ms apart, falling in pitch."""
    parts = []
    for k in range(bursts):
        n = ms(110)
        ha = voiced(rng, n, f0 * (1 - 0.04 * k), (750, 1250, 2600)) * envelope(n, 15, 45)
        breath = band(rng, n, 400, 5000) * envelope(n, 5, 30) * 0.3
        parts += [ha + breath, np.zeros(ms(90))]
    return np.concatenate(parts[:-1])


def noises() -> list[Sound]:
    """The synthesized noises, each at a level a laptop microphone would give it."""
    rng = np.random.default_rng(SEED)
    made: list[tuple[str, np.ndarray, str, float]] = [
        ("cough", cough(rng, 1, 250, False), "active", -22),
        ("cough, loud", cough(rng, 1, 300, False), "active", -12),
        ("cough, double", cough(rng, 2, 220, False), "active", -22),
        ("cough, voiced onset", cough(rng, 1, 280, True), "active", -22),
        ("cough, voiced, double", cough(rng, 2, 250, True), "active", -18),
        ("door slam, near", door(rng, 70, 120), "peak", -3),
        ("door slam, far", door(rng, 55, 200), "peak", -18),
        ("door slam, rattling", door(rng, 90, 80), "peak", -8),
        ("click train, 20/s, 1 s", clicks(rng, 20, 1.0), "peak", -10),
        ("click train, 8/s, 1 s", clicks(rng, 8, 1.0), "peak", -6),
        ("keyboard, 8 keys/s, 2 s", keyboard(rng, 8, 2.0), "peak", -20),
        ("keyboard, 12 keys/s, 2 s, loud", keyboard(rng, 12, 2.0), "peak", -8),
        ("laugh, 3 bursts", laugh(rng, 3, 220), "active", -24),
        ("laugh, 5 bursts", laugh(rng, 5, 180), "active", -22),
        ("laugh, short, soft", laugh(rng, 2, 240), "active", -34),
    ]
    return [
        Sound(
            "noise",
            name,
            "numpy",
            at_level(samples, dbfs) if how == "active" else peak_at(samples, dbfs),
        )
        for name, samples, how, dbfs in made
    ]


# --- the voices -----------------------------------------------------------------------------


def espeak(text: str, voice: str) -> np.ndarray:
    return np.frombuffer(say(text, voice), "<i2").astype(np.float32) / 32768


def kokoro_voices() -> tuple[Any, tuple[str, ...]]:
    """The embedded engine and its voices."""
    from tts_server.engines import load_engine
    from tts_server.settings import Settings

    engine = load_engine(Settings(windows=False))
    return engine, engine.voices


def kokoro(engine: Any, text: str, voice: str) -> np.ndarray:
    from tts_protocol import SAMPLE_RATE as TTS_RATE
    from tts_protocol.validation import parse_voice

    async def speak() -> np.ndarray:
        chunks = engine.synthesize(engine.prepare(text, parse_voice(voice)))
        return np.concatenate([chunk.audio async for chunk in chunks])

    return to_whisper_input(asyncio.run(speak()), TTS_RATE)


def spoken(texts: tuple[str, ...], kind: str, levels: tuple[float, ...]) -> Iterator[Sound]:
    """``texts`` in every eSpeak NG bench voice and every Kokoro voice, at each level."""
    sources: list[tuple[str, Any]] = [(f"espeak {v}", v) for v in ESPEAK_VOICES]
    engine, voices = kokoro_voices()
    sources += [(f"kokoro {v}", v) for v in voices]
    for text in texts:
        for source, voice in sources:
            if source.startswith("espeak"):
                samples = espeak(text, voice)
            else:
                samples = kokoro(engine, text, voice)
            samples = trimmed(samples)
            for level in levels:
                tag = source if level == SPEECH_DBFS else f"{source}, {level - SPEECH_DBFS:+.0f} dB"
                yield Sound(kind, text, tag, at_level(samples, level))


def corpus(quick: bool = False) -> list[Sound]:
    """Every clip, in a fixed order."""
    backchannel = BACKCHANNEL_TEXTS[:2] if quick else BACKCHANNEL_TEXTS
    interruptions = INTERRUPTIONS[:2] if quick else INTERRUPTIONS
    short = SHORT_INTERRUPTIONS[:2] if quick else SHORT_INTERRUPTIONS
    return [
        *spoken(backchannel, "backchannel", (SPEECH_DBFS, SPEECH_DBFS + SOFT_DB)),
        *noises(),
        *spoken(interruptions, "interruption", (SPEECH_DBFS,)),
        *spoken(short, "interruption", (SPEECH_DBFS, SPEECH_DBFS + SOFT_DB)),
    ]


# --- the listening path ---------------------------------------------------------------------


class NoRecognizer:
    """``VoiceInput`` returns what to recognize; nothing here recognizes while it is fed."""

    queue_depth = 0

    async def load(self) -> None:
        return None

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        raise AssertionError("the benchmark recognizes the utterances itself")


def onset_ms(samples: np.ndarray) -> float:
    """Where the sound starts: the first 10 ms within 20 dB of its loudest 10 ms."""
    n = len(samples) // ms(10)
    rms = np.sqrt((samples[: n * ms(10)].reshape(n, ms(10)) ** 2).mean(axis=1))
    return float(np.flatnonzero(rms >= rms.max() * 0.1)[0] * 10)


def clip(sound: Sound, index: int) -> np.ndarray:
    """The sound with the room's floor around it."""
    rng = np.random.default_rng(SEED + index)
    samples = np.concatenate([np.zeros(ms(LEAD_MS)), sound.samples, np.zeros(ms(TAIL_MS))])
    floor = rng.standard_normal(len(samples)) * 10 ** (FLOOR_DBFS / 20)
    return np.clip(samples + floor, -1, 1)


class Socket:
    """A ``VoiceInput`` over a running turn, on the socket's clock (seconds of audio time): a
    frame is taken when it arrives or when the one before it was done; the turn model's and
    the recognizer's time holds the reader, as on the socket. What happened, and when."""

    def __init__(
        self, config: ListeningConfig, judge: TurnJudge | None, recognizer: Recognizer | None
    ) -> None:
        self.voice = VoiceInput(ListeningService(config, NoRecognizer(), judge))
        self.voice.listen("hands_free", 0.0)
        self.judge, self.recognizer = judge, recognizer
        self.now = 0.0
        self.resume_at: float | None = None  # the paused reply's resume bound
        self.found: dict[str, Any] = {
            "speech_start_ms": None,
            "end": None,
            "pause_s": None,
            "cut_s": None,
            "cut_by": None,
            "resumed_s": None,
            "resumed_by": None,
            "pcm": None,
            "heard": None,
            "asr_ms": None,
            "prompt": None,
        }

    @property
    def decided(self) -> bool:
        """The reply was cut, or the utterance's words were answered (or, with no recognizer,
        the utterance has ended)."""
        found = self.found
        if self.recognizer is None and found["pcm"] is not None:
            return True
        return found["cut_s"] is not None or found["heard"] is not None

    def frame(self, pcm: bytes, arrives_s: float) -> None:
        self.now = max(self.now, arrives_s)
        self.timer()
        self.take(self.timed(lambda: self.voice.frame(MicFrame(pcm), self.now, True)))

    def timed(self, work: Any) -> Any:
        began = time.perf_counter()
        try:
            return work()
        finally:
            self.now += time.perf_counter() - began

    def waited(self, work: Any) -> Any:
        """``work`` that the socket's reader awaits (the turn model, recognition): the resume
        bound's timer runs meanwhile."""
        result = self.timed(work)
        self.timer()
        return result

    def timer(self) -> None:
        """The resume bound's timer, beside the reader: a bound passed resumes the reply at the
        bound itself (once: ``due`` answers nothing after)."""
        if self.resume_at is not None and self.resume_at <= self.now:
            now, self.now = self.now, self.resume_at
            self.take(resumed(self.voice.hold.due(self.resume_at)))
            self.now = now

    def take(self, actions: list[Action]) -> None:
        found = self.found
        for action in actions:
            if isinstance(action, PauseReply):
                found["pause_s"], self.resume_at = self.now, action.resume_at
            elif isinstance(action, CancelTurn) or (
                isinstance(action, Send) and isinstance(action.event, TurnCancelled)
            ):
                found["cut_s"] = self.now
                found["cut_by"] = "interrupt_ms" if found["heard"] is None else "words"
                found["resumed_s"] = found["resumed_by"] = None  # resumed at the bound, then cut
            elif isinstance(action, Send) and isinstance(action.event, ReplyResumed):
                found["resumed_s"] = self.now
                found["resumed_by"] = "resume_ms" if found["heard"] is None else "words"
            elif isinstance(action, Send) and isinstance(action.event, SpeechStart):
                found["speech_start_ms"] = found["speech_start_ms"] or action.event.at_ms
            elif isinstance(action, Send) and isinstance(action.event, SpeechEnd):
                found["end"] = found["end"] or action.event.reason
                found["speech_ms"] = action.event.audio_ms
            elif isinstance(action, JudgeTurn):
                self.take(self.judged(action))
            elif isinstance(action, Recognize) and found["pcm"] is None:
                found["pcm"] = action.utterance.pcm
                self.take(self.recognized(action.utterance.pcm, action.murmurs))
            elif isinstance(action, StartTurn):
                found["prompt"] = action.text

    def judged(self, action: JudgeTurn) -> list[Action]:
        assert self.judge is not None  # asked only with one
        judge = self.judge
        score = self.waited(lambda: asyncio.run(judge.judge(action.paused.pcm)))
        return self.voice.judged(action.paused.ticket, score, self.now, True)

    def recognized(self, pcm: bytes, murmurs: bool) -> list[Action]:
        """The transcript, answered as the socket answers it (nothing without a recognizer)."""
        if self.recognizer is None:
            return []
        recognizer = self.recognizer
        recognition = self.waited(lambda: asyncio.run(recognizer.recognize(pcm, murmurs)))
        self.found["heard"], self.found["asr_ms"] = recognition.text, recognition.asr_ms
        return self.voice.heard(recognition.text, self.now, True)


def listened(
    config: ListeningConfig,
    samples: np.ndarray,
    judge: TurnJudge | None = None,
    recognizer: Recognizer | None = None,
) -> dict[str, Any]:
    """Feed ``samples`` as 20 ms frames over a running turn until the reply is cut or the
    words are answered; what the server decided, and when (ms of the clip's audio time)."""
    socket = Socket(config, judge, recognizer)
    pcm = (samples * 32767).astype("<i2").tobytes()
    size = ms(FRAME_MS) * 2
    for offset in range(0, len(pcm), size):
        socket.frame(pcm[offset : offset + size], (offset + size) / 2 / RATE)
        if socket.decided:
            break
    found = socket.found
    for key in ("pause", "cut", "resumed"):
        seconds = found.pop(f"{key}_s")
        found[f"{key}_ms"] = None if seconds is None else seconds * 1000
    return found


def is_backchannel(text: str, config: ListeningConfig) -> bool:
    """Whether a transcript is nothing but backchannel words (or nothing at all)."""
    return only_backchannel(text, config.backchannels)


def loudest_probability(samples: np.ndarray) -> float:
    """Silero's highest speech probability over the clip."""
    from agent.listening.vad import VoiceActivity

    pcm = (samples * 32767).astype("<i2").tobytes()
    return max(p for _, p in VoiceActivity().windows(pcm))


def since(at_ms: float | None, onset: float) -> float | None:
    """Ms from the sound's onset to ``at_ms`` (None: it never came)."""
    return None if at_ms is None else round(at_ms - onset, 1)


def measure(
    quick: bool = False, asr: bool = True, phases: int | None = None, murmurs: bool = True
) -> dict[str, Any]:
    """Every clip through the listening path; ``phases``: the recognizer's readings (None: the
    default); ``murmurs``: unsure readings over the paused reply read again (``asr_murmurs``)."""
    from agent.listening.turn_model import shared_smart_turn

    config = ListeningConfig(burst_s=1e6, asr_murmurs=murmurs)
    if phases is not None:
        config = dataclasses.replace(config, asr_phases=phases)
    judge = shared_smart_turn()
    asyncio.run(judge.load())
    recognizer = None
    if asr:
        from agent.listening.whisper import shared_whisper

        recognizer = shared_whisper(config)
        asyncio.run(recognizer.load())
    rows = []
    for index, sound in enumerate(corpus(quick)):
        onset = LEAD_MS + onset_ms(sound.samples)
        samples = clip(sound, index)
        found = listened(config, samples, judge, recognizer)

        paused, cut, resumed = (found[f"{k}_ms"] is not None for k in ("pause", "cut", "resumed"))
        row: dict[str, Any] = {
            "kind": sound.kind,
            "name": sound.name,
            "source": sound.source,
            "sound_ms": round(len(sound.samples) / RATE * 1000),
            "level_dbfs": round(active_dbfs(sound.samples), 1),
            "vad_max": round(loudest_probability(samples), 3),
            "speech_start": found["speech_start_ms"] is not None,
            "speech_end": found["end"],
            "paused": paused,
            "stop_ms": since(found["pause_ms"], onset),
            "cut": cut,
            "cut_by": found["cut_by"],
            "cut_ms": since(found["cut_ms"], onset),
            "resumed": resumed,
            "resumed_by": found["resumed_by"],
            "silent_ms": (
                round(found["resumed_ms"] - found["pause_ms"], 1) if resumed and paused else None
            ),
        }
        if found["heard"] is not None:
            heard = found["heard"]
            row["heard"], row["heard_backchannel"] = heard, is_backchannel(heard, config)
            row["asr_ms"] = found["asr_ms"]
        rows.append(row)
        print(f"{sound.kind:12} {sound.label[:50]:50} {said(row):>36}  {row.get('heard', '')!r}")
    return summary(rows, config, asr)


def said(row: dict[str, Any]) -> str:
    """What became of a clip, in a few words, for the progress lines."""
    if row["cut"]:
        return f"CUT {row['cut_ms']} ms ({row['cut_by']})"
    if row["resumed"]:
        return f"RESUMED after {row['silent_ms']} ms ({row['resumed_by']})"
    if row["paused"]:
        return f"PAUSED {row['stop_ms']} ms"
    return str(row["speech_end"] or "-")


def stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    values = sorted(values)
    return {
        "median": round(statistics.median(values), 1),
        "p90": round(values[min(len(values) - 1, int(len(values) * 0.9))], 1),
        "max": round(values[-1], 1),
        "min": round(values[0], 1),
    }


def summary(rows: list[dict[str, Any]], config: ListeningConfig, asr: bool) -> dict[str, Any]:
    """Totals per kind, per text, per source; the stop, cut and silent times."""
    kinds: dict[str, Any] = {}
    for kind in ("backchannel", "noise", "interruption"):
        mine = [r for r in rows if r["kind"] == kind]
        kinds[kind] = {
            "clips": len(mine),
            "speech_start": sum(r["speech_start"] for r in mine),
            "too_short": sum(r["speech_end"] == "too_short" for r in mine),
            "paused": sum(r["paused"] for r in mine),
            "cut": sum(r["cut"] for r in mine),
            "cut_at_interrupt_ms": sum(r["cut_by"] == "interrupt_ms" for r in mine),
            "resumed": sum(r["resumed"] for r in mine),
            "resumed_at_resume_ms": sum(r["resumed_by"] == "resume_ms" for r in mine),
            "heard_as_backchannel": (
                sum(bool(r.get("heard_backchannel")) for r in mine) if asr else None
            ),
        }
    interruptions = [r for r in rows if r["kind"] == "interruption"]
    backchannels = [r for r in rows if r["kind"] == "backchannel"]
    return {
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "commit": commit(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "config": {
            "barge_in_ms": config.barge_in_ms,
            "interrupt_ms": config.interrupt_ms,
            "resume_ms": config.resume_ms,
            "vad_threshold": config.vad_threshold,
            "onset_ms": config.onset_ms,
            "endpointing": config.endpointing,
            "frame_ms": FRAME_MS,
            "speech_dbfs": SPEECH_DBFS,
            "soft_db": SOFT_DB,
            "floor_dbfs": FLOOR_DBFS,
        },
        "asr": asr,
        "asr_phases": config.asr_phases,
        "asr_murmurs": config.asr_murmurs,
        "backchannel_words": list(config.backchannels),
        "kinds": kinds,
        "per_text": per_phrase(rows),
        "stop_ms": stats([r["stop_ms"] for r in interruptions if r["paused"]]),
        "cut_ms": stats([r["cut_ms"] for r in interruptions if r["cut"]]),
        "silent_ms": stats([r["silent_ms"] for r in backchannels if r["resumed"]]),
        "asr_ms": {
            kind: stats([r["asr_ms"] for r in rows if r["kind"] == kind and r.get("asr_ms")])
            for kind in ("backchannel", "interruption")
        },
        "false_cut_sound_ms": stats(
            [r["sound_ms"] for r in rows if r["kind"] != "interruption" and r["cut"]]
        ),
        "rows": rows,
    }


def per_phrase(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per backchannel and interruption phrase, every voice and level: clips, paused, cut,
    resumed."""
    per_text: dict[str, dict[str, int]] = {}
    for row in rows:
        if row["kind"] != "noise":
            entry = per_text.setdefault(
                row["name"], {"clips": 0, "paused": 0, "cut": 0, "resumed": 0}
            )
            entry["clips"] += 1
            for key in ("paused", "cut", "resumed"):
                entry[key] += row[key]
    return per_text


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    kinds = result["kinds"]
    stop, cut, silent = (result[key] or {} for key in ("stop_ms", "cut_ms", "silent_ms"))
    asr = {kind: times or {} for kind, times in result.get("asr_ms", {}).items()}
    lines = [
        "# False interruptions: what cuts a reply",
        "",
        intro(result),
        "",
        "| kind | clips | `speech.start` | `too_short` | paused | cut the reply (at "
        "`interrupt_ms`) | resumed (at `resume_ms`) | heard as only backchannel words (or "
        "nothing) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, k in kinds.items():
        heard = "-" if k["heard_as_backchannel"] is None else k["heard_as_backchannel"]
        lines.append(
            f"| {kind} | {k['clips']} | {k['speech_start']} | {k['too_short']} | {k['paused']} "
            f"| {k['cut']} ({k['cut_at_interrupt_ms']}) | {k['resumed']} "
            f"({k['resumed_at_resume_ms']}) | {heard} |"
        )
    lines += [
        "",
        f"Barge-in stop time on the {kinds['interruption']['paused']} interruptions that paused "
        "the reply (the sound's onset to the end of the frame whose processing paused it, plus "
        f"that processing): median {stop.get('median')} ms, p90 {stop.get('p90')}, max "
        f"{stop.get('max')}, min {stop.get('min')}. From the onset to the cut (`cancelled`): "
        f"median {cut.get('median')} ms, p90 {cut.get('p90')}, max {cut.get('max')}. The "
        f"resumed backchannels were silent (paused) for median {silent.get('median')} ms, p90 "
        f"{silent.get('p90')}, max {silent.get('max')}. Recognition of the backchannels took "
        f"median {asr.get('backchannel', {}).get('median')} ms, p90 "
        f"{asr.get('backchannel', {}).get('p90')}; of the interruptions median "
        f"{asr.get('interruption', {}).get('median')} ms, p90 "
        f"{asr.get('interruption', {}).get('p90')}.",
        "",
        "## Per phrase (backchannels and interruptions, every voice and level)",
        "",
        "| phrase | clips | paused | cut | resumed |",
        "|---|---:|---:|---:|---:|",
    ]
    for text, entry in result["per_text"].items():
        lines.append(
            f"| {text} | {entry['clips']} | {entry['paused']} | {entry['cut']} "
            f"| {entry['resumed']} |"
        )
    return "\n".join([*lines, *every_clip(result["rows"]), ""])


def intro(result: dict[str, Any]) -> str:
    """The report's first paragraph: the run, the path each clip takes, the corpus."""
    config = result["config"]
    murmurs = "on" if result.get("asr_murmurs") else "off (`--no-murmurs`)"
    return (
        f"`python -m bench.speech.false_interruptions` ({result['date']} at "
        f"{result.get('commit', '-')}, {result['cpus']} CPUs, load average "
        f"{result['load_average'][0]}). Each clip fed as "
        f"{config['frame_ms']} ms microphone frames into a `VoiceInput` listening hands-free "
        f"while a turn runs (Silero VAD at {config['vad_threshold']}, onset "
        f"{config['onset_ms']} ms, endpointing `{config['endpointing']}`, `barge_in_ms` "
        f"{config['barge_in_ms']}: the reply paused; `interrupt_ms` {config['interrupt_ms']}: "
        f"cut without waiting for words; `resume_ms` {config['resume_ms']}: played on with no "
        "words by then); a `CancelTurn` is a cut, a `reply.resumed` the reply played on. Speech "
        f"at {config['speech_dbfs']} dBFS active level (backchannels and the short "
        f"interruptions also {config['soft_db']:+} dB), in a {config['floor_dbfs']} dBFS floor. "
        "Corpus: bench/speech/false_interruptions.py. The utterances recognized by tiny.en with "
        f"{result.get('asr_phases', '-')} reading(s) (`--asr-phases`); an unsure reading over "
        f"the paused reply read again after the murmur prompt: {murmurs} "
        "(`VOICE_AGENT_ASR_MURMURS`); each transcript answered as the socket answers it."
    )


def every_clip(rows: list[dict[str, Any]]) -> list[str]:
    """The report's table of every clip, as Markdown lines."""
    lines = [
        "",
        "## Every clip",
        "",
        "| kind | sound | source | length (ms) | level (dBFS) | Silero's highest | `speech.end` "
        "| stop (ms) | outcome | heard | recognized in (ms) |",
        "|---|---|---|---:|---:|---:|---|---:|---|---|---:|",
    ]
    for r in rows:
        outcome = (
            f"cut at {r['cut_ms']} ms ({r['cut_by']})"
            if r["cut"]
            else f"resumed after {r['silent_ms']} ms ({r['resumed_by']})"
            if r["resumed"]
            else "-"
        )
        lines.append(
            f"| {r['kind']} | {r['name']} | {r['source']} | {r['sound_ms']} | {r['level_dbfs']} "
            f"| {r['vad_max']} | {r['speech_end'] or '-'} "
            f"| {r['stop_ms'] if r['stop_ms'] is not None else '-'} | {outcome} "
            f"| {r.get('heard', '-')!s} | {r.get('asr_ms') or '-'} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    """Measure and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--quick", action="store_true", help="two phrases of each kind")
    parser.add_argument("--no-asr", dest="asr", action="store_false", help="do not recognize")
    parser.add_argument("--asr-phases", type=int, help="readings per recognition (default: 2-4)")
    parser.add_argument(
        "--no-murmurs",
        dest="murmurs",
        action="store_false",
        help="do not read unsure utterances over the paused reply again (VOICE_AGENT_ASR_MURMURS)",
    )
    args = parser.parse_args(argv)
    result = measure(args.quick, args.asr, args.asr_phases, args.murmurs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "false_interruptions.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "false_interruptions.md").write_text(markdown(result))
    print(markdown(result).split("## Per phrase")[0])


if __name__ == "__main__":
    main()
