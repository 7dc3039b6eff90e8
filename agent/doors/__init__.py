"""The front doors: ``wiring`` (``FrontDoor``, what both share), ``agentcore`` (the
AgentCore Runtime app), ``devserver`` (the local dev server and the voice chat page),
``origins`` (its Host and Origin policy), ``metrics`` (Prometheus, for both), ``protocols``
(which protocol the doors speak: ours or AG-UI) and ``agui`` (a run's answer in AG-UI)."""
