// The page state, exposed as window.voiceChat for tests and the curious (docs/web.md): plain
// data, and the records it holds for each turn, each segment of a turn and each chunk scheduled.

import { newConversationId } from "./session.js";

const MAX_SCHEDULED = 5000; // voiceChat.scheduled keeps the most recent entries only

/**
 * The page state, with the page's actions (`send`, `stop`, `audioTime`) as its last fields.
 * @param {number} lead the player's starting lead, in seconds
 * @param {object} actions
 */
export function createChatState(lead, actions) {
  return {
    state: "idle", // idle | streaming | playing
    conversationId: newConversationId(),
    config: { model: null, voices: [], defaultVoice: null, source: "loading", transports: [] },
    audio: { contextState: "none", sampleRate: null, lead, running: null },
    turns: [],
    scheduled: [],
    underruns: 0,
    dropped: 0,
    speaking: null, // {turn, seq} while a segment is audible
    heard: null, // {turn, seq, index, text, at}: the word highlighted, at audio clock time `at`
    socket: null, // the WebSocket leg: {state, opened, cancels, confirmed, droppedFrames}
    get metrics() {
      return this.turns.length ? this.turns[this.turns.length - 1].latency : null;
    },
    ...actions,
  };
}

/** Keep a chunk's schedule entry in `chat.scheduled`, dropping the oldest past the limit. */
export function recordScheduled(chat, entry) {
  chat.scheduled.push(entry);
  if (chat.scheduled.length > MAX_SCHEDULED) chat.scheduled.shift();
}

/** The record of turn number `n`, sent now with `options` ({mode, voice, speed, transport}). */
export function newTurn(n, prompt, options) {
  return {
    n,
    id: null, // the server's turn_id
    prompt,
    mode: options.mode,
    voice: options.voice,
    speed: options.speed,
    marks: options.marks, // asked for word timings (segment.marks events)
    transport: options.transport, // websocket | sse (the leg it ran on)
    fellBack: false, // chose websocket, but /ws did not open: ran on SSE
    spoken: options.spoken === true, // the prompt is a transcript of the user's speech
    listened: options.listened ?? null, // then {endOfTurnMs, recognitionMs} (listen.js)
    status: "streaming", // streaming | complete | stopped | interrupted | failed
    sentAt: performance.now(),
    text: "",
    textEndMs: null,
    segments: [],
    tools: [], // tool calls: {id, name, startMs, endMs, status, durationMs}
    errors: [],
    server: null, // the metrics event
    stoppedAt: null, // audio clock (s) where what was heard of it ended, if it was cut
    cutAt: null, // audio clock (s) when its playback was cut (after a duck: the server's cancel)
    pauses: [], // each `reply.paused`: {at, resumedAt} on the audio clock, {wallMs, resumedWallMs}
    pauseReport: null, // the `heard` sent where it paused, while it is paused
    heard: null, // then, where: the `heard` report sent, {turn_id, seq, ms}
    latency: {
      ttftMs: null, // send -> first text.delta
      ttfaMs: null, // send -> first audio chunk scheduled
      firstSoundMs: null, // send -> when that chunk starts playing (ttfa + lead)
      totalMs: null, // send -> turn.end
      underruns: 0,
      bytes: 0, // bytes received: the SSE body, or the WebSocket frames' payloads
      audioBytes: 0, // PCM bytes decoded
      chunks: 0,
    },
  };
}

/** The record of a segment (a `segment` event), sent to synthesis `sentMs` after the prompt. */
export function newSegment(seq, text, sentMs) {
  return {
    seq,
    text,
    sentMs,
    firstChunkMs: null,
    lastChunkMs: null,
    endMs: null,
    startTime: null,
    endTime: null,
    playStartMs: null,
    playEndMs: null,
    chunks: 0,
    audioMs: null,
    words: [], // word timings: {text, start_ms, end_ms}, ms from the segment's audio start
    schedule: [], // its chunks on the audio clock: {offset (s of its audio before), startTime, duration}
    audioS: 0, // seconds of its audio scheduled so far
  };
}

/**
 * Where playback of `turn` stands at audio-clock `time`: {seq, ms}, `ms` into segment `seq`'s
 * audio (in a gap between chunks: the end of the chunk before). Null when a complete turn has
 * played to its end: there is nothing to report.
 */
export function playbackPosition(turn, time) {
  let position = null;
  for (const segment of turn.segments) {
    for (const chunk of segment.schedule) {
      if (time < chunk.startTime) return position ?? { seq: segment.seq, ms: 0 };
      if (time < chunk.startTime + chunk.duration) {
        return { seq: segment.seq, ms: (chunk.offset + time - chunk.startTime) * 1000 };
      }
      position = { seq: segment.seq, ms: (chunk.offset + chunk.duration) * 1000 };
    }
  }
  if (turn.status === "complete") return null;
  return position ?? { seq: 0, ms: 0 };
}

/** Milliseconds since `turn`'s prompt was sent. */
export function sinceSent(turn) {
  return performance.now() - turn.sentAt;
}
