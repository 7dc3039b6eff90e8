"""``python -m tts_client``: speak text through one session and write a WAV file.

    python -m tts_client --url ws://127.0.0.1:8080/ws "Hello there. How are you?"
    printf 'One line.\\nAnother line.\\n' | python -m tts_client --url ws://127.0.0.1:8080/ws
    python -m tts_client --endpoint kokoro-tts --region us-east-1 "Hello from SageMaker."

TEXT is one segment; without it every non-empty stdin line is one segment, sent the moment
it is read. Prints each segment's time to first audio and the total time.

Ctrl+C (SIGINT) or SIGTERM, at any point after its imports (waiting for a line, a handshake or
audio, writing the WAV): the connection is closed, one line on stderr says what stopped and that
no WAV was written, and the process ends by the signal (``observability.stopping``: 130 or 143).
The WAV is written whole or not at all (``write_whole``), so the output file is as it was.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from observability.stopping import as_stop, end_stopped, read_lines, stop_line, stops_caught
from tts_client.errors import SegmentFailed, TTSError
from tts_client.segment import SegmentStream
from tts_client.session import TTSSession
from tts_client.transports.base import Transport
from tts_client.transports.sagemaker import SageMakerTransport
from tts_client.transports.websocket import WebSocketTransport
from tts_protocol import (
    BYTES_PER_SAMPLE,
    DEFAULT_SPEED,
    MAX_SPEED,
    MIN_SPEED,
    ProtocolError,
    VoiceMix,
    check_speed,
    check_voice,
    wav_bytes,
)

PROG = "python -m tts_client"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Speak TEXT (or each stdin line) through one TTS session; write a WAV.",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="WebSocket URL, e.g. ws://127.0.0.1:8080/ws")
    target.add_argument("--endpoint", help="SageMaker endpoint name (Python >= 3.12)")
    parser.add_argument("--region", help="AWS region for --endpoint (default: the AWS chain's)")
    parser.add_argument("--voice", type=_voice, help="voice name or blend (default: the server's)")
    parser.add_argument(
        "--speed",
        type=_speed,
        default=DEFAULT_SPEED,
        help=f"speaking rate, {MIN_SPEED:g} to {MAX_SPEED:g}",
    )
    parser.add_argument("--output", type=Path, default=Path("out.wav"), help="WAV to write")
    parser.add_argument("text", nargs="?", help="text to speak; omit to read stdin lines")
    return parser.parse_args(argv)


def _voice(text: str) -> VoiceMix | None:
    """``--voice``, parsed once by the protocol's own rule."""
    try:
        return check_voice(text)
    except ProtocolError as exc:
        raise argparse.ArgumentTypeError(exc.message) from exc


def _speed(text: str) -> float:
    """``--speed``, checked by the protocol's own rule."""
    try:
        return check_speed(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    except ProtocolError as exc:
        raise argparse.ArgumentTypeError(exc.message) from exc


def transport_for(args: argparse.Namespace) -> Transport:
    """The transport the flags name."""
    if args.url:
        return WebSocketTransport(args.url)
    return SageMakerTransport(args.endpoint, region=args.region)


async def _lines(text: str | None) -> AsyncIterator[str]:
    if text is not None:
        yield text
        return
    async for line in read_lines(sys.stdin):  # a stop does not wait for a line
        if line.strip():
            yield line.strip()


async def speak_all(
    session: TTSSession, lines: AsyncIterator[str], voice: VoiceMix | None, speed: float
) -> bytes:
    """Send every line as it comes; collect the audio in order, printing each segment's times."""
    queue: asyncio.Queue[SegmentStream | None] = asyncio.Queue()

    async def produce() -> None:
        try:
            async for line in lines:
                queue.put_nowait(await session.speak(line, voice=voice, speed=speed))
        finally:
            queue.put_nowait(None)

    producer = asyncio.create_task(produce())
    pcm = bytearray()
    number = 0
    try:
        while (segment := await queue.get()) is not None:
            number += 1
            try:
                pcm += await segment.read()
            except SegmentFailed as exc:
                print(f"[{number}] failed: {exc}", file=sys.stderr)
                continue
            timings = segment.timings
            rate = session.ready.sample_rate
            print(
                f"[{number}] first audio {timings.first_audio_s or 0:.3f} s, "
                f"total {timings.total_s or 0:.3f} s, {segment.samples / rate:.2f} s of audio: "
                f"{segment.text[:60]}",
                flush=True,
            )
    finally:
        producer.cancel()
    await producer
    return bytes(pcm)


async def synthesize(args: argparse.Namespace) -> tuple[bytes, int]:
    """Speak through one session; the PCM and its sample rate."""
    transport = transport_for(args)
    try:
        async with TTSSession(transport) as session:
            pcm = await speak_all(session, _lines(args.text), args.voice, args.speed)
            return pcm, session.ready.sample_rate
    finally:
        await transport.aclose()


async def run(args: argparse.Namespace) -> bytes | None:
    """Connect and speak; the WAV to write, or None after a client error (said on stderr)."""
    started = time.perf_counter()
    try:
        pcm, sample_rate = await synthesize(args)
    except (TTSError, ValueError) as exc:  # ValueError: e.g. no AWS region configured
        print(f"error: {exc}", file=sys.stderr)
        return None
    seconds = len(pcm) / BYTES_PER_SAMPLE / sample_rate
    print(
        f"total {time.perf_counter() - started:.3f} s for {seconds:.2f} s of audio "
        f"-> {args.output}",
        flush=True,
    )
    return wav_bytes(pcm, sample_rate)


def write_whole(path: Path, data: bytes) -> None:
    """``data`` at ``path`` whole or not at all: written beside it, then renamed over it, so
    that a stop midway (or a full disk) leaves ``path`` as it was and no partial file."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with part.open("wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def kept(output: Path) -> str:
    """What a stop leaves as it was: the second half of the stop line."""
    return f"no WAV was written, so nothing was lost: {output} is as it was"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: the exit status, or the end by a stop's signal with one line."""
    args = parse_args(argv)
    with stops_caught():
        try:
            wav = asyncio.run(run(args))
            if wav is None:
                return 1
            write_whole(args.output, wav)  # the last step: a stop before its end writes nothing
        except BaseException as error:  # a stop, or an error it caused (``as_stop``)
            if (stopped := as_stop(error)) is None:
                raise
            end_stopped(stop_line(PROG, stopped, kept(args.output)), stopped.signum)
    return 0
