// The voice chat page's entry point, loaded by index.html: builds the modules, wires them to
// each other and to the page's controls, and exposes the page state as window.voiceChat.
// Contract: docs/events.md. Design, and what each module does: docs/web.md.

import { AudioClock } from "./audio-clock.js";
import { loadConfig } from "./config.js";
import { Display } from "./display.js";
import { Listening } from "./listen.js";
import { PcmPlayer } from "./player.js";
import { Settings } from "./settings.js";
import { VoiceSocket } from "./socket.js";
import { createChatState } from "./state.js";
import { Transcript } from "./transcript.js";
import { Turns } from "./turn.js";
import { PLAYER_LEAD_S } from "./browser-leg.js";

const $ = (id) => document.getElementById(id);
const form = $("composer");
const promptInput = $("prompt");
const stopButton = $("stop");

// The jitter buffer: how far ahead of the audio clock a turn's first chunk is scheduled: the
// lead the server's window schedule counts on (PLAYER_LEAD_S); it grows after an underrun.
// ?lead=0.3 in the page's URL overrides it (seconds, 0.02 to 1).
const leadParam = Number.parseFloat(new URLSearchParams(location.search).get("lead"));
const LEAD_S = Number.isFinite(leadParam) ? Math.min(1, Math.max(0.02, leadParam)) : PLAYER_LEAD_S;

// `turns` is made last; these callbacks only run once it exists.
const player = new PcmPlayer({
  lead: LEAD_S,
  maxLead: Math.max(0.4, LEAD_S),
  onEnded: (entry) => turns.chunkEnded(entry),
});
const chat = createChatState(player.lead, {
  send: (text) => turns.send(text),
  stop: () => turns.stop(),
  audioTime: () => player.currentTime,
});
window.voiceChat = chat;

const settings = new Settings({
  voice: $("voice"),
  blend: $("blend"),
  blendShare: $("blend-share"),
  blendShareValue: $("blend-share-value"),
  speed: $("speed"),
  speedValue: $("speed-value"),
  marks: $("marks"),
});
const transcript = new Transcript($("transcript"), $("empty"));
const display = new Display({
  chat,
  player,
  transcript,
  currentTurn: () => turns.current,
  status: $("status"),
  stopButton,
  panel: { turnLabel: $("latency-turn"), serverMetrics: $("server-metrics"), timeline: $("timeline") },
});
const audioClock = new AudioClock(player, chat, $("audio-note"));
const socket = new VoiceSocket(chat);
const turns = new Turns({ chat, player, settings, transcript, display, audioClock, socket });
const listening = new Listening({
  chat,
  socket,
  turns,
  settings,
  ui: {
    modes: document.querySelectorAll('input[name="mic"]'),
    talk: $("talk"),
    level: $("mic-level"),
    status: $("mic-status"),
  },
});

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = promptInput.value;
  if (!text.trim()) return;
  promptInput.value = "";
  turns.send(text);
});

promptInput.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

stopButton.addEventListener("click", () => {
  turns.stop();
  promptInput.focus();
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && chat.state !== "idle") turns.stop();
});

for (const button of document.querySelectorAll("[data-suggest]")) {
  button.addEventListener("click", () => turns.send(button.dataset.suggest));
}

settings.listen();
listening.listen();
audioClock.listen();
display.start();
settings.restore();
display.setState("idle");
display.render();
// Open the WebSocket leg as soon as the server says it has one: a user's first prompt then pays
// no handshake (docs/benchmarks/page.md: Enter to the prompt on the socket, a few ms). If
// it fails, the first prompt opens it again, or falls back to SSE, as before.
loadConfig(chat, settings, { model: $("model"), modelNote: $("model-note") }).then(() => {
  if (chat.config.transports.includes("websocket") && settings.values().transport === "websocket") {
    socket.open().catch(() => {});
  }
});
