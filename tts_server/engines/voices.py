"""Voice blends: a weighted mix of style tables, made once per blend and kept in a bounded cache.

A blend is kept typed (``VoiceMix``, as ``Engine.prepare`` checked it) and mixed from its
shares; its canonical name (``tts_protocol.voice_name``: ``a(0.7)+b(0.3)``) is the cache key.
Style tables are NumPy arrays (ONNX engine) or torch tensors (PyTorch engine, on its device):
both support ``share * table`` and ``+``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from tts_protocol.validation import VoiceMix, voice_name

DEFAULT_CACHE_SIZE = 32


class BlendMismatch(ValueError):
    """The voices of a blend have style tables of different shapes."""


def mix_tables(mix: VoiceMix, tables: Mapping[str, Any]) -> Any:
    """``sum(share * table)`` over the mix; every name must be in ``tables``."""
    shapes = {name: "x".join(map(str, tables[name].shape)) for name, _ in mix}
    if len(set(shapes.values())) > 1:
        each = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise BlendMismatch(f"cannot blend style tables of different shapes: {each}")
    total = None
    for name, share in mix:
        part = tables[name] * share
        total = part if total is None else total + part
    return total


class BlendCache:
    """Mixed style tables by canonical blend name; beyond ``size`` the least recently used go.

    Thread-safe: the engine thread and the event loop may both ask. Two threads missing the
    same name at once both mix it, and the results are equal.
    """

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self._size = size
        self._tables: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._tables)

    def table(self, mix: VoiceMix, tables: Mapping[str, Any]) -> Any:
        """The style table of blend ``mix``, mixed from ``tables`` unless cached."""
        name = voice_name(mix)
        cached = self._cached(name)
        if cached is not None:
            return cached
        mixed = mix_tables(mix, tables)
        with self._lock:
            self._tables[name] = mixed
            while len(self._tables) > self._size:
                self._tables.popitem(last=False)
        return mixed

    def _cached(self, name: str) -> Any:
        """The cached table of ``name`` (now the most recently used), or None."""
        with self._lock:
            if name in self._tables:
                self._tables.move_to_end(name)
                return self._tables[name]
        return None
