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

Exit status: 0, 1 if a turn reported an error, 2 if there was no conversation at all (nothing
listens, not a WebSocket URL, a refused handshake, not the agent's socket, no credentials, a
silent server): one line on stderr says which.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.http11 import Response

from agent.browser_leg import SESSION_HEADER, split_audio_frame
from observability.stopping import read_lines
from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE, wav_bytes

PRESIGNED_URL_S = 300  # AgentCore's longest
CONNECT_S = 30
TURN_IDLE_S = 120  # a turn that sends nothing for this long is given up
NO_CONVERSATION = 2  # the exit status when no conversation could be had
AGENT_SOCKET = "ws://127.0.0.1:8000/ws"  # the dev server's, as the hints name it


class ChatFailed(RuntimeError):
    """No conversation could be had; the message says why, in one line."""


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
    session = boto3.Session(region_name=region)
    client = AgentCoreRuntimeClient(region, session=session)
    if not bearer_token and session.get_credentials() is None:
        raise ChatFailed(
            "no AWS credentials to sign the runtime's URL: set up the standard chain "
            "(aws configure, AWS_PROFILE, AWS_ACCESS_KEY_ID ...) or pass --bearer-token"
        )
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
        try:
            frame = await asyncio.wait_for(socket.recv(), TURN_IDLE_S)
        except TimeoutError as exc:
            raise ChatFailed(f"the agent sent nothing for {TURN_IDLE_S} s in a turn") from exc
        except ConnectionClosed as exc:
            raise ChatFailed(f"the agent closed the connection in a turn: {exc}") from exc
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


def _where(url: str) -> str:
    """``url`` without its query (a presigned URL's signature)."""
    return urlsplit(url)._replace(query="").geturl()


def _refused(where: str, response: Response) -> str:
    """A refused handshake in words: the status, the server's typed message, a hint."""
    detail = response.reason_phrase
    with contextlib.suppress(ValueError, TypeError, LookupError):
        detail = json.loads(response.body)["error"]["message"]
    status = response.status_code
    hint = f" (the agent's socket is /ws, e.g. {AGENT_SOCKET})" if status == 404 else ""
    return f"{where} refused the WebSocket handshake: HTTP {status} {detail}{hint}"


async def open_socket(handshake: Handshake) -> ClientConnection:
    """The agent's socket, past its ``ready`` frame; ``ChatFailed`` says why not."""
    where = _where(handshake.url)
    try:
        socket = await connect(
            handshake.url, additional_headers=handshake.headers, open_timeout=CONNECT_S
        )
    except InvalidURI as exc:
        raise ChatFailed(
            f"{where} is not a WebSocket URL ({exc.msg}); the agent's is like {AGENT_SOCKET}"
        ) from exc
    except InvalidStatus as exc:
        raise ChatFailed(_refused(where, exc.response)) from exc
    except InvalidHandshake as exc:
        raise ChatFailed(f"{where} did not answer as a WebSocket server: {exc}") from exc
    except TimeoutError as exc:
        raise ChatFailed(f"{where} did not answer the handshake within {CONNECT_S} s") from exc
    except ConnectionRefusedError as exc:
        raise ChatFailed(f"nothing listens at {where} (is `voice-agent dev` running?)") from exc
    except OSError as exc:
        raise ChatFailed(f"cannot connect to {where}: {exc.strerror or exc}") from exc
    try:
        ready = json.loads(await asyncio.wait_for(socket.recv(), CONNECT_S))
    except TimeoutError as exc:
        await socket.close()
        raise ChatFailed(f"{where} sent no ready frame within {CONNECT_S} s") from exc
    except ConnectionClosed as exc:
        raise ChatFailed(f"{where} closed the connection before its ready frame: {exc}") from exc
    except ValueError as exc:
        await socket.close()
        raise ChatFailed(f"{where}: the first frame is not JSON") from exc
    if isinstance(ready, dict) and ready.get("type") == "ready" and "conversation" in ready:
        return socket
    await socket.close()
    if isinstance(ready, dict) and ready.get("type") == "error":
        raise ChatFailed(
            f"{where} refused the conversation: [{ready.get('code')}] {ready.get('message')}"
        )
    tts = isinstance(ready, dict) and "protocol" in ready  # the TTS server's ready
    what = "a TTS server's socket" if tts else "its first frame is not the agent's ready"
    raise ChatFailed(
        f"{where} is not the agent's socket ({what}); the agent's is like {AGENT_SOCKET}"
    )


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
    async with await open_socket(handshake) as socket:
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
    """Chat; the exit status as the module says."""
    prompts = listed(args.prompt) if args.prompt else read_lines(sys.stdin)
    options = {k: v for k in ("voice", "speed", "mode") if (v := getattr(args, k)) is not None}
    try:
        results = asyncio.run(chat(handshake_from(args), prompts, options, sys.stdout))
    except ChatFailed as exc:
        print(f"voice-agent chat: {exc}", file=sys.stderr)
        return NO_CONVERSATION
    if args.output:
        args.output.write_bytes(wav_bytes(b"".join(bytes(r.pcm) for r in results)))
        seconds = sum(len(r.pcm) for r in results) / (SAMPLE_RATE * BYTES_PER_SAMPLE)
        print(f"saved {seconds:.1f} s of audio to {args.output}", file=sys.stderr)
    return 1 if any(r.errors for r in results) else 0
