"""The voice-to-voice figures: each configuration's stages and pause corpus, the goals."""

from __future__ import annotations

import statistics
from typing import Any

from bench.latency.endpointing import DEFAULT
from bench.latency.stats import percentile, spread

STAGES = ("eot_wait_ms", "asr_ms_seen", "llm_first_token_ms", "first_segment_ms", "synthesis_ms")
THREE_S = (2750, 3250)  # the clips (pre-roll, speech, tail) the 3 s recognition goal reads
GOALS = {
    "asr_rtf_3s": 0.15,  # recognition of a 3 s utterance within 0.15 of its duration
    "vad_ms_per_window": 1.0,
    "overhead_ms": 50.0,  # voice to voice over the sum of its floors
    "barge_in_stop_ms": 300.0,
    "eot_complete_ms": 250.0,  # end of turn on the complete pause-corpus sentences (median)
    "transcript_ms": 500.0,  # end of speech to the transcript (median)
    "voice_to_voice_ms": 1500.0,  # once within-sentence streaming is in main too (issue 35)
    "speculative_heard": 0,  # pause-corpus trials with reply frames before their end of turn
}


def stages(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and p90 of voice to voice, its stages and floors, over one configuration."""
    keys = (*STAGES, "voice_to_voice_ms", "transcript_ms", "floor_ms", "overhead_ms")
    figures = {key: spread([row[key] for row in rows]) for key in (*keys, "asr_ms")}
    figures |= {key: spread([row[key] for row in rows], 3) for key in ("asr_rtf", "wer")}
    return figures | {"cut": sum(row["eot_wait_ms"] < 0 for row in rows)}  # ended in a gap


def pauses(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration on the pause corpus: false cut-offs, end of turn on complete ones, and
    the trials where any frame of a reply came before the end of turn (a speculative one heard)."""
    cut = sum(row["cut_in_pause"] for row in rows if row["paused"])
    paused = sum(row["paused"] for row in rows)
    whole = [row["eot_ms"] for row in rows if not row["paused"]]
    eots = [eot for eot in whole if eot >= 0]  # the others ended before their speech did
    trials = paused + len(whole)
    return {
        "paused": paused,
        "false_cutoffs": cut,
        "whole_cut": len(whole) - len(eots),
        # every trial's turn that ended before its speech did: in a pause, or in a short gap
        # of a whole sentence ("What | time does...")
        "false_cutoff_rate": round((cut + len(whole) - len(eots)) / trials, 3) if trials else None,
        "complete": len(whole),
        "eot_mean_ms": round(statistics.fmean(eots), 1) if eots else None,
        "eot_ms": spread(eots),
        "replies_before_end": sum(row["reply_frames_before_end"] > 0 for row in rows),
    }


def cost(values: list[float]) -> dict[str, Any]:
    """How many decisions, their median and p99."""
    return {
        "decisions": len(values),
        "median": percentile(values, 50),
        "p99": percentile(values, 99),
    }


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Each configuration's figures; the defaults' at the top, with the goals."""
    ablation = {
        name: {
            **stages(c["utterances"]),
            "pauses": pauses(c["pauses"]),
            "withdrawn": c.get("withdrawn"),
        }
        for name, c in results["configs"].items()
    }
    out: dict[str, Any] = dict(ablation[DEFAULT])
    for key in ("onset_to_paused_ms", "onset_to_cancelled_ms", "onset_to_last_reply_frame_ms"):
        out[key] = spread([b[key] for b in results["barge_ins"]])
    out["ablation"] = ablation
    live = [
        row["turn_ms"]
        for c in results["configs"].values()
        for row in (*c["utterances"], *c["pauses"])
        if row["turn_ms"] is not None
    ]
    out["turn_model_cost_ms"] = {
        "alone": cost(results["replayed"]["turn_model_ms"]),
        "live": cost(live),
    }
    low, high = THREE_S
    three = [a for a in results["asr_alone"] if low <= a["audio_ms"] <= high] or results[
        "asr_alone"
    ]
    rtf_3s = statistics.median(a["asr_ms"] / a["audio_ms"] for a in three) if three else None
    measured = {
        "asr_rtf_3s": None if rtf_3s is None else round(rtf_3s, 3),
        "vad_ms_per_window": results["vad"]["wall_ms"]["median"],
        "overhead_ms": out["overhead_ms"]["median"],
        "barge_in_stop_ms": out["onset_to_paused_ms"]["median"],
        "eot_complete_ms": out["pauses"]["eot_ms"]["median"],
        "transcript_ms": out["transcript_ms"]["median"],
        "voice_to_voice_ms": out["voice_to_voice_ms"]["median"],
        "false_cutoff_rate": out["pauses"]["false_cutoff_rate"],
        "speculative_heard": out["pauses"]["replies_before_end"],
    }
    goals = GOALS | {"false_cutoff_rate": ablation["silence"]["pauses"]["false_cutoff_rate"]}
    out["goals"] = {
        name: {
            "goal": goal,
            "measured": measured[name],
            "met": None not in (measured[name], goal) and measured[name] <= goal,
        }
        for name, goal in goals.items()
    }
    return out
