"""Test and demo helpers: a SageMaker-style gateway in front of a local TTS server
(``gateway``), a transport that records what a session receives (``recording``) and a TCP
proxy that breaks the link on command (``faultproxy``)."""
