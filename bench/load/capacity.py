"""Capacity as users meet it: many conversations in front of a small TTS server.

The dev server (demo model) speaks through a TTS server that admits ``--max-sessions 2``
sessions with work, the setting the idle-lock-out report was reproduced with. The TTS engine is
the fast fake one (``FakeEngine``, each piece taking ``INFER_S``): what is measured is who holds
capacity, not how fast Kokoro is. Cases:

- **one after another**: conversations (tabs, chats) asked once each and left open;
- **idle tabs, then the HTTP routes**: with that many idle conversations, ``/v1/audio/speech``
  and ``/invocations`` on the TTS server, and one more conversation;
- **at once**: more conversations at the same moment than the server admits: each is spoken, or
  told ``tts_busy`` (when, from its POST), and how long it took in all.

    python -m bench.load.capacity            # writes docs/benchmarks/capacity.{json,md}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from bench.reliability.client import agent_service, pace, run_turn, tts_server
from bench.reliability.stats import TurnRecord
from tts_server.testing.fake_engine import FakeEngine

MAX_SESSIONS = 2
INFER_S = 0.05  # per piece on the fake engine's thread
OUT = Path("docs/benchmarks")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One turn as its client saw it."""

    spoken: bool  # audio came, and no error
    first_audio_ms: float | None
    first_error: str | None  # its code
    first_error_ms: float | None
    total_ms: float

    @classmethod
    def of(cls, record: TurnRecord) -> Outcome:
        error = record.errors[0] if record.errors else None
        audio = record.first_audio_s
        return cls(
            spoken=record.ended and audio is not None and not record.errors,
            first_audio_ms=None if audio is None else round(audio * 1000, 1),
            first_error=None if error is None else error[0],
            first_error_ms=None if error is None else round(error[2] * 1000, 1),
            total_ms=round(record.total_s * 1000, 1),
        )


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


async def measure(tabs: int, at_once: int) -> dict[str, object]:
    """The three cases on one TTS server and one dev server; their figures."""
    engine = FakeEngine(delay_s=INFER_S)
    with tts_server(engine, max_sessions=MAX_SESSIONS) as tts:
        agent, voice_agent = agent_service(tts.ws_url)
        for n in range(tabs + 1):
            pace(voice_agent, f"tab-{n}", sentences=3, tokens_per_second=200)
        for n in range(at_once):
            pace(voice_agent, f"together-{n}", sentences=3, tokens_per_second=200)
        agent.start()
        try:
            async with httpx.AsyncClient(base_url=agent.http_url, timeout=60) as client:
                one_by_one = [
                    Outcome.of(await run_turn(client, f"tab-{n}", "Hello")) for n in range(tabs)
                ]
                http, counts = await _http_routes(tts.http_url)
                newcomer = Outcome.of(await run_turn(client, f"tab-{tabs}", "Hello"))
                together = [
                    Outcome.of(record)
                    for record in await asyncio.gather(
                        *(run_turn(client, f"together-{n}", "Hello") for n in range(at_once))
                    )
                ]
        finally:
            agent.stop()
    return {
        "setup": {
            "max_sessions": MAX_SESSIONS,
            "engine": f"fake, {INFER_S * 1000:g} ms per piece",
            "conversations_one_after_another": tabs,
            "conversations_at_once": at_once,
        },
        "one_after_another": _one_after_another(one_by_one),
        "after_idle_tabs": {
            "idle_conversations": tabs,
            "tts_sessions_with_work": counts["sessions"],
            "tts_connections_open": counts["connections"],
            "http_status": http,
            "new_conversation": asdict(newcomer),
        },
        "at_once": _at_once(together),
    }


async def _http_routes(tts_url: str) -> tuple[dict[str, int], dict[str, int]]:
    """The TTS server's HTTP routes asked once each (their status), and its ``/ping`` counts."""
    async with httpx.AsyncClient(base_url=tts_url, timeout=60) as direct:
        speech = {"model": "kokoro", "input": "Hi.", "voice": "af_fake"}
        http = {
            "/v1/audio/speech": (await direct.post("/v1/audio/speech", json=speech)).status_code,
            "/invocations": (await direct.post("/invocations", json={"text": "Hi."})).status_code,
        }
        return http, (await direct.get("/ping")).json()


def _one_after_another(turns: list[Outcome]) -> dict[str, object]:
    """Conversations asked one after another: how many were spoken, and how soon."""
    return {
        "spoken": sum(o.spoken for o in turns),
        "of": len(turns),
        "first_audio_ms_median": _median([o.first_audio_ms for o in turns]),
        "turns": [asdict(o) for o in turns],
    }


def _at_once(turns: list[Outcome]) -> dict[str, object]:
    """Conversations asked at the same moment: spoken, or told ``tts_busy`` (and when)."""
    return {
        "spoken": sum(o.spoken for o in turns),
        "told_busy": sum(o.first_error == "tts_busy" for o in turns),
        "told_busy_then_heard": sum(
            o.first_error == "tts_busy" and o.first_audio_ms is not None for o in turns
        ),
        "of": len(turns),
        "told_busy_ms_max": max(
            (o.first_error_ms for o in turns if o.first_error_ms is not None), default=None
        ),
        "total_ms_max": max(o.total_ms for o in turns),
        "turns": [asdict(o) for o in turns],
    }


def report(figures: dict[str, object]) -> str:
    seq, idle, both = (figures[k] for k in ("one_after_another", "after_idle_tabs", "at_once"))
    assert isinstance(seq, dict) and isinstance(idle, dict) and isinstance(both, dict)
    rows = [
        "# Capacity: many conversations in front of a TTS server at `--max-sessions 2`",
        "",
        "Written by `python -m bench.load.capacity` (one run, this machine; fake engine: what is",
        "measured is who holds capacity). Before the fix, the same setup gave: first",
        "conversation spoken; the second to fifth, one after another, no audio and",
        "`tts_unavailable` after about 30 s each; 4 at once, each `tts_unavailable` after 30-32 s.",
        "",
        "| case | result |",
        "|---|---|",
        f"| {seq['of']} conversations, one after another | {seq['spoken']} of {seq['of']} spoken; "
        f"first audio median {seq['first_audio_ms_median']} ms |",
        f"| after {idle['idle_conversations']} idle conversations | TTS sessions with work: "
        f"{idle['tts_sessions_with_work']}, sockets open: {idle['tts_connections_open']}; "
        f"HTTP {', '.join(f'`{k}` {v}' for k, v in idle['http_status'].items())}; "
        "a new conversation spoken: "
        f"{idle['new_conversation']['spoken']} |",
        f"| {both['of']} conversations at once | {both['spoken']} spoken, {both['told_busy']} told "
        f"`tts_busy` (the latest {both['told_busy_ms_max'] or '-'} ms after its POST; "
        f"{both['told_busy_then_heard']} of them spoken later in the turn); all "
        f"ended within {both['total_ms_max']} ms |",
        "",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=6, help="conversations one after another")
    parser.add_argument("--at-once", type=int, default=12, help="conversations at the same time")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.tabs, args.at_once))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "capacity.json").write_text(json.dumps(figures, indent=2) + "\n")
    text = report(figures)
    (OUT / "capacity.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
