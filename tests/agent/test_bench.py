"""``voice-agent bench``: the figures of a turn, the AgentCore request, and a quick real run."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from agent import bench, cli
from tests.servers import ServerThread

ARN = "arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/voice_agent-AbCdEf1234"


def test_playback_counts_each_stall_once() -> None:
    arrivals = [(0.0, 100.0), (50.0, 100.0), (300.0, 100.0), (310.0, 100.0), (700.0, 50.0)]
    plays = bench.playback(arrivals)
    assert plays == [(0, 100), (100, 100), (300, 100), (400, 100), (700, 50)]
    assert bench.underruns(plays) == (2, 300.0)  # 200..300 and 500..700
    assert bench.underruns(bench.playback([])) == (0, 0)


def test_audio_bursts_merge_chunks_that_arrive_together() -> None:
    arrivals = [(100.0, 100.0), (101.0, 100.0), (104.0, 50.0), (900.0, 100.0), (903.0, 20.0)]
    assert bench.bursts(arrivals) == [[100.0, 250.0], [900.0, 120.0]]


@pytest.mark.parametrize("size", range(8))
def test_compact_keeps_the_pcm_size_of_an_audio_event(size: int) -> None:
    audio = base64.b64encode(bytes(size)).decode()
    event = {"type": "audio.delta", "seq": 3, "audio": audio, "sample_rate": 24000}
    assert bench.compact(event) == {"type": "audio.delta", "seq": 3, "bytes": size}


def test_figures_of_a_turn() -> None:
    second = 48_000  # bytes of PCM in one second
    events: list[bench.Timed] = [
        (1.0, {"type": "turn.start"}),
        (300.0, {"type": "text.delta", "text": "Hi."}),
        (310.0, {"type": "segment", "seq": 0, "text": "Hi."}),
        (600.0, {"type": "audio.delta", "seq": 0, "bytes": second}),
        (605.0, {"type": "segment.end", "seq": 0, "audio_ms": 1000.0}),
        (700.0, {"type": "segment", "seq": 1, "text": "Bye."}),
        (1800.0, {"type": "audio.delta", "seq": 1, "bytes": second // 2}),
        (1801.0, {"type": "segment.end", "seq": 1, "audio_ms": 500.0}),
        (1802.0, {"type": "metrics", "ttft_ms": 290.0, "ttfa_ms": 590.0, "total_ms": 1795.0}),
        (1803.0, {"type": "turn.end"}),
    ]
    figures = bench.figures(events)
    assert figures["ttft_ms"] == 300 and figures["ttfa_ms"] == 600 and figures["total_ms"] == 1803
    assert figures["audio_ms"] == 1500 and figures["segments"] == 2
    assert figures["first_segment_ms"] == 310
    assert (figures["underruns"], figures["underrun_ms"]) == (1, 200.0)  # 1600..1800
    assert figures["server"] == {"ttft_ms": 290.0, "ttfa_ms": 590.0, "total_ms": 1795.0}
    assert [s["first_audio_ms"] for s in figures["segment_detail"]] == [600, 1800]


def test_percentiles_interpolate_between_ranks() -> None:
    assert bench.spread([5.0, 1.0, 4.0, 2.0, 3.0]) == {"median": 3.0, "p90": 4.6}
    assert bench.percentile([None, 7.0], 95) == 7.0 and bench.percentile([], 50) is None


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
    target = bench.AgentCoreTarget(ARN, client=client)
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
                    "payload": json.dumps({"prompt": bench.PROMPT, "mode": mode}).encode(),
                },
            )
        events = await target.turn("stream", "c1", None)
        await target.turn("batch", "c1", None)
        stubber.assert_no_pending_responses()
    assert [e["type"] for _, e in events] == [line["type"] for line in lines]
    assert events[2][1] == {"type": "audio.delta", "seq": 0, "bytes": 10}
    first, again, other = (target.request("stream", c)["runtimeSessionId"] for c in "aab")
    assert first == again != other and len(first) >= 33  # one runtime session per conversation


def test_quick_bench_against_the_local_server(tts_server: ServerThread, tmp_path: Path) -> None:
    cli.main(["bench", "--quick", "--tts-url", tts_server.ws_url, "--out", str(tmp_path)])
    report = json.loads((tmp_path / "agent_latency.json").read_text())
    assert set(report["levels"]) == {"transport", "inprocess", "http"}
    assert set(report["levels"]["transport"]["runs"]) == {"pipelined", "sequential", "reconnect"}
    for level in ("inprocess", "http"):
        (case,) = report["levels"][level]
        assert {run["mode"] for run in case["runs"]} == {"stream", "batch"}
        for run in case["runs"]:
            assert run["ttft_ms"] < run["first_segment_ms"] < run["ttfa_ms"] < run["total_ms"]
            assert run["segments"] == (2 if run["mode"] == "stream" else 1)
            assert run["lone_ttfa_ms"] > 0 and not run["errors"]
            assert run["overhead_ms"] == pytest.approx(run["ttfa_ms"] - run["floor_ms"], abs=0.2)
        assert case["ttfa_batch_over_stream"] > 0
        assert len(case["timeline"]["stream"]["audio"]) >= 2  # a burst per sentence
    assert [c["turns"] for c in report["concurrency"]] == [1, 2]
    assert report["machine"]["cores"] and report["setup"]["quick"]
    assert "## Headline" in (tmp_path / "agent_latency.md").read_text()
    assert (tmp_path / "agent_latency.png").read_bytes().startswith(b"\x89PNG")
