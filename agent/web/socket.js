// The WebSocket leg (/ws): one socket for the whole conversation, opened on first use and
// kept. Events come as JSON text frames; audio as binary frames: a 4-byte big-endian segment
// seq, then raw PCM s16le (no base64). Contract: docs/events.md, "The WebSocket leg".
//
// Frames belong to turns by their order: the server runs one turn at a time, and a `cancel` is
// answered by `cancelled` once nothing more of that turn can come. Between the two, frames are
// the cancelled turn's: they are dropped here and never reach the player.
//
// Listening (speaking instead of typing) rides the same socket: microphone frames go out as
// binary frames (MIC magic + PCM), and the listening events (`listening`, `speech.start`,
// `speech.end`, `transcript`, `turn.withdrawn`, `reply.paused`, `reply.resumed`, and their errors) are not a turn's: they go to `onListening`
// whenever they come. A transcript starts a turn on the server; the page takes its frames with
// `expect`. A barge-in by voice ends the running turn with a `cancelled` the page did not ask
// for: its turn is over, and `onCancelled` is told (unless the words that cut it came first, as
// a `transcript`: then the page cut it already, and waits for their turn).

import { SESSION_HEADER } from "./browser-leg.js";

const OPEN_TIMEOUT_MS = 5000;
const LISTENING_EVENTS = new Set([
  "listening",
  "speech.start",
  "speech.end",
  "transcript",
  "turn.withdrawn",
  "reply.paused",
  "reply.resumed",
]);
const LISTENING_MESSAGES = new Set(["listen", "listen.stop", "talk.start", "talk.end", "audio", "transcript"]);
const LISTENING_ERRORS = new Set(["utterance_too_long", "asr_failed", "asr_busy"]);

/** Is `event` about listening, not about the turn whose frames are coming? */
function isListening(event) {
  if (LISTENING_EVENTS.has(event.type)) return true;
  if (event.type !== "error") return false;
  return LISTENING_MESSAGES.has(event.in_reply_to) || LISTENING_ERRORS.has(event.code);
}

export class VoiceSocket {
  /**
   * @param {object} chat the page state (state.js): `chat.socket` mirrors this connection
   */
  constructor(chat) {
    this.chat = chat;
    this.onListening = () => {}; // (event) => void: a listening event
    this.onCancelled = () => {}; // (turnId) => void: the server stopped the turn (barge-in by voice)
    this.onClosed = () => {}; // () => void: the socket closed
    this.ws = null;
    this.opening = null;
    this.info = null; // the server's `ready` frame: sample_rate, audio_header_bytes, ...
    this.sink = null; // the turn receiving frames: {onEvent, onAudio, resolve, reject}
    this.cancelling = 0; // cancels sent, not yet confirmed
    chat.socket = { state: "closed", opened: 0, cancels: 0, confirmed: 0, droppedFrames: 0 };
  }

  /** Open the socket, or reuse the open one; resolves once the server has said `ready`. */
  open() {
    if (this.ws !== null && this.info !== null) return Promise.resolve();
    this.opening ??= this.connect().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  connect() {
    return new Promise((resolve, reject) => {
      const url = new URL("/ws", location.href);
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      url.searchParams.set(SESSION_HEADER, this.chat.conversationId);
      const ws = new WebSocket(url);
      ws.binaryType = "arraybuffer";
      this.chat.socket.state = "connecting";
      const timer = setTimeout(() => ws.close(), OPEN_TIMEOUT_MS);
      ws.onmessage = (message) => {
        if (this.info !== null) return this.receive(message.data);
        const hello = typeof message.data === "string" ? JSON.parse(message.data) : null;
        if (hello?.type !== "ready") return ws.close(1002, "expected ready");
        clearTimeout(timer);
        this.ws = ws;
        this.info = hello;
        this.chat.socket.state = "open";
        this.chat.socket.opened += 1;
        resolve();
      };
      ws.onclose = () => {
        clearTimeout(timer);
        const wasOpen = this.info !== null;
        this.ws = null;
        this.info = null;
        this.cancelling = 0;
        this.chat.socket.state = "closed";
        if (!wasOpen) reject(new Error("the server offers no WebSocket at /ws"));
        const sink = this.sink;
        this.sink = null;
        sink?.reject(new Error("the WebSocket closed during the turn"));
        if (wasOpen) this.onClosed();
      };
    });
  }

  /**
   * Send a prompt and route its frames until its last: `turn.end`, or an `error` refusing it.
   * @param {object} body the prompt's fields (as the POST body)
   * @param {{onEvent: (event: object, bytes: number) => void,
   *          onAudio: (seq: number, pcm: Uint8Array, bytes: number) => void}} handlers
   * @returns {Promise<void>} settles when the turn is over, or was cancelled
   */
  turn(body, { onEvent, onAudio }) {
    return new Promise((resolve, reject) => {
      this.sink = { onEvent, onAudio, resolve, reject, started: true };
      this.ws.send(JSON.stringify({ type: "prompt", ...body }));
    });
  }

  /**
   * Tell the server where playback of a turn stopped (`heard`: {turn_id, seq, ms}), so that the
   * conversation keeps only what was heard. Sent only on an open socket; never answered.
   */
  heard(report) {
    if (this.ws !== null && this.info !== null) this.ws.send(JSON.stringify({ type: "heard", ...report }));
  }

  /**
   * Route the frames of the turn the server starts from a transcript, from its `turn.start` to
   * its last. Frames before that `turn.start` are the last of a turn it superseded: not its.
   * @returns {Promise<void>} as `turn`'s
   */
  expect({ onEvent, onAudio }) {
    this.sink?.resolve(); // a turn still waiting for frames is over: the new one supersedes it
    return new Promise((resolve, reject) => {
      this.sink = { onEvent, onAudio, resolve, reject, started: false };
    });
  }

  /** Send a JSON message (listening's `listen`, `talk.start`, ...) on the open socket. */
  send(message) {
    if (this.ws === null || this.info === null) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  /** Send a binary frame (a microphone frame) on the open socket. */
  sendBinary(frame) {
    if (this.ws === null || this.info === null) return false;
    this.ws.send(frame);
    return true;
  }

  /** Barge-in: stop the current turn on the server; its frames until `cancelled` are dropped. */
  cancel() {
    const sink = this.sink;
    this.sink = null;
    sink?.resolve();
    if (this.ws === null) return;
    this.cancelling += 1;
    this.chat.socket.cancels += 1;
    this.ws.send(JSON.stringify({ type: "cancel" }));
  }

  receive(data) {
    const binary = data instanceof ArrayBuffer;
    const event = binary ? null : JSON.parse(data);
    if (event !== null && isListening(event)) return this.onListening(event);
    if (event?.type === "cancelled" && this.cancelling === 0) {
      const sink = this.sink; // a barge-in by voice: the turn's one terminal event
      // Words over a paused reply: their transcript came first, and the page cut the reply and
      // expects their turn; this cancel is the cut reply's, and the expected turn keeps its sink.
      if (sink !== null && !sink.started) return;
      this.sink = null;
      sink?.resolve();
      return this.onCancelled(event.turn_id);
    }
    if (this.cancelling > 0) {
      if (event?.type === "cancelled") {
        this.cancelling -= 1;
        this.chat.socket.confirmed += 1;
      } else {
        this.chat.socket.droppedFrames += 1; // the cancelled turn's last frames in flight
      }
      return;
    }
    const sink = this.sink;
    if (sink === null) return;
    if (!sink.started) {
      if (event?.type !== "turn.start") return void (this.chat.socket.droppedFrames += 1);
      sink.started = true;
    }
    if (binary) {
      const seq = new DataView(data).getUint32(0);
      sink.onAudio(seq, new Uint8Array(data, this.info.audio_header_bytes), data.byteLength);
      return;
    }
    sink.onEvent(event, data.length); // compact JSON, non-ASCII escaped: length = bytes
    const refused = event.type === "error" && event.in_reply_to === "prompt";
    if (event.type === "turn.end" || refused) {
      this.sink = null;
      sink.resolve();
    }
  }
}
