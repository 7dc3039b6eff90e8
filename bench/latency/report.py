"""The agent-latency report: ``agent_latency.json``, its Markdown tables and its plot."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.latency.stats import METRICS, playback

STEM = "agent_latency"
PER_RUN = (
    "ttft_ms",
    "first_segment_ms",
    "lone_ttfa_ms",
    "floor_ms",
    "ttfa_ms",
    "overhead_ms",
    "total_ms",
    "audio_ms",
)
DEFINITIONS = (
    "## Definitions",
    "",
    "- **first text / first audio / total**: from sending the request to the first "
    "`text.delta`, the first `audio.delta` and `turn.end`, as the client receives them.",
    "- **floor**: the arrival of the first `segment` event (its text is complete) plus the time "
    "to first audio of that same text spoken alone on a fresh connection to the same TTS server, "
    "measured right after the turn. In batch mode the first segment is the whole reply. "
    "**overhead** = first audio - floor: what the pipeline adds (the agent's queues, base64, "
    "SSE, the second hop) over the unavoidable LLM and synthesis time.",
    "- **underruns**: a simulated player starts at the first audio and plays each chunk as "
    "soon as it has it; every time a chunk arrives after the previous one finished playing, "
    "playback stalls (count, and total stalled ms).",
    "- **levels**: `transport` is the TTS client and server alone; `inprocess` runs "
    "`Turn.run` in the benchmark's process; `http` is the dev server (FastAPI, sse-starlette) "
    "on loopback, read with httpx; `remote` is `--agent-url` or `--agent-arn`.",
    "- p90 and p95 interpolate between the closest ranks; with 5 runs p90 lies between the "
    "two slowest.",
)


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{round(value, digits) + 0.0:.{digits}f}"  # never "-0"


def _cell(summary: dict[str, dict[str, float | None]], metric: str, digits: int = 0) -> str:
    return f"{_fmt(summary[metric]['median'], digits)} / {_fmt(summary[metric]['p90'], digits)}"


def headline(report: dict[str, Any]) -> list[str]:
    """The sentences that matter, from the first case of the HTTP (or remote) level."""
    level = next(name for name in ("http", "remote", "inprocess") if name in report["levels"])
    case = report["levels"][level][0]
    stream, batch = case["summary"]["stream"], case["summary"]["batch"]
    return [
        f"- **{level}, {case['case']}**: first audio after **{_fmt(stream['ttfa_ms']['median'])}"
        f" ms** streaming vs {_fmt(batch['ttfa_ms']['median'])} ms batch: "
        f"**{_fmt(case['ttfa_batch_over_stream'], 2)}x sooner**; completion "
        f"{_fmt(stream['total_ms']['median'])} vs {_fmt(batch['total_ms']['median'])} ms "
        f"({_fmt(case['total_batch_over_stream'], 2)}x).",
        f"- Pipeline overhead over the floor (stream): median "
        f"**{_fmt(stream['overhead_ms']['median'])} ms**, p90 {_fmt(stream['overhead_ms']['p90'])}"
        f" ms, on a floor of {_fmt(stream['floor_ms']['median'])} ms.",
        f"- Playback underruns (stream, median per turn): {_fmt(stream['underruns']['median'])},"
        f" {_fmt(stream['underrun_ms']['median'])} ms in all.",
        *_legs_headline(report),
    ]


def _legs_headline(report: dict[str, Any]) -> list[str]:
    if "legs" not in report:
        return []
    sse, ws = report["legs"]["summary"]["sse"], report["legs"]["summary"]["websocket"]
    return [
        f"- Browser leg, {report['legs']['sentences']} sentences: first audio "
        f"{_fmt(ws['ttfa_ms']['median'])} ms over WebSocket vs {_fmt(sse['ttfa_ms']['median'])}"
        f" ms over SSE; **{_fmt(ws['bytes_per_audio_s']['median'])} vs "
        f"{_fmt(sse['bytes_per_audio_s']['median'])} bytes per second of audio**."
    ]


def _legs_table(legs: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## Browser leg: SSE vs. WebSocket ({legs['sentences']} sentences, stream, median / p90)",
        "",
        "The same turn from the same dev server: `POST /invocations` read as SSE (base64 audio "
        "in JSON), or a `prompt` on `/ws` (audio as binary frames, a 4-byte header each), one "
        "kept connection per leg, alternating ABBA. Bytes: the SSE body, or the WebSocket "
        "frames' payloads (HTTP and WebSocket framing not counted).",
        "",
        "| leg | first audio | total | audio | bytes per turn | bytes per audio s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for leg, s in legs["summary"].items():
        cells = [_cell(s, m) for m in ("ttfa_ms", "total_ms", "audio_ms")]
        cells += [_cell(s, m) for m in ("wire_bytes", "bytes_per_audio_s")]
        lines.append(f"| {leg} | {' | '.join(cells)} |")
    return lines


def _introduction(report: dict[str, Any]) -> list[str]:
    setup, m = report["setup"], report["machine"]
    runs = ", ".join(
        f"{case['runs'][-1]['run']} ({level}, {case['case']})"
        for level, cases in report["levels"].items()
        if level != "transport"
        for case in cases
    )
    return [
        "# Agent latency: first audio vs. completion, stream vs. batch",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}; Python {m['python']}; "
        f"load average at start {m['load_average'][0]}. {report['date']}. Written by "
        f"`voice-agent bench{' --quick' if setup['quick'] else ''}` "
        "(`bench/latency/agent_latency.py`); "
        f"every raw figure is in `{STEM}.json`, plotted in `{STEM}.png`.",
        "",
        f"Setup: prompt {setup['prompt']!r}; the demo model (a fixed reply, "
        f"{setup['tokens_per_second']:g} tokens/s, first token after "
        f"{setup['first_token_delay_s'] * 1000:g} ms); TTS: {setup['tts']}; agent: "
        f"{setup['agent']}. Runs per mode: {runs}, stream and batch alternating (ABBA), after "
        f"{setup['warmup']} warm-up turn per mode with a one-sentence reply. Times are ms from "
        "sending the request to the event's arrival at the client.",
        "",
        "## Headline",
        "",
        *headline(report),
    ]


def _agent_levels(report: dict[str, Any]) -> list[str]:
    return [name for name in report["levels"] if name != "transport"]


def _stream_vs_batch(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Stream vs. batch (median / p90)",
        "",
        "| level | reply | mode | first text | first audio | total | audio | segments | floor | "
        "overhead | underruns | underrun ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    agent_levels = _agent_levels(report)
    for level in agent_levels:
        for case in report["levels"][level]:
            for mode, s in case["summary"].items():
                cells = [_cell(s, metric) for metric in METRICS]
                lines.append(f"| {level} | {case['case']} | {mode} | {' | '.join(cells)} |")
    lines += [
        "",
        "| level | reply | first audio: batch / stream | total: batch / stream |",
        "|---|---|---:|---:|",
    ]
    for level in agent_levels:
        for case in report["levels"][level]:
            lines.append(
                f"| {level} | {case['case']} | {_fmt(case['ttfa_batch_over_stream'], 2)}x | "
                f"{_fmt(case['total_batch_over_stream'], 2)}x |"
            )
    return lines


def _transport(t: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## TTS transport alone (4 sentences on one connection, median / p90)",
        "",
        "`bench/latency/tts_transport_bench.py`'s modes on the same server: "
        f"{len(t['sentences'])} "
        "short sentences, pipelined on one warm session, one at a time on it, or a new "
        "connection per sentence.",
        "",
        "| mode | first audio | total |",
        "|---|---:|---:|",
    ]
    for mode, s in t["summary"].items():
        lines.append(f"| {mode} | {_cell(s, 'first_audio_ms')} | {_cell(s, 'total_ms')} |")
    return lines


def _concurrency(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## Concurrent conversations ({report['setup']['concurrency_sentences']} sentences, "
        "stream)",
        "",
        "Each level starts that many turns at once, one per conversation (its own session "
        "header; each turn borrows a TTS connection of its own from the agent's pool). The TTS "
        "server synthesizes on one engine thread. Underruns are summed over the turns.",
        "",
        "| turns | first audio p50 | p95 | total p50 | wall (s) | turns/s | audio s per s | "
        "underruns | underrun ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in report["concurrency"]:
        lines.append(
            f"| {c['turns']} | {_fmt(c['ttfa_p50'])} | {_fmt(c['ttfa_p95'])} | "
            f"{_fmt(c['total_p50'])} | {c['wall_s']} | {c['turns_per_s']} | "
            f"{c['audio_s_per_s']} | {c['underruns']} | {_fmt(c['underrun_ms'])} |"
        )
    return lines


def _per_run(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Per run",
        "",
        "| level | reply | run | mode | first text | first segment | lone first audio | floor | "
        "first audio | overhead | total | audio | underruns |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in _agent_levels(report):
        for case in report["levels"][level]:
            for r in case["runs"]:
                row = " | ".join(_fmt(r[k]) for k in PER_RUN)
                lines.append(
                    f"| {level} | {case['case']} | {r['run']} | {r['mode']} | {row} | "
                    f"{r['underruns']} |"
                )
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The Markdown report."""
    lines = [*_introduction(report), *_stream_vs_batch(report)]
    if "legs" in report:
        lines += _legs_table(report["legs"])
    if "transport" in report["levels"]:
        lines += _transport(report["levels"]["transport"])
    lines += [*_concurrency(report), *_per_run(report), "", *DEFINITIONS]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    """Per-run first audio and total, stream vs. batch, and the timeline of one turn each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    level = next(name for name in ("http", "remote", "inprocess") if name in report["levels"])
    cases = report["levels"][level]
    colors = {"stream": "tab:blue", "batch": "tab:orange"}
    fig = plt.figure(figsize=(12, 9), layout="constrained")
    grid = fig.add_gridspec(2, len(cases), height_ratios=(1, 1.2))
    for column, case in enumerate(cases):
        ax = fig.add_subplot(grid[0, column])
        for mode, color in colors.items():
            runs = [r for r in case["runs"] if r["mode"] == mode]
            x = [r["run"] for r in runs]
            ax.plot(x, [r["ttfa_ms"] for r in runs], "o-", color=color, label=f"{mode} first audio")
            ax.plot(x, [r["total_ms"] for r in runs], "s--", color=color, label=f"{mode} total")
        ax.set(title=f"{level}, {case['case']}: per run", xlabel="run", ylabel="ms")
        ax.set_ylim(0, 1.4 * max(r["total_ms"] for r in case["runs"]))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize="small", loc="upper left", ncol=2)
    ax = fig.add_subplot(grid[1, :])
    labels: list[str] = []
    for offset, mode in enumerate(("batch", "stream")):
        line = cases[0]["timeline"][mode]
        base = offset * 5
        ax.plot(line["text_ms"], [base + 3] * len(line["text_ms"]), "|", color="gray", ms=10)
        for t, seq in line["segments"]:
            ax.plot(t, base + 2, "v", color=colors[mode], ms=8)
            ax.annotate(str(seq), (t, base + 2.25), ha="center", fontsize="small")
        arrivals = [t for t, _ in line["audio"]]
        ax.plot(arrivals, [base + 1] * len(arrivals), "|", color=colors[mode], ms=10)
        ax.broken_barh(playback(line["audio"]), (base - 0.3, 0.6), color=colors[mode])
        labels += [f"{mode}: playback", f"{mode}: audio arrives", f"{mode}: segment sent"]
        labels += [f"{mode}: text delta", ""]
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-1, len(labels) - 1)
    ax.set(title=f"One turn ({level}, {cases[0]['case']}, median first audio)", xlabel="ms")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``agent_latency.{json,md,png}`` in ``out``."""
    return write_files(report, out, STEM, markdown, plot)


def write_files(
    report: dict[str, Any],
    out: Path,
    stem: str,
    to_markdown: Callable[[dict[str, Any]], str],
    to_plot: Callable[[dict[str, Any], Path], None],
) -> list[Path]:
    """``<stem>.{json,md,png}`` in ``out``: the report, its note and its plot."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.{ext}" for ext in ("json", "md", "png")]
    paths[0].write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    paths[1].write_text(to_markdown(report))
    to_plot(report, paths[2])
    return paths
