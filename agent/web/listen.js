// Talking to the agent: the microphone control (off, push-to-talk, hands-free), the level
// meter, and the listening protocol on the conversation's socket (docs/events.md, "Client →
// server"): `listen` {mode, sample_rate, format}, answered by `listening`; then microphone
// frames; in push-to-talk `talk.start` / `talk.end` around each press (the button held, or the
// space bar outside the text box). The server finds the speech, recognizes it, sends
// `transcript` and starts its turn. The microphone starts once the server has confirmed
// (`listening`; its first `listen` loads the recognizer), so no speech is lost meanwhile; the page shows the words as the user's message and plays
// the reply. Speech over the reply (`speech.start`) lowers it at once; `reply.paused` (the
// speech lasted the barge-in time) pauses it where it is, and then the server's `cancelled`
// (words, or speech past its interrupt bound) cuts it, or `reply.resumed` (only a backchannel,
// "mm-hm", or no words in time) plays it on from the same sample; a `speech.end` `too_short`
// (a cough) brings it back up; a push-to-talk press cuts it at once. Voice always rides the WebSocket leg, whatever the transport switch says.

import { MIC_SAMPLE_RATE } from "./browser-leg.js";
import { Microphone, microphoneProblem } from "./mic.js";

const MODES = ["off", "push_to_talk", "hands_free"];

/** The server's end of turn for a `speech.end`: the silence it waited, and the turn model's time
 * when its `complete` ended the turn (null: not ended by silence, e.g. push-to-talk). */
function endOfTurnMs(event) {
  if (event.wait_ms == null) return null;
  return event.wait_ms + (event.turn === "complete" ? event.turn_ms ?? 0 : 0);
}
const TEXT_INPUTS = new Set(["text", "search", "email", "number", "password", "url", "tel"]);

export class Listening {
  /**
   * @param {object} options
   * @param {object} options.chat the page state: `chat.listening` mirrors this control
   * @param {import("./socket.js").VoiceSocket} options.socket
   * @param {import("./turn.js").Turns} options.turns
   * @param {import("./settings.js").Settings} options.settings
   * @param {{modes: NodeListOf<HTMLInputElement>, talk: HTMLButtonElement, level: HTMLElement,
   *          status: HTMLElement}} options.ui
   */
  constructor({ chat, socket, turns, settings, ui }) {
    this.chat = chat;
    this.socket = socket;
    this.turns = turns;
    this.settings = settings;
    this.ui = ui;
    this.mic = new Microphone((frame, level) => this.frame(frame, level));
    this.mode = "off"; // what the user chose
    this.active = null; // the mode the server confirmed (`listening`), or null
    this.talking = false; // a push-to-talk press is held
    this.confirm = null; // resolves with the `listening` answer the page waits for
    this.ended = null; // the last `speech.end`: when it came, the server's end-of-turn wait
    chat.listening = {
      mode: "off",
      active: null,
      speaking: false,
      talking: false,
      framesSent: 0,
      level: 0,
      problem: null,
      transcripts: [],
      speechStarts: [],
      speechEnds: [], // {reason, waitMs, turn} of each `speech.end`
      withdrawn: [], // the turn id of each `turn.withdrawn`
    };
    socket.onListening = (event) => this.event(event);
    socket.onCancelled = (turnId) => turns.serverCancelled(turnId);
    socket.onClosed = () => this.closed();
  }

  listen() {
    for (const input of this.ui.modes) input.addEventListener("change", () => this.choose(input.value));
    const talk = this.ui.talk;
    talk.addEventListener("pointerdown", (event) => {
      talk.setPointerCapture?.(event.pointerId);
      this.press();
    });
    for (const name of ["pointerup", "pointercancel"]) talk.addEventListener(name, () => this.release());
    // The space bar talks only in push-to-talk; otherwise it keeps its usual work.
    document.addEventListener("keydown", (event) => {
      if (event.code !== "Space" || this.active !== "push_to_talk" || this.typing(event)) return;
      event.preventDefault(); // no page scroll, no click of the focused control
      if (!event.repeat) this.press();
    });
    document.addEventListener("keyup", (event) => {
      if (event.code !== "Space" || !this.talking) return;
      event.preventDefault();
      this.release();
    });
    this.render();
  }

  /** A key typed into a text field is text, not push-to-talk (a radio or a button is not one). */
  typing(event) {
    const target = event.target;
    if (target instanceof HTMLTextAreaElement || target?.isContentEditable) return true;
    return target instanceof HTMLInputElement && TEXT_INPUTS.has(target.type);
  }

  /** The user picked a mode: start or stop the microphone and tell the server. */
  async choose(mode) {
    if (!MODES.includes(mode)) return;
    this.mode = mode;
    this.chat.listening.mode = mode;
    this.chat.listening.problem = null;
    this.render();
    if (mode === "off") return this.stop();
    this.turns.player.ensure(); // in the click's gesture, so that spoken turns may play
    try {
      await this.socket.open();
      const confirmed = new Promise((resolve) => (this.confirm = resolve));
      this.socket.send({ type: "config", ...this.options() });
      this.socket.send({ type: "listen", mode, sample_rate: MIC_SAMPLE_RATE, format: "s16le" });
      if ((await confirmed) !== mode || this.mode !== mode) return; // refused, or changed meanwhile
      await this.mic.start();
    } catch (error) {
      return this.fail(microphoneProblem(error));
    }
    this.render();
  }

  /** The prompt options the server applies to spoken turns (a `config` on the socket). */
  options() {
    const { voice, speed, mode, marks } = this.settings.values();
    return { voice: voice ?? null, speed, mode, marks };
  }

  stop() {
    this.release();
    this.mic.stop();
    if (this.active !== null) this.socket.send({ type: "listen.stop" });
    this.active = null;
    this.chat.listening.active = null;
    this.chat.listening.speaking = false;
    this.render();
  }

  /** Listening is off again, and `problem` says why. */
  fail(problem) {
    this.mic.stop();
    if (this.active !== null) this.socket.send({ type: "listen.stop" }); // no audio will come
    this.mode = "off";
    this.active = null;
    Object.assign(this.chat.listening, { mode: "off", active: null, speaking: false, problem });
    for (const input of this.ui.modes) input.checked = input.value === "off";
    this.render();
  }

  closed() {
    if (this.mode === "off") return;
    this.fail("The connection to the agent closed. Choose a mode again to talk.");
  }

  press() {
    if (this.active !== "push_to_talk" || this.talking) return;
    this.talking = true;
    this.chat.listening.talking = true;
    this.turns.bargeIn({ cancel: true }); // the press interrupts at once
    this.socket.send({ type: "talk.start" });
    this.render();
  }

  release() {
    if (!this.talking) return;
    this.talking = false;
    this.chat.listening.talking = false;
    if (this.active === "push_to_talk") this.socket.send({ type: "talk.end" });
    this.render();
  }

  /** One microphone frame from the worklet: meter it, and send it while the server listens. */
  frame(frame, level) {
    this.chat.listening.level = level;
    this.ui.level.style.setProperty("--level", String(Math.min(1, level * 4)));
    if (this.active !== null && this.socket.sendBinary(frame)) this.chat.listening.framesSent += 1;
  }

  /** A listening event from the server. */
  event(event) {
    const state = this.chat.listening;
    switch (event.type) {
      case "listening":
        this.active = event.mode;
        state.active = event.mode;
        if (event.mode !== null) state.problem = null;
        this.confirm?.(event.mode);
        this.confirm = null;
        break;
      case "speech.start":
        state.speaking = true;
        state.problem = null;
        state.speechStarts.push(this.turns.player.currentTime); // on the audio clock
        // Lowered, not cut: the server pauses it (`reply.paused`) if the speech lasts barge_in_ms.
        if (this.active === "hands_free") this.turns.duck();
        break;
      case "speech.end":
        state.speaking = false;
        state.speechEnds.push({ reason: event.reason, waitMs: event.wait_ms, turn: event.turn });
        this.ended = { at: performance.now(), endOfTurnMs: endOfTurnMs(event) };
        if (event.reason === "too_short") this.turns.resume(); // a cough, not a barge-in
        break;
      case "transcript":
        state.transcripts.push({
          text: event.text,
          audioMs: event.audio_ms,
          asrMs: event.asr_ms,
          backchannel: event.backchannel === true,
        });
        // A backchannel over a paused reply starts no turn: the reply plays on (`reply.resumed`).
        if (event.text && !event.backchannel) this.turns.spoken(event.text, this.listened());
        break;
      case "reply.paused":
        this.turns.pauseReply(event.turn_id);
        break;
      case "reply.resumed":
        this.turns.resumeReply(event.turn_id);
        break;
      case "turn.withdrawn":
        state.withdrawn.push(event.turn_id);
        this.turns.withdrawn(event.turn_id, event.prompt);
        break;
      case "error":
        state.problem = `${event.code}: ${event.message}`;
        if (event.in_reply_to === "listen") {
          this.confirm?.(null);
          this.confirm = null;
          this.fail(`The agent cannot listen here (${event.code}: ${event.message}). Typing still works.`);
        }
        break;
      default:
        break;
    }
    this.render();
  }

  /** How the last utterance's turn came: the server's end-of-turn wait, and this page's wait
   * from `speech.end` to the words (recognition as the user waits for it). */
  listened() {
    const ended = this.ended;
    this.ended = null;
    if (!ended) return null;
    return { endOfTurnMs: ended.endOfTurnMs, recognitionMs: performance.now() - ended.at };
  }

  render() {
    const state = this.chat.listening;
    const ui = this.ui;
    document.body.dataset.listening = this.active ?? "off";
    ui.talk.hidden = this.mode !== "push_to_talk";
    ui.talk.disabled = this.active !== "push_to_talk";
    ui.talk.setAttribute("aria-pressed", String(this.talking));
    ui.level.hidden = this.mode === "off";
    if (this.mode === "off") ui.level.style.setProperty("--level", "0");
    let status = "";
    if (state.problem) status = state.problem;
    else if (this.mode !== "off" && this.active === null) status = "Starting the microphone…";
    else if (this.talking || state.speaking) status = "Listening…";
    else if (this.active === "push_to_talk") status = "Hold the button or the space bar to talk.";
    else if (this.active === "hands_free") status = "Just talk: the agent listens.";
    ui.status.textContent = status;
    ui.status.dataset.problem = String(state.problem !== null);
  }
}
