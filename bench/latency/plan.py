"""What the agent-latency benchmark runs: cases, runs, the demo model's pace, concurrency."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.core.llm import DemoConfig


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """What to run; the defaults take about seven minutes on a 2-core CPU box."""

    http_cases: tuple[tuple[int, int], ...] = ((4, 5), (10, 3))  # (sentences, runs per mode)
    inprocess_cases: tuple[tuple[int, int], ...] = ((4, 5),)
    warmup: int = 1  # per mode and case, with a one-sentence reply: opens and warms the session
    transport_runs: int = 3
    tokens_per_second: float = 40.0
    first_token_delay_s: float = 0.3
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    concurrency_sentences: int = 4
    leg_runs: int = 5  # per leg: SSE vs. WebSocket, stream mode
    leg_sentences: int = 4

    def demo(self, sentences: int) -> DemoConfig:
        """The demo model's reply of ``sentences`` at this plan's token rate."""
        from agent.core.llm import DemoConfig

        return DemoConfig(sentences, self.tokens_per_second, self.first_token_delay_s)

    def with_runs(self, runs: int) -> Plan:
        """Every case and the transport level ``runs`` times."""
        return dataclasses.replace(
            self,
            http_cases=tuple((n, runs) for n, _ in self.http_cases),
            inprocess_cases=tuple((n, runs) for n, _ in self.inprocess_cases),
            transport_runs=runs,
            leg_runs=runs,
        )


QUICK = Plan(
    http_cases=((2, 1),),
    inprocess_cases=((2, 1),),
    transport_runs=1,
    warmup=0,
    tokens_per_second=200.0,
    first_token_delay_s=0.1,
    concurrency=(1, 2),
    concurrency_sentences=2,
    leg_runs=1,
    leg_sentences=2,
)
