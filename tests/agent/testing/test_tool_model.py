"""The scripted tool-calling model alone (its turns: ``tests/agent/core/test_tool_turns.py``)."""

from __future__ import annotations

import pytest

from agent.testing.tool_model import PLAIN, ToolScript, prompt


@pytest.mark.parametrize(("rate", "delay"), [(0.0, 0.0), (-1.0, 0.0), (10.0, -0.1)])
def test_a_rate_or_delay_out_of_range_is_refused(rate: float, delay: float) -> None:
    with pytest.raises(ValueError, match="tokens_per_second > 0"):
        ToolScript(tokens_per_second=rate, first_token_delay_s=delay)


def test_its_config_is_its_timing() -> None:
    model = ToolScript(tokens_per_second=40.0, first_token_delay_s=0.3)
    assert model.get_config() == {"tokens_per_second": 40.0, "first_token_delay_s": 0.3}


async def test_a_prompt_naming_a_tool_streams_a_tool_use_and_any_other_plain_text() -> None:
    model = ToolScript(tokens_per_second=1000.0)
    asked = prompt("calculate", expression="1 + 1")
    events = [e async for e in model.stream([{"role": "user", "content": [{"text": asked}]}])]
    starts = [e["contentBlockStart"]["start"] for e in events if "contentBlockStart" in e]
    [use] = [start["toolUse"] for start in starts if "toolUse" in start]
    assert use == {"toolUseId": "tooluse_1", "name": "calculate"}
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    plain = [e async for e in model.stream([{"role": "user", "content": [{"text": "Hi"}]}])]
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in plain if "contentBlockDelta" in e
    )
    assert text == PLAIN and model.calls[-1][-1]["content"] == [{"text": "Hi"}]
