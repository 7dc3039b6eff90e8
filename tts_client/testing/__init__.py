"""Test and demo helpers: a SageMaker-style gateway in front of a local TTS server."""
