"""Transports move protocol frames to and from one endpoint; sessions run on any of them.

``base`` is the small interface, ``websocket`` the local/dev transport, ``sagemaker`` the
production one (SageMaker's bidirectional stream; Python >= 3.12 and the ``sagemaker`` extra,
imported only when used).
"""

from tts_client.transports.base import Connection, Frame, Transport
from tts_client.transports.websocket import WebSocketTransport

__all__ = ["Connection", "Frame", "Transport", "WebSocketTransport"]
