"""The AgentCore target sends the real ``InvokeAgentRuntime`` request and reads its SSE body."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import boto3
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from bench.latency import targets as latency_targets

ARN = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/voice_agent-AbCdEf1234"


async def test_agentcore_target_sends_the_real_request_and_reads_the_sse_body() -> None:
    client = boto3.client(
        "bedrock-agentcore",
        region_name="us-west-2",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
    )
    lines: list[dict[str, Any]] = [
        {"type": "turn.start", "turn_id": "ab", "mode": "stream"},
        {"type": "text.delta", "text": "Hello."},
        {"type": "audio.delta", "seq": 0, "audio": base64.b64encode(bytes(10)).decode()},
        {"type": "turn.end"},
    ]
    body = b"".join(f"data: {json.dumps(line)}\n\n".encode() for line in lines)
    target = latency_targets.AgentCoreTarget(ARN, client=client)
    with Stubber(client) as stubber:
        for mode in ("stream", "batch"):
            stubber.add_response(
                "invoke_agent_runtime",
                {
                    "response": StreamingBody(io.BytesIO(body), len(body)),
                    "contentType": "text/event-stream",
                    "statusCode": 200,
                    "runtimeSessionId": "x" * 40,
                },
                {
                    "agentRuntimeArn": ARN,
                    "qualifier": "DEFAULT",
                    "runtimeSessionId": ANY,
                    "contentType": "application/json",
                    "accept": "text/event-stream",
                    "payload": json.dumps(
                        {"prompt": latency_targets.PROMPT, "mode": mode}
                    ).encode(),
                },
            )
        events = await target.turn("stream", "c1", None)
        await target.turn("batch", "c1", None)
        stubber.assert_no_pending_responses()
    assert [e["type"] for _, e in events] == [line["type"] for line in lines]
    assert events[2][1] == {"type": "audio.delta", "seq": 0, "bytes": 10}
    first, again, other = (target.request("stream", c)["runtimeSessionId"] for c in "aab")
    assert first == again != other and len(first) >= 33  # one runtime session per conversation
