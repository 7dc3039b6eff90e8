"""Helpers for the real-Chromium tests of the voice chat page (tests/e2e/test_browser.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]
DOCS = Path(__file__).resolve().parents[2] / "docs"


def chromium_path() -> str:
    """The system Chromium (Playwright's own browser downloads are not used)."""
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:  # the README's test command installs it; a skip would prove nothing
        raise RuntimeError("no Chromium: apt-get install chromium (scripts/test.sh does)")
    return found


# Page state, read in one round trip.
STATE_JS = """() => {
  const v = window.voiceChat;
  return {
    state: v.state, underruns: v.underruns, dropped: v.dropped, audio: {...v.audio},
    config: v.config, now: v.audioTime(),
    turns: v.turns.map((t) => ({
      ...t, latency: {...t.latency}, segments: t.segments.map((s) => ({...s})),
    })),
    scheduled: v.scheduled.map((e) => ({...e})),
  };
}"""
