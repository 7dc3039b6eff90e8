"""Listening on ``/ws``: microphone audio → VAD → utterance → end of turn → recognition.

One concept a module: the knobs (``settings``), Silero VAD (``vad``), utterances from speech
probabilities (``endpointer``), the turn-end model and its Smart Turn implementation
(``turn_model``), the recognizer interface (``recognizer``) and its faster-whisper
implementation (``whisper``), and one socket's listening (``listener``), which ``agent.ws``
drives. The transcript of an utterance becomes the prompt of a turn through the same path a
typed prompt takes. Design, knobs and costs: docs/listening.md.
"""
