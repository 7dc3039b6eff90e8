"""Run mutmut over one tier of the contract modules (``make mutate``), each group in a copy.

    python -m devtools.mutation_run io [--jobs 2] [--group session]

A group is modules and the tests that guard them. mutmut reads one ``[tool.mutmut]`` table and
keeps its verdicts in ``mutants/``, so each group runs in its own copy of the checkout
(``build/mutate/<group>/``): the shared settings come from ``pyproject.toml``, the group adds
``only_mutate`` and ``pytest_add_cli_args_test_selection``. The contract tier is one group: the
pure modules against their unit tests. The io tier is a group per module against that module's
own tests, so that a mutant costs seconds rather than the whole server-backed suite (mutmut
runs every test that calls the mutated function; a surviving mutant runs them all). The edges
tier holds the newer modules whose tests need no server (the batch scheduler, the windows and
their pace, the ONNX engine's lanes, the origin guard, the audio encoders, the deploy plan and
IAM policies), the serving tier those behind the server's routes (admission, the OpenAI speech
routes, the agent's ``/ws`` leg, AG-UI at the doors and on ``/ws``, turn continuation, the
ONNX graph split for windows, a synthesis's timing and word timings).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "mutate"


@dataclass(frozen=True)
class Group:
    """Modules mutated together, and the tests run against them."""

    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]


TIERS: dict[str, tuple[Group, ...]] = {
    "contract": (
        Group(
            "contract",
            (
                "agent/segmenter/sentences.py",
                "agent/segmenter/text_filter.py",
                "agent/leg/messages.py",
                "agent/leg/voice_input.py",
                "tts_protocol/audio.py",
                "tts_protocol/messages.py",
                "tts_protocol/server.py",
                "tts_protocol/validation.py",
                "tts_protocol/voices.py",
            ),
            (
                "tests/tts_protocol",
                "tests/agent/segmenter",
                "tests/agent/leg/test_messages.py",
                "tests/agent/leg/test_voice_input.py",
            ),
        ),
    ),
    "io": (
        Group("client", ("tts_protocol/client.py",), ("tests/tts_protocol/test_client.py",)),
        Group("segment", ("tts_client/segment.py",), ("tests/tts_client/test_segment.py",)),
        Group("health", ("tts_server/health.py",), ("tests/tts_server/test_health.py",)),
        Group(
            "connection",
            ("tts_server/connection.py",),
            (  # the connection's own tests, and those of what it drives: marks, limits, metrics
                "tests/tts_server/test_connection.py",
                "tests/tts_server/test_limits.py",
                "tests/tts_server/test_marks.py",
                "tests/tts_server/test_metrics.py",
                "tests/tts_server/test_admission.py",
                "tests/tts_server/test_slow_client.py",
                "tests/tts_server/test_shutdown.py",
            ),
        ),
        Group(
            "session",
            (
                "tts_client/session.py",
                "tts_client/parts/book.py",
                "tts_client/parts/sender.py",
                "tts_client/parts/reader.py",
                "tts_client/parts/keeper.py",
                "tts_client/parts/deferred.py",
                "tts_client/parts/background.py",
            ),
            (
                "tests/tts_client/test_session.py",
                "tests/tts_client/test_session_busy.py",
                "tests/tts_client/test_resilience.py",
                "tests/tts_client/test_pool.py",
            ),
        ),
    ),
    # The newer modules with fast, in-process tests: each against the smallest test selection
    # that covers it (the scheduler and origins without sockets, deploy against stubbed clients).
    "edges": (
        Group(
            "scheduler",
            ("tts_server/engines/scheduler.py",),
            ("tests/tts_server/test_scheduler.py",),
        ),
        # The windows, their plan and their pace's sizes (``WindowPlan.paced``, tested against
        # a scripted clock in test_window_pace.py).
        Group(
            "windows",
            ("tts_server/engines/windows.py",),
            (
                "tests/tts_server/test_windows.py",
                "tests/tts_server/test_window_pace.py",
                "tests/tts_server/test_window_trace.py",
            ),
        ),
        # The windows' pace: the decode rate (a call's own cost, the streams, the misses) and the
        # listener's clock, against the scripted-clock tests (no model, no server).
        Group("pace", ("tts_server/engines/pace.py",), ("tests/tts_server/test_window_pace.py",)),
        # The ONNX engine's lanes: which session a run takes, and a run's interrupt.
        Group(
            "onnx_lanes",
            ("tts_server/engines/onnx/lanes.py",),
            ("tests/tts_server/test_onnx_lanes.py",),
        ),
        Group(
            "audio_encoding",
            ("tts_server/openai_api/audio_encoding.py",),
            ("tests/tts_server/test_audio_encoding.py",),
        ),
        Group("origins", ("agent/doors/origins.py",), ("tests/agent/doors/test_origins.py",)),
        Group("deploy", ("deploy/iam.py", "deploy/plan.py"), ("tests/deploy",)),
        Group(
            "normalize",
            tuple(
                f"tts_server/normalize/{name}.py"
                for name in (
                    "clock",
                    "context",
                    "normalizer",
                    "numbers",
                    "quantities",
                    "units",
                    "web",
                    "words",
                )
            ),
            (
                "tests/tts_server/test_normalize_units.py",  # first: see its docstring
                "tests/tts_server/test_normalize.py",
                "tests/tts_server/test_normalize_numbers.py",
                "tests/tts_server/test_normalize_clock.py",
                "tests/tts_server/test_normalize_context.py",
                "tests/tts_server/test_normalize_quantities.py",
                "tests/tts_server/test_normalize_web.py",
                "tests/tts_server/test_normalize_words.py",
            ),
        ),
        Group(
            "listening",
            (
                "agent/listening/endpointer.py",
                "agent/listening/listener.py",
                "agent/core/playback.py",
                "agent/listening/vad.py",
            ),
            (
                "tests/agent/listening/test_endpointer.py",
                "tests/agent/listening/test_listener.py",
                "tests/agent/core/test_playback.py",
                "tests/agent/listening/test_vad.py",
            ),
        ),
        Group(  # a real Whisper model under its tests: seconds a mutant, so a group of its own
            "whisper",
            ("agent/listening/whisper.py", "agent/listening/fitted_window.py"),
            (
                "tests/agent/listening/test_whisper.py",
                "tests/agent/listening/test_fitted_window.py",
            ),
        ),
        Group("memory", ("agent/core/memory.py",), ("tests/agent/core/test_memory.py",)),
        Group(
            "tools",  # your agent's factory and its tool calls (the turns speak on a fake engine)
            ("agent/core/factory.py", "agent/core/tool_calls.py"),
            (
                "tests/agent/core/test_tool_calls.py",
                "tests/agent/core/test_factory.py",
                "tests/agent/core/test_tool_turns.py",
            ),
        ),
    ),
    # The newer modules behind the server's routes, whose tests run real servers.
    "serving": (
        Group(
            "admission",
            ("tts_server/admission.py",),
            ("tests/tts_server/test_admission.py", "tests/tts_server/test_metrics.py"),
        ),
        # The request's checks against their tests without a server (milliseconds a mutant);
        # the routes and bodies against the servers' tests (10 to 30 s a mutant).
        Group(
            "openai_request",
            ("tts_server/openai_api/speech_request.py",),
            ("tests/tts_server/test_speech_request.py", "tests/tts_protocol/test_voices.py"),
        ),
        Group(
            "openai_routes",
            ("tts_server/openai_api/bodies.py", "tts_server/openai_api/routes.py"),
            (
                "tests/tts_server/test_openai_api.py",
                "tests/tts_server/test_marks.py",  # the captioned route
                "tests/tts_server/test_normalization_routes.py",  # normalization_options
            ),
        ),
        Group(
            "ws",
            (
                "agent/leg/socket.py",
                "agent/leg/dialogue.py",
                "agent/leg/turns.py",
                "agent/leg/voice_input.py",
                "agent/leg/reply_hold.py",
                "agent/leg/hooks.py",
                "agent/leg/sse.py",
            ),
            # In process, scripted turns, milliseconds a test; test_ws.py and the listening
            # and memory socket tests run real servers for minutes a pass, too long per mutant.
            (
                "tests/agent/leg/test_voice_input.py",
                "tests/agent/leg/test_reply_hold.py",
                "tests/agent/leg/test_voice_socket.py",
                "tests/agent/leg/test_turns.py",
                "tests/agent/leg/test_sse.py",
                "tests/agent/leg/test_hooks.py",
            ),
        ),
        # AG-UI (issue 51): a turn's events as AG-UI events, every /ws frame within AgentCore's
        # 32 KB, a RunAgentInput read once, each against its own tests without a server
        # (milliseconds a mutant); the /ws socket and the doors' POST against the dev server
        # (a thread, no speech) first, then both doors on the real TTS server (seconds a test).
        Group(
            "agui",
            ("agent/leg/agui.py", "agent/leg/agui_frames.py", "agent/leg/agui_input.py"),
            (
                "tests/agent/leg/test_agui.py",
                "tests/agent/leg/test_agui_frames.py",
                "tests/agent/leg/test_agui_input.py",
            ),
        ),
        Group(
            "agui_doors",
            ("agent/leg/agui_socket.py", "agent/doors/agui.py"),
            ("tests/agent/leg/test_agui_socket.py", "tests/agent/doors/test_agui.py"),
        ),
        # Turn continuation (issue 49): a reply spoken over before any of it was heard. The
        # in-process socket cuts and keeps; only real sockets with the real Whisper and TTS
        # server withdraw a reply and carry its prompt on (minutes a pass), so a group of its
        # own, which keeps those tests out of the ws group's.
        Group(
            "continuation",
            ("agent/leg/continuation.py",),
            ("tests/agent/leg/test_voice_socket.py", "tests/agent/leg/test_turn_continuation.py"),
        ),
        # The ONNX graph cut for windowed decoding, against its tests on a tiny Kokoro-shaped
        # graph (milliseconds a test); test_onnx_split.py's on the packaged model take seconds
        # each, about 9 hours of CPU over the whole file, so they are not in the group.
        Group(
            "onnx_split",
            ("tts_server/engines/onnx/split.py", "tts_server/engines/onnx/norms.py"),
            ("tests/tts_server/test_onnx_split_graph.py",),
        ),
        # First audio and the other times of a synthesis, and the words timed in its audio.
        Group(
            "timing",
            ("tts_server/timing.py", "tts_server/engines/timings.py"),
            ("tests/tts_server/test_timing.py", "tests/tts_server/test_timings.py"),
        ),
    ),
}


def modules_of(tier: str) -> tuple[str, ...]:
    """Every module ``tier`` mutates."""
    return tuple(module for group in TIERS[tier] for module in group.modules)


def _toml_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{value}"' for value in values) + "]"


def prepare(group: Group, work: Path = WORK) -> Path:
    """A fresh copy of the checkout for ``group``, its pyproject naming what to mutate."""
    target = work / group.name
    shutil.rmtree(target, ignore_errors=True)
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(ROOT / ".venv")
    pyproject = (ROOT / "pyproject.toml").read_text()
    if not pyproject.rstrip().split("\n[")[-1].startswith("tool.mutmut]"):
        raise SystemExit("pyproject.toml: [tool.mutmut] must be its last table")
    (target / "pyproject.toml").write_text(
        f"{pyproject.rstrip()}\n"
        f"only_mutate = {_toml_list(group.modules)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(group.tests)}\n"
    )
    return target


def run(group: Group, jobs: int, work: Path = WORK) -> int:
    """mutmut over ``group`` in its copy; its verdicts stay in ``<copy>/mutants``."""
    target = prepare(group, work)
    mutmut = str(ROOT / ".venv" / "bin" / "mutmut")
    print(f"--- {group.name}: {', '.join(group.modules)}", flush=True)
    return subprocess.run([mutmut, "run", "--max-children", str(jobs)], cwd=target).returncode


def main(argv: list[str] | None = None) -> None:
    """Run every group of a tier, one after another."""
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation_run")
    parser.add_argument("tier", choices=sorted(TIERS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--group", help="only this group of the tier")
    args = parser.parse_args(argv)
    groups = [g for g in TIERS[args.tier] if args.group in (None, g.name)]
    if not groups:
        raise SystemExit(f"no group {args.group!r} in {args.tier}")
    failed = [g.name for g in groups if run(g, args.jobs) != 0]
    if failed:
        sys.exit(f"mutmut failed for {', '.join(failed)}")


if __name__ == "__main__":
    main()
