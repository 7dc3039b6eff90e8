"""The turn core: ``llm`` (model specs, the demo model), ``turn`` (one turn as events),
``memory`` (what the user heard of it), ``conversations`` (a model and its history per user),
``service`` (the ``VoiceAgent``), ``observer`` (what a turn's events say) and ``telemetry``
(its trace and logs). Imports neither the leg nor the doors."""
