// What the server offers, from GET /config: the model, the TTS voices (the bundled voice list
// when the server cannot say) and the transports (SSE only when it does not say), shown in the
// voice selector, the transport switch and the header's model badge.

import { SESSION_HEADER } from "./browser-leg.js";

// The voices of the bundled Kokoro pack, offered when the server cannot list its own.
const FALLBACK_VOICES = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"];

/**
 * Ask the server, then fill `chat.config`, the voices of `settings` and the model badge.
 * @param {object} chat the page state (state.js)
 * @param {import("./settings.js").Settings} settings
 * @param {{model: HTMLElement, modelNote: HTMLElement}} ui the badge and the demo model's note
 */
export async function loadConfig(chat, settings, ui) {
  let config = null;
  try {
    // The session header lets the server warm this conversation's TTS connection.
    const response = await fetch("/config", {
      headers: { [SESSION_HEADER]: chat.conversationId },
      cache: "no-store",
      signal: AbortSignal.timeout(8000),
    });
    if (response.ok) config = await response.json();
  } catch {
    // an older server without GET /config: fall back below
  }
  const voices = Array.isArray(config?.voices) && config.voices.length ? config.voices : null;
  chat.config = {
    model: typeof config?.model === "string" ? config.model : null,
    voices: voices ?? FALLBACK_VOICES,
    defaultVoice: voices ? (config.default_voice ?? null) : null,
    source: voices ? "server" : "fallback",
    transports: Array.isArray(config?.transports) ? config.transports : ["sse"],
  };
  settings.offerVoices(chat.config.voices, chat.config.defaultVoice);
  settings.offerTransports(chat.config.transports);
  showModel(ui, chat.config.model);
}

function showModel(ui, model) {
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
