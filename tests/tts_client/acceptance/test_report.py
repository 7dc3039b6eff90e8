"""The acceptance report: details whole (wrapped between words, never cut), counts by status."""

from __future__ import annotations

import json

from tests.tts_client.acceptance.test_under_test import open_tested
from tts_client.acceptance.checks import FAIL, NA, PASS, Acceptance, Check, report
from tts_client.acceptance.targets import WebSocketTarget
from tts_protocol import Error, ErrorCode, encode

LONG = (
    "unknown voice 'af_nobody'; available: af_alloy, af_aoede, af_bella, af_heart, af_jessica, "
    "af_kore, af_nicole, af_nova, af_river, af_sarah, af_sky, am_adam, am_echo, am_eric"
)


def test_a_long_detail_wraps_between_words_and_keeps_every_word() -> None:
    lines = Check("unknown voice → unknown_voice", PASS, LONG).line().splitlines()
    assert len(lines) > 1 and all(len(line) <= 100 for line in lines)
    assert " ".join(lines).split()[5:] == LONG.split()  # after "PASS" and the name
    assert all(line.startswith(" " * 47) for line in lines[1:])  # under the detail column


def test_a_short_detail_is_one_line() -> None:
    assert Check("ready frame", PASS, "protocol 1").line() == f"PASS  {'ready frame':40} protocol 1"


def test_the_summary_counts_passed_n_a_and_failed_apart() -> None:
    checks = [Check("a", PASS, ""), Check("b", NA, ""), Check("c", PASS, ""), Check("d", FAIL, "")]
    text, status = report(checks, "acceptance")
    assert text.splitlines()[-1] == "acceptance: FAILED (2 passed, 1 n/a, 1 failed)"
    assert status == 1
    assert report(checks[:3], "acceptance")[0].endswith("(2 passed, 1 n/a, 0 failed)")


async def test_a_typed_error_is_reported_with_its_whole_message() -> None:
    error = encode(Error(id=None, code=ErrorCode.INVALID_JSON, message=LONG))
    tested, _ = open_tested(error)
    acceptance = Acceptance(WebSocketTarget("ws://127.0.0.1:1/ws"))
    acceptance._tested = tested  # the connection under test, already past 'ready'
    detail = await acceptance._rejected(json.dumps([1]).encode(), ErrorCode.INVALID_JSON)
    assert detail == f"error invalid_json: {LONG}"
