// A small SVG timeline of one turn: when the text streamed, when each segment was sent to
// synthesis, when its audio arrived and when it was scheduled to play, and its tool calls. Times are milliseconds
// since the prompt was sent, measured in the browser.

const NS = "http://www.w3.org/2000/svg";
const ROW = 16;
const MAX_ROWS = 7; // beyond, rows get thinner: the panel stays whole in view (docs/web.md)
const TOP = 4;
const LABEL = 30;
const AXIS = 18;

function el(name, attrs, text) {
  const node = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function step(spanMs) {
  for (const s of [250, 500, 1000, 2000, 5000, 10000, 20000, 60000]) if (spanMs / s <= 6) return s;
  return 120000;
}

/**
 * Draw `turn` (an entry of voiceChat.turns) into `svg`.
 * @param {SVGSVGElement} svg
 * @param {object | null} turn
 * @param {number | null} playheadMs the audio position now, in ms since send, or null
 */
export function renderTimeline(svg, turn, playheadMs = null) {
  const width = Math.max(200, Math.round(svg.getBoundingClientRect().width) || 320);
  const segments = turn ? turn.segments : [];
  const tools = turn?.tools ?? [];
  const rows = 1 + Math.max(segments.length, 1) + (tools.length ? 1 : 0);
  const row = Math.min(ROW, (MAX_ROWS * ROW) / rows); // a row's height
  const f = row / ROW; // and what it does to the marks within it
  const height = TOP + rows * row + AXIS;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", String(height));
  svg.replaceChildren();
  if (!turn) {
    svg.append(el("text", { x: width / 2, y: height / 2, class: "tl-empty" }, "No turn yet"));
    return;
  }
  let endMs = Math.max(turn.latency.totalMs ?? 0, turn.textEndMs ?? 0, playheadMs ?? 0, 1000);
  for (const s of segments) endMs = Math.max(endMs, s.playEndMs ?? 0, s.lastChunkMs ?? 0);
  for (const t of tools) endMs = Math.max(endMs, t.endMs ?? 0);
  const plot = width - LABEL - 6;
  const x = (ms) => LABEL + (Math.max(0, ms) / endMs) * plot;
  const w = (from, to) => Math.max(1.5, x(to) - x(from));
  const axisY = TOP + rows * row;

  const tick = step(endMs);
  for (let ms = 0; ms <= endMs; ms += tick) {
    svg.append(el("line", { x1: x(ms), x2: x(ms), y1: TOP, y2: axisY, class: "tl-grid" }));
    const label = tick >= 1000 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(2).replace(/0$/, "")}s`;
    svg.append(el("text", { x: x(ms), y: axisY + 12, class: "tl-tick" }, label));
  }

  const rowY = (i) => TOP + i * row;
  svg.append(el("text", { x: 0, y: rowY(0) + 11 * f, class: "tl-label" }, "text"));
  if (turn.latency.ttftMs != null) {
    const to = turn.textEndMs ?? turn.latency.ttftMs;
    const bar = el("rect", {
      x: x(turn.latency.ttftMs), y: rowY(0) + 4 * f, width: w(turn.latency.ttftMs, to), height: 8 * f,
      rx: 2, class: "tl-text",
    });
    bar.append(el("title", {}, `text streamed ${fmt(turn.latency.ttftMs)} to ${fmt(to)}`));
    svg.append(bar);
  }
  segments.forEach((s, i) => {
    const y = rowY(i + 1);
    if (f >= 0.75 || i === segments.length - 1) {
      svg.append(el("text", { x: 0, y: y + 11 * f, class: "tl-label" }, `S${s.seq + 1}`));
    }
    if (s.firstChunkMs != null) {
      const arrived = el("rect", {
        x: x(s.firstChunkMs), y: y + 10 * f, width: Math.max(3, w(s.firstChunkMs, s.lastChunkMs)),
        height: 4 * f, rx: 1, class: "tl-arrive",
      });
      arrived.append(el("title", {}, `S${s.seq + 1} audio arrived ${fmt(s.firstChunkMs)} to ${fmt(s.lastChunkMs)}`));
      svg.append(arrived);
    }
    if (s.playStartMs != null) {
      const play = el("rect", {
        x: x(s.playStartMs), y: y + 3 * f, width: w(s.playStartMs, s.playEndMs), height: 6 * f, rx: 2 * f,
        class: "tl-play",
      });
      play.append(el("title", {}, `S${s.seq + 1} plays ${fmt(s.playStartMs)} to ${fmt(s.playEndMs)}`));
      svg.append(play);
    }
    const mark = el("path", {
      d: `M${x(s.sentMs)} ${y + 2 * f} l4 ${6 * f} l-4 ${6 * f} l-4 ${-6 * f} z`, class: "tl-sent",
    });
    mark.append(el("title", {}, `S${s.seq + 1} sent to speech at ${fmt(s.sentMs)}: ${s.text}`));
    svg.append(mark);
  });
  if (tools.length) {
    const y = rowY(1 + Math.max(segments.length, 1));
    svg.append(el("text", { x: 0, y: y + 11 * f, class: "tl-label" }, "tools"));
    for (const t of tools) {
      const to = t.endMs ?? turn.latency.totalMs ?? endMs;
      const bar = el("rect", {
        x: x(t.startMs), y: y + 3 * f, width: w(t.startMs, to), height: 10 * f, rx: 2, class: "tl-tool",
      });
      bar.dataset.status = t.status ?? "running";
      bar.append(el("title", {}, `${t.name} ${t.status ?? "running"} ${fmt(t.startMs)} to ${fmt(t.endMs)}`));
      svg.append(bar);
    }
  }
  if (playheadMs != null && playheadMs >= 0 && playheadMs <= endMs) {
    svg.append(el("line", { x1: x(playheadMs), x2: x(playheadMs), y1: TOP, y2: axisY, class: "tl-head" }));
  }
  svg.append(el("line", { x1: LABEL, x2: width - 6, y1: axisY, y2: axisY, class: "tl-axis" }));
}

function fmt(ms) {
  return ms == null ? "?" : `${Math.round(ms)} ms`;
}
