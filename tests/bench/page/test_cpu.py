"""The page's CPU benchmark reads ``/proc`` right: a process's own time, and what is below it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.page.cpu import (
    SPOKEN_PHASES,
    cores,
    descendants,
    is_browser,
    stat,
    summarize,
    table,
)


def test_a_process_cpu_time_grows_with_its_work_and_its_parent_is_known() -> None:
    parent, before = stat(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    _, after = stat(os.getpid())
    assert parent == os.getppid()
    assert 0.2 <= after - before < 5


def test_descendants_are_the_process_and_every_child_below_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        below = descendants(os.getpid())
        assert below[0] == os.getpid() and child.pid in below
        assert descendants(child.pid) == [child.pid]
    finally:
        child.kill()
        child.wait()


def test_chromium_is_told_from_its_helpers() -> None:
    assert is_browser(["/usr/lib/chromium/chromium", "--headless"])
    assert not is_browser(["/usr/lib/chromium/chromium", "--type=renderer"])
    assert not is_browser(["/usr/bin/python3", "chromium"])
    assert not is_browser(["/usr/lib/chromium/chrome_crashpad_handler", "--database=/tmp"])
    assert not is_browser([])


def test_cores_and_medians() -> None:
    assert cores({"a": 3.0, "b": 1.0}, {"a": 1.0}, 2.0) == {"a": 1.0, "b": 0.5}
    runs = [
        {"idle": {"a": v}, "first": {"a": 2 * v}, "reply": {"a": 3 * v, "b": v}}
        for v in (0.1, 0.3, 0.2)
    ]
    assert summarize(runs) == {
        "idle": {"a": 0.2, "b": 0.0},
        "first": {"a": 0.4, "b": 0.0},
        "reply": {"a": 0.6, "b": 0.2},
    }


def test_a_spoken_replys_phases_start_with_the_question_heard_and_table_with_a_total() -> None:
    runs = [
        {"heard": {"agent": v}, "first": {"tts server": 2 * v}, "reply": {"agent": v / 2}}
        for v in (0.2, 0.4)
    ]
    medians = summarize(runs, SPOKEN_PHASES)
    assert list(medians) == ["heard", "first", "reply"]
    assert medians["heard"] == {"agent": 0.3, "tts server": 0.0}
    assert table(medians) == [
        "| process | the question heard | first 1.5 s | whole reply |",
        "|---|---:|---:|---:|",
        "| agent | 0.300 | 0.000 | 0.150 |",
        "| tts server | 0.000 | 0.600 | 0.000 |",
        "| **all** | 0.300 | 0.600 | 0.150 |",
    ]
