"""Test and demo helpers: a SageMaker-style gateway in front of a local TTS server
(``gateway``) and a transport that records what a session receives (``recording``)."""
