// The voice chat page: POST a prompt, read the event stream as it arrives, show the text,
// play the audio gaplessly, measure latency. Contract: docs/events.md. Design: docs/web.md.

import { PcmPlayer, base64ToBytes } from "./player.js";
import { readEvents } from "./sse.js";
import { renderTimeline } from "./timeline.js";

const SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";
// The voices of the bundled Kokoro pack, offered when the server cannot list its own.
const FALLBACK_VOICES = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"];
const MAX_SCHEDULED = 5000; // voiceChat.scheduled keeps the most recent entries only
const SETTINGS_KEY = "voiceChat.settings";

const ERROR_TITLES = {
  tts_unavailable: "Speech is unavailable",
  synthesis_failed: "A sentence could not be spoken",
  llm_failed: "The model failed",
  superseded: "Interrupted by a newer prompt",
  network: "Connection failed",
  protocol: "Unreadable reply",
  unknown_voice: "Unknown voice",
  invalid_speed: "Invalid speed",
  prompt_too_long: "The message is too long",
};

const $ = (id) => document.getElementById(id);
const ui = {
  status: $("status"),
  model: $("model"),
  modelNote: $("model-note"),
  audioNote: $("audio-note"),
  transcript: $("transcript"),
  empty: $("empty"),
  form: $("composer"),
  prompt: $("prompt"),
  send: $("send"),
  stop: $("stop"),
  voice: $("voice"),
  speed: $("speed"),
  speedValue: $("speed-value"),
  latencyTurn: $("latency-turn"),
  serverMetrics: $("server-metrics"),
  timeline: $("timeline"),
};

// The jitter buffer: how far ahead of the audio clock a turn's first chunk is scheduled.
// ?lead=0.3 in the page's URL overrides it (seconds, 0.02 to 1).
const leadParam = Number.parseFloat(new URLSearchParams(location.search).get("lead"));
const LEAD_S = Number.isFinite(leadParam) ? Math.min(1, Math.max(0.02, leadParam)) : 0.15;
const player = new PcmPlayer({ lead: LEAD_S, maxLead: Math.max(0.4, LEAD_S), onEnded: chunkEnded });
const views = new Map(); // turn number -> TurnView
const requests = new Map(); // turn number -> AbortController
let current = null; // the turn being streamed or played (an entry of voiceChat.turns)

/** Page state for tests and the curious; documented in docs/web.md. */
const voiceChat = {
  state: "idle", // idle | streaming | playing
  conversationId: newId(),
  config: { model: null, voices: [], defaultVoice: null, source: "loading" },
  audio: { contextState: "none", sampleRate: null, lead: player.lead, running: null },
  turns: [],
  scheduled: [],
  underruns: 0,
  dropped: 0,
  speaking: null, // {turn, seq} while a segment is audible
  get metrics() {
    return this.turns.length ? this.turns[this.turns.length - 1].latency : null;
  },
  send: (prompt) => send(prompt),
  stop: () => stop(),
  audioTime: () => player.currentTime,
};
window.voiceChat = voiceChat;

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID(); // secure contexts (localhost included)
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// --- settings ------------------------------------------------------------------------------

function settings() {
  const mode = document.querySelector('input[name="mode"]:checked').value;
  return { voice: ui.voice.value || null, speed: Number(ui.speed.value), mode };
}

function saveSettings() {
  try {
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings()));
  } catch {
    // private mode: settings just are not remembered
  }
}

function savedSettings() {
  try {
    return JSON.parse(localStorage.getItem(SETTINGS_KEY)) || {};
  } catch {
    return {};
  }
}

function showSpeed() {
  ui.speedValue.textContent = `${Number(ui.speed.value).toFixed(1)}×`;
}

async function loadConfig() {
  let config = null;
  try {
    // The session header lets the server warm this conversation's TTS connection.
    const response = await fetch("/config", {
      headers: { [SESSION_HEADER]: voiceChat.conversationId },
      cache: "no-store",
      signal: AbortSignal.timeout(8000),
    });
    if (response.ok) config = await response.json();
  } catch {
    // an older server without GET /config: fall back below
  }
  const voices = Array.isArray(config?.voices) && config.voices.length ? config.voices : null;
  voiceChat.config = {
    model: typeof config?.model === "string" ? config.model : null,
    voices: voices ?? FALLBACK_VOICES,
    defaultVoice: voices ? (config.default_voice ?? null) : null,
    source: voices ? "server" : "fallback",
  };
  const { model, defaultVoice } = voiceChat.config;
  // The server's voices, its default preselected; without the list, "Server default" first.
  const options = defaultVoice ? [] : [new Option("Server default", "")];
  for (const voice of voiceChat.config.voices) options.push(new Option(voice, voice));
  ui.voice.replaceChildren(...options);
  if (defaultVoice) ui.voice.value = defaultVoice;
  const saved = savedSettings();
  if (saved.voice && voiceChat.config.voices.includes(saved.voice)) ui.voice.value = saved.voice;

  ui.model.hidden = false;
  if (model === "demo") {
    ui.model.textContent = "Demo model · not a real LLM";
    ui.model.classList.add("warn");
    ui.model.title = "An offline, scripted stand-in for an LLM; the speech is real Kokoro synthesis";
    ui.modelNote.innerHTML =
      "<strong>This server runs the offline demo model</strong>: a scripted stand-in, not a real " +
      "LLM. Its replies are canned sentences; the speech is real Kokoro synthesis, streamed as it is made.";
    ui.modelNote.hidden = false;
  } else if (model) {
    ui.model.textContent = `Model: ${model}`;
  } else {
    ui.model.textContent = "Model: unknown";
    ui.model.title = "This server has no GET /config; the voices offered are the bundled defaults";
  }
}

// --- the transcript ------------------------------------------------------------------------

const WORD = /[\p{L}\p{N}]/u;

/**
 * Where in `raw` (displayed text, markdown included) the speakable `spoken` text ends: the
 * letters and digits of `spoken` are matched in order, markup in between is skipped.
 * Returns -1 if they cannot all be found.
 */
function alignEnd(raw, spoken) {
  let i = 0;
  for (const ch of spoken) {
    if (!WORD.test(ch)) continue;
    const want = ch.toLowerCase();
    while (i < raw.length && raw[i].toLowerCase() !== want) i++;
    if (i >= raw.length) return -1;
    i++;
  }
  while (i < raw.length && !/\s/.test(raw[i]) && !WORD.test(raw[i])) i++; // closing marks
  return i;
}

class TurnView {
  constructor(turn) {
    this.turn = turn;
    const user = document.createElement("li");
    user.className = "msg user";
    user.innerHTML = '<span class="who">You</span><p class="body"></p>';
    user.querySelector(".body").textContent = turn.prompt;

    const agent = document.createElement("li");
    agent.className = "msg agent pending";
    agent.innerHTML =
      '<span class="who">Agent</span><p class="body"></p><div class="notes"></div>' +
      '<p class="meta"></p>';
    this.agent = agent;
    this.body = agent.querySelector(".body");
    this.notes = agent.querySelector(".notes");
    this.meta = agent.querySelector(".meta");
    this.tail = document.createTextNode("");
    this.body.append(this.tail);
    this.spans = new Map();
    this.speaking = null;
    ui.empty.hidden = true;
    ui.transcript.append(user, agent);
    this.setMeta();
  }

  appendText(text) {
    this.agent.classList.remove("pending");
    this.tail.appendData(text);
    this.scroll();
  }

  /** Wrap the displayed text that segment `seq` speaks, so it can be highlighted. */
  markSegment(seq, spoken) {
    const raw = this.tail.data;
    const found = alignEnd(raw, spoken);
    const end = found < 0 ? raw.length : found;
    const space = raw.length - raw.trimStart().length; // the gap before it is not highlighted
    const start = Math.min(space, end);
    const span = document.createElement("span");
    span.className = "seg";
    span.dataset.seq = String(seq);
    span.textContent = raw.slice(start, end);
    this.tail.data = raw.slice(end);
    if (start > 0) this.body.insertBefore(document.createTextNode(raw.slice(0, start)), this.tail);
    this.body.insertBefore(span, this.tail);
    this.spans.set(seq, span);
  }

  setSpeaking(seq) {
    if (seq === this.speaking) return;
    this.spans.get(this.speaking)?.classList.remove("speaking");
    this.speaking = seq;
    this.spans.get(seq)?.classList.add("speaking");
  }

  showError(code, message) {
    const note = document.createElement("div");
    note.className = "error";
    note.setAttribute("role", "alert");
    const title = document.createElement("strong");
    title.textContent = ERROR_TITLES[code] ?? "The request failed";
    const detail = document.createElement("span");
    detail.textContent = ` ${message} `;
    const tag = document.createElement("code");
    tag.textContent = code;
    note.append(title, detail, tag);
    this.notes.append(note);
    this.agent.classList.remove("pending");
    this.scroll();
  }

  setMeta() {
    const t = this.turn;
    const parts = [t.mode, t.voice ?? "default voice", `${t.speed.toFixed(1)}×`];
    if (t.latency.ttfaMs !== null) parts.push(`first audio ${(t.latency.ttfaMs / 1000).toFixed(2)} s`);
    const label = {
      streaming: "",
      complete: "",
      stopped: "stopped",
      interrupted: "interrupted",
      failed: "failed",
    }[t.status];
    if (label) parts.push(label);
    this.meta.textContent = parts.join(" · ");
    this.agent.dataset.status = t.status;
  }

  scroll() {
    const list = ui.transcript;
    if (list.scrollHeight - list.scrollTop - list.clientHeight < 80) list.scrollTop = list.scrollHeight;
  }
}

// --- a turn --------------------------------------------------------------------------------

function newTurn(prompt, options) {
  return {
    n: voiceChat.turns.length + 1,
    id: null, // the server's turn_id
    prompt,
    mode: options.mode,
    voice: options.voice,
    speed: options.speed,
    status: "streaming", // streaming | complete | stopped | interrupted | failed
    sentAt: performance.now(),
    text: "",
    textEndMs: null,
    segments: [],
    errors: [],
    server: null, // the metrics event
    stoppedAt: null, // audio clock (s) when its playback was cut, if it was
    latency: {
      ttftMs: null, // send -> first text.delta
      ttfaMs: null, // send -> first audio chunk scheduled
      firstSoundMs: null, // send -> when that chunk starts playing (ttfa + lead)
      totalMs: null, // send -> turn.end
      underruns: 0,
      bytes: 0, // response body bytes received
      audioBytes: 0, // PCM bytes decoded
      chunks: 0,
    },
  };
}

async function send(prompt, overrides = {}) {
  prompt = String(prompt ?? "").trim();
  if (!prompt) return null;
  cut("interrupted"); // barge-in: the old turn stops now, its late chunks are dropped
  player.ensure();
  const options = { ...settings(), ...overrides };
  const turn = newTurn(prompt, options);
  voiceChat.turns.push(turn);
  current = turn;
  player.begin(turn.n);
  syncAudio();
  const view = new TurnView(turn);
  views.set(turn.n, view);
  setState("streaming");
  render();

  const controller = new AbortController();
  requests.set(turn.n, controller);
  const body = { prompt, mode: options.mode, speed: options.speed };
  if (options.voice) body.voice = options.voice;
  try {
    const response = await fetch("/invocations", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "text/event-stream",
        [SESSION_HEADER]: voiceChat.conversationId,
      },
      body: JSON.stringify(body),
      cache: "no-store",
      signal: controller.signal,
    });
    if (!response.ok) {
      let error = { code: `http_${response.status}`, message: response.statusText };
      try {
        const json = await response.json();
        if (json?.error?.code) error = json.error;
        else if (typeof json?.error === "string") error = { code: "invalid_request", message: json.error };
      } catch {
        // not JSON: keep the status line
      }
      report(turn, error.code, error.message);
      finish(turn, "failed");
      return turn;
    }
    for await (const event of readEvents(response, (n) => (turn.latency.bytes += n))) {
      if (turn !== current || turn.status !== "streaming") break; // a late event of an old turn
      handle(turn, event);
    }
    if (turn.status === "streaming") {
      if (turn.latency.totalMs === null) report(turn, "protocol", "the stream ended before turn.end");
      finish(turn, turn.latency.totalMs !== null ? "complete" : "failed");
    }
  } catch (error) {
    if (turn.status === "streaming") {
      report(turn, error instanceof SyntaxError ? "protocol" : "network", error.message);
      finish(turn, "failed");
    }
  } finally {
    requests.delete(turn.n);
  }
  return turn;
}

function since(turn) {
  return performance.now() - turn.sentAt;
}

function handle(turn, event) {
  const view = views.get(turn.n);
  switch (event.type) {
    case "turn.start":
      turn.id = event.turn_id;
      break;
    case "text.delta":
      if (turn.latency.ttftMs === null) turn.latency.ttftMs = since(turn);
      turn.textEndMs = since(turn);
      turn.text += event.text;
      view.appendText(event.text);
      break;
    case "segment":
      turn.segments.push({
        seq: event.seq,
        text: event.text,
        sentMs: since(turn),
        firstChunkMs: null,
        lastChunkMs: null,
        endMs: null,
        startTime: null,
        endTime: null,
        playStartMs: null,
        playEndMs: null,
        chunks: 0,
        audioMs: null,
      });
      view.markSegment(event.seq, event.text);
      break;
    case "audio.delta":
      playChunk(turn, event);
      break;
    case "segment.end": {
      const segment = turn.segments.find((s) => s.seq === event.seq);
      if (segment) {
        segment.endMs = since(turn);
        segment.audioMs = event.audio_ms;
      }
      break;
    }
    case "metrics":
      turn.server = { ...event };
      delete turn.server.type;
      break;
    case "error":
      report(turn, event.code, event.message);
      break;
    case "turn.end":
      turn.latency.totalMs = since(turn);
      break;
    default:
      break; // unknown events are ignored (forward compatible)
  }
  render();
}

function playChunk(turn, event) {
  const bytes = base64ToBytes(event.audio);
  const entry = player.enqueue(turn.n, bytes, event.sample_rate || undefined);
  if (entry === null) {
    voiceChat.dropped += 1;
    return;
  }
  const ms = since(turn);
  const playStartMs = ms + (entry.startTime - entry.scheduledAt) * 1000;
  const playEndMs = playStartMs + entry.duration * 1000;
  entry.seq = event.seq;
  voiceChat.scheduled.push(entry);
  if (voiceChat.scheduled.length > MAX_SCHEDULED) voiceChat.scheduled.shift();
  const latency = turn.latency;
  latency.chunks += 1;
  latency.audioBytes += bytes.length;
  if (entry.underrun) {
    latency.underruns += 1;
    voiceChat.underruns += 1;
  }
  if (latency.ttfaMs === null) {
    latency.ttfaMs = ms;
    latency.firstSoundMs = playStartMs;
    checkAudioClock(entry.scheduledAt);
    views.get(turn.n)?.setMeta();
  }
  const segment = turn.segments.find((s) => s.seq === event.seq);
  if (segment) {
    segment.chunks += 1;
    segment.firstChunkMs ??= ms;
    segment.lastChunkMs = ms;
    segment.startTime ??= entry.startTime;
    segment.endTime = entry.startTime + entry.duration;
    segment.playStartMs ??= playStartMs;
    segment.playEndMs = playEndMs;
  }
  voiceChat.audio.lead = player.lead;
}

function report(turn, code, message) {
  turn.errors.push({ code, message });
  views.get(turn.n)?.showError(code, message);
}

/** The stream of `turn` is over: complete, failed, stopped or interrupted. */
function finish(turn, status) {
  turn.status = status;
  if (turn.latency.totalMs === null && status === "complete") turn.latency.totalMs = since(turn);
  views.get(turn.n)?.setMeta();
  views.get(turn.n)?.agent.classList.remove("pending");
  if (turn === current) setState(player.busy(turn.n) ? "playing" : "idle");
  render();
}

/** Stop the current turn: abort its request and its audio, drop whatever still comes. */
function cut(status) {
  const turn = current;
  if (turn === null) return;
  requests.get(turn.n)?.abort();
  turn.stoppedAt = player.currentTime;
  player.stop();
  views.get(turn.n)?.setSpeaking(null);
  voiceChat.speaking = null;
  if (turn.status === "streaming") finish(turn, status);
  current = null;
  setState("idle");
}

function stop() {
  cut("stopped");
  render();
}

function chunkEnded(entry) {
  if (current && entry.turn === current.n && current.status !== "streaming" && !player.busy(current.n)) {
    views.get(current.n)?.setSpeaking(null);
    voiceChat.speaking = null;
    setState("idle");
    render();
  }
}

// --- audio clock check ---------------------------------------------------------------------

function syncAudio() {
  const ctx = player.ctx;
  voiceChat.audio.contextState = ctx ? ctx.state : "none";
  voiceChat.audio.sampleRate = ctx ? ctx.sampleRate : null;
  voiceChat.audio.lead = player.lead;
  if (ctx && !ctx.onstatechange) ctx.onstatechange = syncAudio;
}

/** Some browsers keep the audio clock still until a click: detect it and say so. */
function checkAudioClock(then) {
  setTimeout(() => {
    syncAudio();
    const running = player.currentTime > then;
    voiceChat.audio.running = running;
    ui.audioNote.hidden = running;
    if (!running) {
      ui.audioNote.textContent =
        `Audio is not playing: the browser keeps the audio clock stopped (${player.ctx?.state}). ` +
        "Click anywhere on the page to allow sound.";
    }
  }, 1000);
}

document.addEventListener("pointerdown", () => {
  if (player.ctx && player.ctx.state !== "running") {
    player.ctx.resume().then(syncAudio, () => {});
  }
});

// --- rendering -----------------------------------------------------------------------------

function setState(state) {
  voiceChat.state = state;
  ui.stop.disabled = state === "idle";
  document.body.dataset.state = state;
  renderStatus();
}

function renderStatus() {
  const turn = current;
  let label = "Ready";
  if (voiceChat.speaking) label = "Speaking";
  else if (voiceChat.state === "streaming") label = turn && turn.text ? "Writing" : "Waiting for the model";
  else if (voiceChat.state === "playing") label = "Speaking";
  ui.status.textContent = label;
  ui.status.dataset.state = voiceChat.speaking ? "speaking" : voiceChat.state;
}

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

let renderQueued = false;
function render() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    draw();
  });
}

function draw() {
  const turn = voiceChat.turns[voiceChat.turns.length - 1] ?? null;
  const l = turn?.latency;
  ui.latencyTurn.textContent = turn ? `turn ${turn.n}` : "";
  setMetric("ttft", ms(l?.ttftMs));
  setMetric("ttfa", ms(l?.ttfaMs));
  setMetric("total", ms(l?.totalMs));
  setMetric("underruns", l ? String(l.underruns) : "—");
  setMetric("bytes", l ? bytes(l.bytes) : "—");
  const audioS = l ? l.audioBytes / 2 / 24000 : null;
  setMetric("audio", l ? `${audioS.toFixed(1)} s` : "—");
  const s = turn?.server;
  ui.serverMetrics.textContent = s
    ? `Server: first text ${ms(s.ttft_ms)} · first audio ${ms(s.ttfa_ms)} · total ${ms(s.total_ms)}`
    : "";
  let playhead = null;
  if (turn && turn === current && voiceChat.state !== "idle" && player.busy(turn.n)) {
    playhead = since(turn);
  }
  renderTimeline(ui.timeline, turn, playhead);
  renderStatus();
}

// While audio plays: highlight the segment being heard, move the playhead.
let lastFrame = 0;
function tick(now) {
  requestAnimationFrame(tick);
  const turn = current;
  if (!turn || !player.busy(turn.n)) return;
  const t = player.currentTime;
  const segment = turn.segments.find((s) => s.startTime !== null && s.startTime <= t && t < s.endTime);
  const seq = segment ? segment.seq : null;
  const view = views.get(turn.n);
  if (view && view.speaking !== seq) {
    view.setSpeaking(seq);
    voiceChat.speaking = seq === null ? null : { turn: turn.n, seq };
    renderStatus();
  }
  if (now - lastFrame > 100) {
    lastFrame = now;
    draw();
  }
}
requestAnimationFrame(tick);

// --- wiring --------------------------------------------------------------------------------

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  const prompt = ui.prompt.value;
  if (!prompt.trim()) return;
  ui.prompt.value = "";
  send(prompt);
});

ui.prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.form.requestSubmit();
  }
});

ui.stop.addEventListener("click", () => {
  stop();
  ui.prompt.focus();
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && voiceChat.state !== "idle") stop();
});

for (const button of document.querySelectorAll("[data-suggest]")) {
  button.addEventListener("click", () => send(button.dataset.suggest));
}

ui.speed.addEventListener("input", () => {
  showSpeed();
  saveSettings();
});
ui.voice.addEventListener("change", saveSettings);
for (const radio of document.querySelectorAll('input[name="mode"]')) {
  radio.addEventListener("change", saveSettings);
}

let timelineWidth = 0;
new ResizeObserver(([entry]) => {
  const width = Math.round(entry.contentRect.width);
  if (width !== timelineWidth) {
    timelineWidth = width;
    render();
  }
}).observe(ui.timeline);

const saved = savedSettings();
if (typeof saved.speed === "number") ui.speed.value = String(saved.speed);
if (saved.mode === "batch") document.querySelector('input[name="mode"][value="batch"]').checked = true;
showSpeed();
setState("idle");
render();
loadConfig();
