"""What every route shares, and the one path of a synthesis: ready → admit → synthesize → measure.

One ``SynthesisService`` per app (``app.state.service``): the settings, the readiness, the
engine once it is loaded, the server-wide ``Admission``, the ``Drain`` and the metrics. A
route asks it for the engine (``ready_engine``: refused 503 until the warm-up passed), for a
slot (``admit``, a session of work for an HTTP synthesis; ``connect``, a WebSocket, which
counts as a session only while it has work: ``connection.py``; each refused 429 ``busy`` when
full), and times its synthesis into the metrics (``measured``). POST ``/invocations`` and the
OpenAI speech routes take all four steps; the WebSocket route the first two (its connection
times each segment with the same ``Timing``). Each answers a ``SynthesisRefused`` in its own
error shape.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TypeVar

from starlette.requests import HTTPConnection

from tts_protocol import ErrorCode
from tts_server.admission import Admission
from tts_server.drain import Drain
from tts_server.engines.base import Engine
from tts_server.engines.timings import Chunk
from tts_server.health import Readiness, State, warm_up
from tts_server.metrics import TTSMetrics
from tts_server.settings import Settings
from tts_server.timing import Timing

EngineLoader = Callable[[Settings], Engine]
MAX_BODY_BYTES = 64 * 1024  # a POST body; OpenAI's 4096 characters, each escaped as \uXXXX, fit
RETRY_AFTER_S = 1  # what a 429 (and the OpenAI routes' 503) tells the client to wait
T = TypeVar("T")

log = logging.getLogger("tts_server")


class SynthesisRefused(Exception):
    """A synthesis the server cannot take now: ``status`` 503 (not ready) or 429 (busy)."""

    def __init__(self, status: int, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class Slot:
    """One admitted session or connection: ``release`` (or leaving a ``with``) gives it back,
    only once."""

    def __init__(self, give_back: Callable[[], None]) -> None:
        self._give_back = give_back
        self._held = True

    def release(self) -> None:
        """Give the slot back; later calls do nothing."""
        if self._held:
            self._held = False
            self._give_back()

    def __enter__(self) -> Slot:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    async def held_by(self, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        """``stream``; the slot goes back however the stream ends (a streamed response)."""
        try:
            async for item in stream:
                yield item
        finally:
            self.release()


class SynthesisService:
    """The app's shared state and the steps of a synthesis (see the module's docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.readiness = Readiness()
        self.engine: Engine | None = None  # set by ``load``
        self.admission = Admission.for_server(
            settings.engine,
            settings.device,
            settings.max_sessions,
            settings.max_queued,
            settings.max_connections,
        )
        self.drain = Drain(self.readiness, self.admission)  # run on SIGTERM (cli.py)
        self.metrics = TTSMetrics(self.admission, self.engine_if_ready)

    async def load(self, loader: EngineLoader) -> None:
        """Load the engine and warm it up; any failure keeps the server not ready, for good."""
        try:
            engine = await asyncio.to_thread(loader, self.settings)
            self.engine = engine
            self.readiness.reason = "warming up"
            self.readiness.details = await warm_up(engine)
        except Exception as exc:  # any load or warm-up failure must keep /ping at 503
            log.exception("engine failed to become ready")
            self.readiness.fail(f"{type(exc).__name__}: {exc}")
            return
        self.readiness.state, self.readiness.reason = State.HEALTHY, "ok"
        log.info("engine %s ready: %s", type(engine).__name__, self.readiness.details)

    def engine_if_ready(self) -> Engine | None:
        """The engine once the warm-up passed (and until the drain), else None."""
        return self.engine if self.readiness.state is State.HEALTHY else None

    def ready_engine(self) -> Engine:
        """The engine, or ``SynthesisRefused`` 503 (``shutting_down`` while draining, else
        ``internal``)."""
        engine = self.engine_if_ready()
        if engine is None:
            code = ErrorCode.SHUTTING_DOWN if self.drain.started else ErrorCode.INTERNAL
            raise SynthesisRefused(503, code, f"not ready: {self.readiness.reason}")
        return engine

    def admit(self) -> Slot:
        """A session slot for one synthesis, or ``SynthesisRefused`` 429 ``busy`` when full."""
        if not self.admission.open_session():
            raise SynthesisRefused(429, ErrorCode.BUSY, self.admission.sessions_full)
        return Slot(self.admission.close_session)

    def connect(self) -> Slot:
        """A WebSocket slot, or ``SynthesisRefused`` 429 ``busy`` when ``max_connections`` are
        open."""
        if not self.admission.open_connection():
            message = f"{self.admission.max_connections} connections are open; try again later"
            raise SynthesisRefused(429, ErrorCode.BUSY, message)
        return Slot(self.admission.close_connection)

    async def measured(
        self, engine: Engine, chunks: AsyncIterator[Chunk], timing: Timing
    ) -> AsyncIterator[Chunk]:
        """``chunks``, timed into ``timing``; at their end, into the server's histograms."""
        async for chunk in timing.measured(chunks):
            yield chunk
        self.metrics.synthesized(engine.name, timing)


def service_of(connection: HTTPConnection) -> SynthesisService:
    """The app's service, from a request or a WebSocket."""
    service: SynthesisService = connection.app.state.service
    return service
