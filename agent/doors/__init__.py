"""The front doors: ``wiring`` (``FrontDoor``, what both share), ``agentcore`` (the
AgentCore Runtime app), ``devserver`` (the local dev server and the voice chat page),
``origins`` (its Host and Origin policy) and ``metrics`` (Prometheus, for both)."""
