"""``voice-agent acceptance``: the production acceptance test of a TTS endpoint.

    voice-agent acceptance ws://127.0.0.1:8080/invocations-bidirectional-stream
    voice-agent acceptance ws://GATEWAY/invocations-bidirectional-stream --ping-url http://HOST/ping
    voice-agent acceptance --endpoint kokoro-tts --region us-east-1     # Python >= 3.12

It speaks protocol v1 through ``ClientProtocol`` (the rules of the wire the session uses) but
sends the frames itself, so that it chooses each frame's type: a WebSocket binary or text frame,
or a SageMaker part with ``DataType`` BINARY or UTF8. A frame the protocol does not allow (audio
outside a segment, a reply for an unknown segment) fails the check it arrives in.

Checks, one line each (PASS, FAIL or n/a), in this order on one connection: /ping is healthy;
the first frame is ``ready``; a speak in a binary frame and one in a text frame both produce
audio; garbage bytes, invalid UTF-8, a JSON array and an unknown voice each get their typed
error, and the connection still serves; 4 pipelined sentences all end, in order; cancel (by id
and for all) sends no audio after ``cancelled``; first audio and total completion of the 4
sentences, reported separately; the total fails at a real-time factor (its time over the
audio's) above ``--max-rtf`` (default 1: slower than real time cannot stream; a higher value
relaxes it). The exit status is 1 if any check failed.
"""

from __future__ import annotations

import argparse
import asyncio

from tts_client.acceptance.checks import (
    FAIL,
    MAX_RTF,
    NA,
    PASS,
    TIMEOUT_S,
    Acceptance,
    Check,
    report,
)
from tts_client.acceptance.targets import AcceptanceTarget, SageMakerTarget, WebSocketTarget
from tts_client.errors import TransportUnavailable

__all__ = [
    "FAIL",
    "MAX_RTF",
    "NA",
    "PASS",
    "Acceptance",
    "AcceptanceTarget",
    "Check",
    "SageMakerTarget",
    "WebSocketTarget",
    "add_arguments",
    "report",
    "run",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``voice-agent acceptance`` flags."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("url", nargs="?", help="the TTS WebSocket (server or gateway)")
    target.add_argument("--endpoint", help="a SageMaker endpoint name (Python >= 3.12)")
    parser.add_argument("--region", help="for --endpoint (default: the AWS chain's)")
    parser.add_argument("--ping-url", help="the server's /ping (default: derived from the URL)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per reply")
    parser.add_argument("--max-first-audio-ms", type=float, help="fail above this first audio")
    parser.add_argument("--max-total-ms", type=float, help="fail above this total completion")
    parser.add_argument(
        "--max-rtf",
        type=float,
        default=MAX_RTF,
        help="fail when the total completion over the audio's length is above this (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    """Run every check; print one line each; 1 on any failure, 2 if it cannot run here."""
    try:
        target: AcceptanceTarget = (
            SageMakerTarget(args.endpoint, args.region)
            if args.endpoint
            else WebSocketTarget(args.url, args.ping_url)
        )
    except (TransportUnavailable, ValueError) as exc:
        print(f"acceptance: cannot test {args.endpoint}: {exc}")
        return 2
    print(f"acceptance: {target.name}")
    checks = asyncio.run(
        Acceptance(
            target, args.timeout, args.max_first_audio_ms, args.max_total_ms, args.max_rtf
        ).run()
    )
    text, status = report(checks, "acceptance")
    print(text)
    return status
