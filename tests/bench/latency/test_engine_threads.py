"""The engine-threads benchmark's parts: its configurations and its report."""

from __future__ import annotations

from bench.latency.engine_threads import configurations, markdown, ratios
from tts_server.engines.windows import WindowPlan


def test_every_thread_count_spins_and_not_whole_and_in_windows() -> None:
    configs = configurations()
    assert len(configs) == 8
    on = configs["2 threads, spinning on, windows"]
    assert on["threads"] == 2 and on["spinning"] is True
    assert isinstance(on["windows"], WindowPlan)
    assert configs["1 thread, spinning off, whole"] == {
        "threads": 1,
        "spinning": False,
        "windows": None,
    }


def test_the_report_gives_spinning_off_over_on_per_condition() -> None:
    figures = {
        name: {"first_audio_ms": 100.0, "total_ms": 200.0}
        for name in ("1 thread, spinning on, whole", "1 thread, spinning off, whole")
    }
    shared = {
        **figures,
        "1 thread, spinning off, whole": {"first_audio_ms": 50.0, "total_ms": 100.0},
    }
    result = {"idle": figures, "shared": shared, "runs": 3, "machine": {"cpus": 2, "platform": "x"}}
    (line,) = ratios(result)
    assert line == (
        "1 thread, whole: idle first audio 1.00, idle total 1.00, "
        "shared first audio 0.50, shared total 0.50"
    )
    result["spinning_off_over_on"] = [line]
    page = markdown(result)
    assert "| 1 thread, spinning off, whole | 100.0 | 200.0 | 50.0 | 100.0 |" in page
    assert f"- {line}" in page
