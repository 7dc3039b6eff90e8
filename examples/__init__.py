"""Example agents to voice (docs/your_agent.md):
``voice-agent dev --agent examples.clock_and_math_agent:create_agent``."""
