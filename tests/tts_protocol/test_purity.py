"""``tts_protocol`` is pure: it imports with networking and every third-party package blocked."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import importlib.abc
    import sys

    BLOCKED = {
        "asyncio", "socket", "ssl", "selectors", "websockets", "torch", "numpy", "fastapi",
        "starlette", "httpx", "tts_client", "tts_server", "agent", "bench",
    }

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked: {name}")
            return None

    before = set(sys.modules)
    sys.meta_path.insert(0, Block())
    import tts_protocol
    import tts_protocol.client
    import tts_protocol.server

    loaded = {m.split(".")[0] for m in set(sys.modules) - before}
    foreign = sorted(loaded - set(sys.stdlib_module_names) - {"tts_protocol"})
    assert not foreign, foreign
    protocol = tts_protocol.ClientProtocol()
    protocol.connection_opened()
    print(type(protocol.receive('{"type":"ready","protocol":1,"sample_rate":24000,'
        '"format":"pcm_s16le","channels":1,"voices":["v"],"default_voice":"v"}')[0]).__name__)
    server = tts_protocol.ServerProtocol()
    print(type(server.receive(b'{"type":"speak","id":"s","text":"Hi."}')[0]).__name__)
    """
)


def test_protocol_imports_and_runs_with_networking_and_third_party_packages_blocked() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Connected", "QueueSegment"]
