// The latency panel: the last turn's figures measured in the browser (first text, first
// audio, total, underruns, bytes and seconds of audio received, bytes per second of audio;
// for a spoken turn, the server's end-of-turn wait and the wait for its words),
// the leg it ran on, the server's own metrics, and the turn's timeline (drawn by timeline.js)
// with the playhead.

import { SAMPLE_RATE } from "./browser-leg.js";
import { renderTimeline } from "./timeline.js";

function ms(value) {
  return value == null ? "—" : `${Math.round(value).toLocaleString("en-US")} ms`;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

function setMetric(name, text) {
  const node = document.querySelector(`[data-metric="${name}"]`);
  if (node.textContent !== text) node.textContent = text;
}

/**
 * Show `turn` (an entry of voiceChat.turns, or null before the first) in the panel.
 * @param {{turnLabel: HTMLElement, serverMetrics: HTMLElement, timeline: SVGSVGElement}} panel
 * @param {object | null} turn
 * @param {number | null} playheadMs the audio position now, in ms since send, or null
 */
export function renderLatency(panel, turn, playheadMs) {
  const l = turn?.latency;
  const leg = turn?.transport === "websocket" ? "WebSocket" : "SSE";
  panel.turnLabel.textContent = turn ? `turn ${turn.n} · ${leg}${turn.fellBack ? " (fallback)" : ""}` : "";
  setMetric("eot", ms(turn?.listened?.endOfTurnMs));
  setMetric("asr", ms(turn?.listened?.recognitionMs));
  setMetric("ttft", ms(l?.ttftMs));
  setMetric("ttfa", ms(l?.ttfaMs));
  setMetric("total", ms(l?.totalMs));
  setMetric("underruns", l ? String(l.underruns) : "—");
  setMetric("bytes", l ? bytes(l.bytes) : "—");
  const audioS = l ? l.audioBytes / 2 / SAMPLE_RATE : null;
  setMetric("audio", l ? `${audioS.toFixed(1)} s` : "—");
  setMetric("rate", audioS > 0 ? `${bytes(Math.round(l.bytes / audioS))}/s` : "—");
  const s = turn?.server;
  panel.serverMetrics.textContent = s
    ? `Server: first text ${ms(s.ttft_ms)} · first audio ${ms(s.ttfa_ms)} · total ${ms(s.total_ms)}`
    : "";
  renderTimeline(panel.timeline, turn, playheadMs);
}
