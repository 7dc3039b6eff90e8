// A small AG-UI client for the agent's AG-UI protocol (VOICE_AGENT_PROTOCOL=agui, docs/agui.md):
// one thread, the whole history sent with each run as AG-UI front ends do, text and tool calls
// shown, and the `voice.audio` custom events played gaplessly by the voice chat's own player.

import { PcmPlayer, base64ToBytes } from "./player.js";
import { readEvents } from "./sse.js";

const log = document.getElementById("log");
const form = document.getElementById("form");
const input = document.getElementById("prompt");
const stopButton = document.getElementById("stop");
const status = document.getElementById("status");
const player = new PcmPlayer();
const threadId = `thread-${crypto.randomUUID()}`;
const messages = []; // the thread as AG-UI messages, sent whole with every run
let running = null; // {controller, turn, sentAt, firstAudio}

function line(kind, text) {
  const node = document.createElement("div");
  node.className = kind;
  node.textContent = text;
  log.append(node);
  node.scrollIntoView({ block: "end" });
  return node;
}

/** What one AG-UI event does to the page; `texts` maps a message id to its node and text. */
function handle(event, run, texts) {
  switch (event.type) {
    case "TEXT_MESSAGE_START":
      texts.set(event.messageId, { node: line("assistant", ""), text: "" });
      break;
    case "TEXT_MESSAGE_CONTENT": {
      const message = texts.get(event.messageId);
      message.text += event.delta;
      message.node.textContent = message.text;
      break;
    }
    case "TEXT_MESSAGE_END":
      messages.push({ id: event.messageId, role: "assistant", content: texts.get(event.messageId).text });
      break;
    case "TOOL_CALL_START":
      run.tools.set(event.toolCallId, line("tool", `🔧 ${event.toolCallName}(`));
      break;
    case "TOOL_CALL_ARGS":
      run.tools.get(event.toolCallId).textContent += event.delta;
      break;
    case "TOOL_CALL_END":
      run.tools.get(event.toolCallId).textContent += ") …";
      break;
    case "TOOL_CALL_RESULT":
      run.tools.get(event.toolCallId).textContent += ` → ${event.content}`;
      break;
    case "CUSTOM":
      custom(event, run);
      break;
    case "RUN_ERROR":
      line("error", `run failed: ${event.code}: ${event.message}`);
      break;
    default:
  }
}

/** The speech events: the turn's player starts at `voice.start`, each chunk is scheduled. */
function custom(event, run) {
  const value = event.value;
  if (event.name === "voice.start") {
    run.turn = value.turnId;
    player.begin(run.turn);
  } else if (event.name === "voice.audio") {
    if (run.firstAudio === null) {
      run.firstAudio = performance.now() - run.sentAt;
      status.textContent = `first audio ${Math.round(run.firstAudio)} ms after Send`;
    }
    player.enqueue(run.turn, base64ToBytes(value.audio), value.sampleRate);
  } else if (event.name === "voice.error") {
    line("error", `${value.code}: ${value.message}`);
  }
}

async function send(text) {
  player.ensure(); // from the user's gesture
  stop();
  line("user", text);
  messages.push({ id: `user-${crypto.randomUUID()}`, role: "user", content: text });
  const run = { controller: new AbortController(), turn: null, sentAt: performance.now(), firstAudio: null, tools: new Map() };
  running = run;
  stopButton.disabled = false;
  const body = { threadId, runId: crypto.randomUUID(), messages, tools: [], context: [], state: {}, forwardedProps: { speech: { marks: true } } };
  try {
    const response = await fetch("/invocations", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal: run.controller.signal,
    });
    if (!response.ok) {
      const { error } = await response.json();
      line("error", `refused: ${error.code}: ${error.message}`);
      return;
    }
    const texts = new Map();
    for await (const event of readEvents(response)) handle(event, run, texts);
  } catch (error) {
    if (error.name !== "AbortError") line("error", String(error));
  } finally {
    if (running === run) {
      running = null;
      stopButton.disabled = true;
    }
  }
}

/** Hang up the running run: the server stops its turn and its synthesis; the audio stops. */
function stop() {
  if (running === null) return;
  running.controller.abort();
  running = null;
  player.stop();
  stopButton.disabled = true;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  input.value = "";
  if (text) send(text);
});
stopButton.addEventListener("click", stop);
