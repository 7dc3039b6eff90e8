"""``voice-agent chat``: a conversation with the agent over its WebSocket leg (``/ws``).

    voice-agent chat --url ws://127.0.0.1:8000/ws --prompt "Hello" --output turn.wav
    echo "Tell me about Kokoro" | voice-agent chat --runtime-arn ARN [--region R] -o turn.wav
    voice-agent chat --runtime-arn ARN --bearer-token "$TOKEN"      # OAuth instead of SigV4

Prompts come from ``--prompt`` (repeatable) or from stdin, one a line, each turn after the one
before. The reply's text is printed as it streams; its audio (every turn, in order) is saved
as one WAV file with ``--output``. For a deployed runtime the URL is AgentCore's
``wss://bedrock-agentcore.<region>.amazonaws.com/runtimes/<url-encoded ARN>/ws``, presigned
with SigV4 (credentials from the standard chain, valid 5 minutes) by the AgentCore SDK's
``AgentCoreRuntimeClient`` (botocore's query signer), or sent with an OAuth bearer token.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from websockets.asyncio.client import ClientConnection, connect

from agent.browser_leg import SESSION_HEADER, split_audio_frame
from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE, wav_bytes

PRESIGNED_URL_S = 300  # AgentCore's longest
CONNECT_S = 30
TURN_IDLE_S = 120  # a turn that sends nothing for this long is given up


@dataclass(frozen=True, slots=True)
class Handshake:
    """The agent's ``/ws``: where to connect, and the headers of the upgrade request."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class TurnResult:
    """What one turn sent back."""

    text: str = ""
    pcm: bytearray = field(default_factory=bytearray)
    errors: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


def runtime_handshake(
    arn: str,
    session_id: str,
    region: str | None = None,
    qualifier: str = "DEFAULT",
    bearer_token: str | None = None,
) -> Handshake:
    """AgentCore Runtime's ``/ws`` for ``arn``: a SigV4-presigned URL, or OAuth headers."""
    import boto3
    from bedrock_agentcore.runtime import AgentCoreRuntimeClient

    region = region or arn.split(":")[3]
    client = AgentCoreRuntimeClient(region, session=boto3.Session(region_name=region))
    if bearer_token:
        url, headers = client.generate_ws_connection_oauth(
            arn, bearer_token, session_id=session_id, endpoint_name=qualifier
        )
        return Handshake(url, {k: headers[k] for k in ("Authorization", SESSION_HEADER)})
    url = client.generate_presigned_url(
        arn, session_id=session_id, endpoint_name=qualifier, expires=PRESIGNED_URL_S
    )
    return Handshake(url)


async def run_turn(
    socket: ClientConnection, message: dict[str, Any], out: TextIO | None = None
) -> TurnResult:
    """Send one ``prompt`` and read its frames until its ``turn.end``; text goes to ``out``."""
    await socket.send(json.dumps({"type": "prompt", **message}))
    result = TurnResult()
    while True:
        frame = await asyncio.wait_for(socket.recv(), TURN_IDLE_S)
        if isinstance(frame, bytes):
            result.pcm += split_audio_frame(frame)[1]
            continue
        event = json.loads(frame)
        kind = event["type"]
        if kind == "text.delta":
            result.text += event["text"]
            if out is not None:
                out.write(event["text"])
                out.flush()
        elif kind == "error":
            result.errors.append(event)
            if event.get("in_reply_to") == "prompt":  # refused: no turn follows
                return result
        elif kind == "metrics":
            result.metrics = event
        elif kind == "turn.end":
            return result


async def lines(stream: TextIO) -> AsyncIterator[str]:
    """The lines of ``stream``, read in a thread: the socket keeps answering pings meanwhile."""
    while line := await asyncio.to_thread(stream.readline):
        yield line.rstrip("\n")


async def listed(prompts: Iterable[str]) -> AsyncIterator[str]:
    """``prompts`` as an async iterator."""
    for prompt in prompts:
        yield prompt


async def chat(
    handshake: Handshake,
    prompts: AsyncIterator[str],
    options: dict[str, Any] | None = None,
    out: TextIO | None = None,
) -> list[TurnResult]:
    """One socket, one turn per prompt in order; the results of every turn."""
    results = []
    async with connect(
        handshake.url, additional_headers=handshake.headers, open_timeout=CONNECT_S
    ) as socket:
        ready = json.loads(await asyncio.wait_for(socket.recv(), CONNECT_S))
        if ready.get("type") != "ready":
            raise RuntimeError(f"expected a ready frame first, got {ready}")
        async for prompt in prompts:
            if not prompt.strip():
                continue
            result = await run_turn(socket, {"prompt": prompt, **(options or {})}, out)
            results.append(result)
            if out is not None:
                out.write("\n")
                for error in result.errors:
                    print(f"[{error['code']}] {error['message']}", file=sys.stderr)
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``voice-agent chat`` flags."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a WebSocket URL, e.g. ws://127.0.0.1:8000/ws (dev server)")
    where.add_argument("--runtime-arn", help="an AgentCore runtime's ARN")
    parser.add_argument("--region", help="for --runtime-arn (default: the ARN's)")
    parser.add_argument("--qualifier", default="DEFAULT", help="the runtime endpoint")
    parser.add_argument("--bearer-token", help="OAuth instead of SigV4 (--runtime-arn)")
    parser.add_argument("--session-id", help="the conversation (default: a new UUID)")
    parser.add_argument("--prompt", action="append", help="a prompt (repeatable; else stdin)")
    parser.add_argument("--output", "-o", type=Path, help="save the audio as this WAV file")
    parser.add_argument("--voice", help="a voice of the TTS server")
    parser.add_argument("--speed", type=float, help="0.5 to 2.0")
    parser.add_argument("--mode", choices=("stream", "batch"))


def handshake_from(args: argparse.Namespace) -> Handshake:
    """The ``/ws`` the flags name."""
    session_id = args.session_id or str(uuid.uuid4())
    if args.runtime_arn:
        return runtime_handshake(
            args.runtime_arn, session_id, args.region, args.qualifier, args.bearer_token
        )
    return Handshake(args.url, {SESSION_HEADER: session_id})


def run(args: argparse.Namespace) -> int:
    """Chat; exit 1 if any turn reported an error."""
    prompts = listed(args.prompt) if args.prompt else lines(sys.stdin)
    options = {k: v for k in ("voice", "speed", "mode") if (v := getattr(args, k)) is not None}
    results = asyncio.run(chat(handshake_from(args), prompts, options, sys.stdout))
    if args.output:
        args.output.write_bytes(wav_bytes(b"".join(bytes(r.pcm) for r in results)))
        seconds = sum(len(r.pcm) for r in results) / (SAMPLE_RATE * BYTES_PER_SAMPLE)
        print(f"saved {seconds:.1f} s of audio to {args.output}", file=sys.stderr)
    return 1 if any(r.errors for r in results) else 0
