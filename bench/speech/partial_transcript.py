"""Does a partial transcript while the user speaks shorten the final recognition?

    python -m bench.speech.partial_transcript [--every-ms 500] [--out DIR]

Each voice-to-voice question and each pause-corpus sentence, said whole by the project's TTS,
is cut as the endpointer cuts an utterance (192 ms before, 256 ms after the speech). Two ways
to its transcript, on the project's recognizer path (Whisper tiny.en, int8, beam 1, 2 threads,
the fitted window of ``agent.listening.fitted_window``):

- **final only** (what ships): the whole utterance decoded once, when the turn ends;
- **with partials**: while the user speaks, every ``--every-ms`` of audio the utterance so far
  is decoded (its cost is CPU spent while the user talks); at the end, the whole utterance is
  decoded with the last partial's words but its last (still unsure) word forced as the
  decoder's prefix, so the decoder writes only the rest.

Per utterance: the final decoding's time each way, the partials' summed time per second of
speech, and the WER of both transcripts. Writes ``partial_transcript.{json,md}`` (to
``docs/benchmarks/`` by default). The decoding's two stages are timed apart too: the encoder,
which a prefix cannot shorten, and the decoder, which it can.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening.endpointer import TAIL_MS
from agent.listening.fitted_window import english_decoding, window_features, window_frames
from bench.latency import pause_corpus
from bench.latency.agent_latency import machine
from bench.latency.voice_to_voice import UTTERANCES
from bench.speech.asr_voices import padded, samples_of, score, trimmed

STEM = "partial_transcript"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
EVERY_MS = 500


def decode(model: Any, audio: np.ndarray, prefix: str = "") -> tuple[str, float, float]:
    """``audio`` on the fitted window, ``prefix`` forced: the text, encoder ms, decoder ms."""
    context_s = ListeningConfig().asr_context_s
    frames = window_frames(audio.size, MIC_SAMPLE_RATE, context_s) or 3000
    tokenizer, prompt, suppressed = english_decoding(model)
    started = time.perf_counter()
    encoded = model.encode(window_features(model, audio, frames))
    encoded_at = time.perf_counter()
    forced = tokenizer.encode(" " + prefix) if prefix else []
    result = model.model.generate(
        encoded,
        [prompt + forced],
        beam_size=1,
        max_length=len(prompt) + len(forced) + 64,
        suppress_blank=not forced,
        suppress_tokens=suppressed,
    )[0]
    done = time.perf_counter()
    text = tokenizer.decode(result.sequences_ids[0]).strip()  # the prefix's words too
    return text, (encoded_at - started) * 1000, (done - encoded_at) * 1000


def stable(partial: str) -> str:
    """A partial transcript less its last word, which more audio may still change."""
    return " ".join(partial.split()[:-1])


def measure_one(model: Any, text: str, audio: np.ndarray, every_ms: int) -> dict[str, Any]:
    """One utterance both ways."""
    step = MIC_SAMPLE_RATE * every_ms // 1000
    partials, partial_ms = [], 0.0
    for end in range(step, audio.size, step):
        heard, encoder_ms, decoder_ms = decode(model, audio[:end])
        partials.append(heard)
        partial_ms += encoder_ms + decoder_ms
    final, final_encoder, final_decoder = decode(model, audio)
    prefix = stable(partials[-1]) if partials else ""
    helped, helped_encoder, helped_decoder = decode(model, audio, prefix)
    seconds = audio.size / MIC_SAMPLE_RATE
    return {
        "text": text,
        "audio_s": round(seconds, 2),
        "final": final,
        "final_ms": round(final_encoder + final_decoder, 1),
        "final_encoder_ms": round(final_encoder, 1),
        "final_decoder_ms": round(final_decoder, 1),
        "prefix": prefix,
        "with_partials": helped,
        "with_partials_ms": round(helped_encoder + helped_decoder, 1),
        "with_partials_decoder_ms": round(helped_decoder, 1),
        "partials": len(partials),
        "partials_ms_per_s": round(partial_ms / seconds, 1),
        "final_wer": score(text, final)["wer"],
        "with_partials_wer": score(text, helped)["wer"],
    }


def median(rows: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(row[key] for row in rows), 1)


def report(rows: list[dict[str, Any]], every_ms: int) -> dict[str, Any]:
    final_ms, helped_ms = median(rows, "final_ms"), median(rows, "with_partials_ms")
    return {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(("faster-whisper", "ctranslate2")),
        "every_ms": every_ms,
        "utterances": len(rows),
        "final_ms": final_ms,
        "final_encoder_ms": median(rows, "final_encoder_ms"),
        "final_decoder_ms": median(rows, "final_decoder_ms"),
        "with_partials_ms": helped_ms,
        "with_partials_decoder_ms": median(rows, "with_partials_decoder_ms"),
        "saved_ms": round(final_ms - helped_ms, 1),
        "partials_ms_per_s": median(rows, "partials_ms_per_s"),
        "final_wer": round(statistics.fmean(row["final_wer"] for row in rows), 3),
        "with_partials_wer": round(statistics.fmean(row["with_partials_wer"] for row in rows), 3),
        "rows": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    share = result["partials_ms_per_s"] / 10  # ms of decoding per 1000 ms of speech, in %
    lines = [
        "# A partial transcript while the user speaks: does it shorten the final recognition?",
        "",
        f"`python -m {__spec__.name}`, {result['date']}, {result['machine']['cores']} cores, "
        f"load average {result['machine']['load_average'][0]} at the start. "
        f"{result['utterances']} utterances said by the project's TTS (the voice-to-voice "
        "questions and the pause-corpus sentences, whole), cut as the endpointer cuts them; "
        "Whisper tiny.en on the fitted window. With partials: the utterance so far decoded "
        f"every {result['every_ms']} ms while it is spoken, then the whole utterance with the "
        "last partial (less its last word) forced as the decoder's prefix.",
        "",
        "| median | final only (ships) | with partials |",
        "|---|---:|---:|",
        f"| final recognition | {result['final_ms']:.0f} ms | "
        f"{result['with_partials_ms']:.0f} ms |",
        f"| of which the decoder | {result['final_decoder_ms']:.0f} ms | "
        f"{result['with_partials_decoder_ms']:.0f} ms |",
        f"| the encoder (a prefix cannot shorten it) | {result['final_encoder_ms']:.0f} ms | "
        f"{result['final_encoder_ms']:.0f} ms |",
        f"| decoding while the user speaks | 0 | {result['partials_ms_per_s']:.0f} ms per "
        f"second of speech (Whisper's 2 threads busy {share:.0f} % of the time the user speaks) |",
        f"| WER, mean | {result['final_wer']:.3f} | {result['with_partials_wer']:.3f} |",
        "",
        f"Saved at the end of the turn: **{result['saved_ms']:.0f} ms** median.",
        "",
    ]
    return "\n".join(lines)


async def utterances() -> list[tuple[str, np.ndarray]]:
    """Each text and its audio, cut as the endpointer cuts it."""
    texts = [*UTTERANCES, *(t.replace(pause_corpus.MARK, " ") for t in pause_corpus.SENTENCES)]
    spoken = await pause_corpus.say(texts)
    before = ListeningConfig().preroll_ms
    return [
        (text, padded(trimmed(samples_of(spoken[text].pcm)), before, TAIL_MS)) for text in texts
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every-ms", type=int, default=EVERY_MS)
    parser.add_argument("--limit", type=int, default=None, help="measure the first N only")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from bench.speech.intelligibility import whisper

    model = whisper()
    said = asyncio.run(utterances())[: args.limit]
    decode(model, said[0][1])  # warm-up, not counted
    rows = [measure_one(model, text, audio, args.every_ms) for text, audio in said]
    result = report(rows, args.every_ms)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{STEM}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{STEM}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
