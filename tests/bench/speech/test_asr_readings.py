"""The readings benchmark's own parts: the page-like cuts, the sweep of the rules, the looping
readings set back, its report."""

from __future__ import annotations

import itertools
from typing import Any

from agent.config import ListeningConfig
from bench.speech.asr_readings import (
    LEADS_MS,
    RULES,
    TAILS_MS,
    looping,
    looping_lines,
    markdown,
    sweep,
    utterances,
)
from bench.speech.page_hearing import CORPUS, spoken


def test_each_clip_is_cut_by_the_vad_after_each_lead_and_trimmed_to_each_tail() -> None:
    speech = spoken(CORPUS[1])
    cut = utterances(speech, ListeningConfig())
    assert [(lead, tail) for lead, tail, _ in cut] == [(a, b) for a in LEADS_MS for b in TAILS_MS]
    by_lead = {lead: [len(pcm) for l2, _, pcm in cut if l2 == lead] for lead in LEADS_MS}
    for sizes in by_lead.values():  # the same cut, 96, 160 and 256 ms after the speech
        assert [b - a for a, b in itertools.pairwise(sizes)] == [64 * 32, 96 * 32]
    # Around the speech: no more than the pre-roll's windows and the tail besides it.
    assert all(len(speech) < len(pcm) < len(speech) + (224 + 256 + 32) * 32 for *_, pcm in cut)


def row(text: str, phases: list[list[Any] | None]) -> dict[str, Any]:
    return {"text": text, "phases": phases, "rules": {"four": {"text": ""}}}


def test_the_sweep_reads_again_where_the_first_readings_disagree_or_are_under_the_bar() -> None:
    rows = [
        row("a b", [[-0.1, "a b"], [-0.9, "x"], [-0.1, "a b"], [-0.9, "y"]]),  # agree, sure
        row("a b", [[-0.5, "a c"], [-0.05, "a b"], [-0.6, "a d"], [-0.9, "z"]]),  # disagree
    ]
    swept = {(s["first"], s["sure"]): s for s in sweep(rows)}
    assert swept[1, 0.0] == {"first": 1, "sure": 0.0, "wer_mean": 0.25, "read_more": 0}
    # At 0.86 the first row's reading (0.90) is sure, the second's (0.61) is not.
    assert swept[1, 0.86] == {"first": 1, "sure": 0.86, "wer_mean": 0.0, "read_more": 1}
    assert swept[2, 0.0] == {"first": 2, "sure": 0.0, "wer_mean": 0.0, "read_more": 1}


def test_the_report_names_every_rule_and_clip() -> None:
    rules = {
        name: {
            **RULES[name],
            "wer_mean": 0.1,
            "read_more": 1,
            "readings_mean": 2.0,
            "median_ms": 1.0,
            "mean_ms": 1.0,
            "p90_ms": 1.0,
            "whole_window": 0,
        }
        for name in RULES
    }
    heard = {name: {"wer": 0.0, "readings": 4} for name in RULES}
    result = {
        "when": "now",
        "load_average": {"start": [1.0], "end": [2.0]},
        "utterances": 1,
        "clips": 1,
        "leads_ms": LEADS_MS,
        "tails_ms": TAILS_MS,
        "rules": rules,
        "sweep": [],
        "looping": {"readings": 0, "looping": 0, "rules": {}},
        "rows": [{"clip": "a clip", "rules": heard}],
    }
    text = markdown(result)
    assert all(f"| {name} |" in text for name in RULES)
    assert "| a clip | 0.000 | 0.000 | 0.000 (1) | 0.000 (1) |" in text


LOOP = "a b c d a b c d a b"  # the decoder said "a b c d" again and broke off


def test_a_looping_reading_set_back_is_counted_before_and_after() -> None:
    rows = [
        {**row("a b c d", [[-0.1, LOOP], [-0.5, "a b c x"], [-0.2, "a b c d"], None]), "clip": "c"},
        {**row("e f", [[-0.1, "e f"], [-0.2, "e f"], [-0.3, "e f"], [-0.4, "e f"]]), "clip": "d"},
    ]
    found = looping(rows)
    assert (found["readings"], found["looping"]) == (7, 1)
    # Four at once and two first (they disagree: all four read) kept the loop (WER 1.5).
    for name in ("four", "agree_2"):
        assert found["rules"][name] == {
            "wer_before": 0.75,
            "wer_after": 0.0,
            "changed": 1,
            "clips": {"c": [1.5, 0.0]},
        }
    text = "\n".join(looping_lines(found))
    assert "| four | 0.7500 | 0.0000 | 1 |" in text
    assert "| c | 1.500 → 0.000 | 1.500 → 0.000 | 1.500 → 0.000 |" in text
