"""The phoneme table of the load benchmark's sentences, made with the real G2P, and its cost.

    python -m bench.load.phoneme_table --out bench/load/phonemes.json

Writes ``{text: phonemes}`` for ``bench.load.tts_load_bench.SENTENCES`` and the server's warm-up
text (so that a server started with ``--phoneme-table`` and no spaCy still becomes healthy),
and prints what the real G2P (misaki + spaCy) costs per sentence on this machine: the server
on the GPU machine skips that cost, so it is reported beside the GPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.load.tts_load_bench import SENTENCES
from tts_server.engines.g2p import EnglishG2P
from tts_server.health import WARMUP_TEXT

DEFAULT_OUT = Path(__file__).resolve().parent / "phonemes.json"


def table(g2p: Callable[[str], str], texts: Sequence[str]) -> dict[str, str]:
    """Each text's phonemes."""
    return {text: g2p(text) for text in texts}


def g2p_cost_ms(g2p: Callable[[str], str], texts: Sequence[str], runs: int) -> list[float]:
    """Milliseconds per text, each the median of ``runs`` conversions (after one warm-up)."""
    costs = []
    for text in texts:
        g2p(text)
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            g2p(text)
            samples.append((time.perf_counter() - started) * 1000)
        costs.append(statistics.median(samples))
    return costs


def main(argv: Sequence[str] | None = None) -> None:
    """Write the table; print the G2P cost per sentence."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    g2p = EnglishG2P()
    texts = [*SENTENCES, WARMUP_TEXT]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table(g2p, texts), indent=2, ensure_ascii=False) + "\n")
    costs = g2p_cost_ms(g2p, SENTENCES, args.runs)
    load = os.getloadavg()[0]
    print(f"wrote {len(texts)} entries to {args.out}")
    print(f"G2P per sentence (median of {args.runs}; load average {load:.1f}):")
    for text, cost in zip(SENTENCES, costs, strict=True):
        print(f"  {cost:6.1f} ms  {text}")
    print(f"  median {statistics.median(costs):.1f} ms")


if __name__ == "__main__":
    main()
