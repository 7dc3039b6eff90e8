"""The phoneme table builder: the load benchmark's sentences and the warm-up, by the real G2P."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.load.phoneme_table import DEFAULT_OUT, g2p_cost_ms, main, table
from bench.load.tts_load_bench import SENTENCES
from tts_server.engines import Engine
from tts_server.health import WARMUP_TEXT


def test_writes_every_sentence_and_the_warm_up_and_reports_the_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: Engine
) -> None:
    out = tmp_path / "phonemes.json"
    main(["--out", str(out), "--runs", "1"])
    written = json.loads(out.read_text(encoding="utf-8"))
    assert list(written) == [*SENTENCES, WARMUP_TEXT]
    assert written[SENTENCES[0]] == engine._g2p(SENTENCES[0])
    printed = capsys.readouterr().out
    assert "G2P per sentence" in printed and SENTENCES[-1] in printed


def test_the_committed_table_matches_the_benchmark_sentences(engine: Engine) -> None:
    committed = json.loads(DEFAULT_OUT.read_text(encoding="utf-8"))
    assert committed == table(engine._g2p, [*SENTENCES, WARMUP_TEXT])


def test_cost_is_one_figure_per_text(engine: Engine) -> None:
    costs = g2p_cost_ms(engine._g2p, ["Hi.", "Good morning."], runs=2)
    assert len(costs) == 2 and all(cost > 0 for cost in costs)
