// A turn over either leg: over the WebSocket (socket.js: events as JSON, audio as binary
// frames) when the server offers it and the transport switch says so, else POST /invocations
// with its text/event-stream read as it arrives (sse.js). Each event is applied to the turn's
// record, its transcript view and the player. A turn cut short (barge-in, Stop) is cancelled
// on its leg (a `cancel` message, or the request aborted), its audio silenced, and whatever
// of it still comes dropped; where its playback stopped is reported (`heard`: a message on the
// socket, and a field of the next prompt), so the conversation keeps only what was heard. The
// events: docs/events.md.

import { SESSION_HEADER } from "./browser-leg.js";
import { base64ToBytes, rampGain } from "./player.js";
import { readEvents } from "./sse.js";
import { newSegment, newTurn, playbackPosition, recordScheduled, sinceSent } from "./state.js";

/** The body of a refused request (HTTP 400 `{"error": {"code", "message"}}`) as {code, message}. */
async function requestError(response) {
  let error = { code: `http_${response.status}`, message: response.statusText };
  try {
    const json = await response.json();
    if (json?.error?.code) error = json.error;
    else if (typeof json?.error === "string") error = { code: "invalid_request", message: json.error };
  } catch {
    // not JSON: keep the status line
  }
  return error;
}

const DUCKED = 0.15; // the reply's volume while the user may be speaking over it
const RAMP_S = 0.02;

export class Turns {
  /**
   * @param {object} options
   * @param {object} options.chat the page state (state.js)
   * @param {import("./player.js").PcmPlayer} options.player
   * @param {import("./settings.js").Settings} options.settings
   * @param {import("./transcript.js").Transcript} options.transcript
   * @param {import("./display.js").Display} options.display
   * @param {import("./audio-clock.js").AudioClock} options.audioClock
   * @param {import("./socket.js").VoiceSocket} options.socket the WebSocket leg
   */
  constructor({ chat, player, settings, transcript, display, audioClock, socket }) {
    this.chat = chat;
    this.player = player;
    this.settings = settings;
    this.transcript = transcript;
    this.display = display;
    this.audioClock = audioClock;
    this.socket = socket;
    this.current = null; // the turn being streamed or played (an entry of voiceChat.turns)
    this.requests = new Map(); // turn number -> AbortController
    this.heard = null; // where playback of the last turn cut stopped, for the next prompt
    this.ducked = null; // {turn, at}: the reply lowered at the user's `speech.start`, and when
    this.paused = null; // {turn, pause}: the reply paused by the server (`reply.paused`)
    this.continues = null; // a withdrawn turn's prompt, to lead the next spoken turn's
  }

  /** Send `prompt` as a new turn; one still streaming or playing is interrupted (barge-in). */
  async send(prompt) {
    prompt = String(prompt ?? "").trim();
    if (!prompt) return null;
    this.cut("interrupted"); // barge-in: the old turn stops now, its late chunks are dropped
    const turn = this.begin(prompt, this.settings.values());
    const controller = new AbortController();
    this.requests.set(turn.n, controller);
    try {
      await this.stream(turn, controller.signal);
    } catch (error) {
      this.failed(turn, error);
    } finally {
      this.requests.delete(turn.n);
    }
    return turn;
  }

  /**
   * The user said `text` (a `transcript`): the server has started its turn on the socket; take
   * its frames. Any turn still current was stopped by the server already (`cancelled`, or
   * superseded), so nothing is cancelled here; where its playback stopped went with `heard`.
   */
  async spoken(text, listened = null) {
    this.cut("interrupted", { cancel: false });
    this.heard = null; // the server has it: sent as a message when playback stopped
    const options = { ...this.settings.values(), transport: "websocket", spoken: true, listened };
    const prompt = this.continues === null ? text : `${this.continues} ${text}`;
    this.continues = null;
    const turn = this.begin(prompt, options);
    try {
      await this.streamSocket(turn, { expect: true });
    } catch (error) {
      this.failed(turn, error);
    }
    return turn;
  }

  /**
   * The server withdrew turn `turnId` (`turn.withdrawn`): the user spoke on before a sample of
   * its reply was heard, so it was never said. It leaves the transcript, and what the user said
   * then, `prompt`, leads their next turn, shown as one message: the spoken turn begun on the
   * `transcript` just before, or the next one (docs/listening.md, "Turn continuation").
   */
  withdrawn(turnId, prompt) {
    const old = this.chat.turns.find((t) => t.id === turnId);
    if (old) {
      old.status = "withdrawn";
      this.transcript.view(old.n)?.remove();
    }
    const next = this.chat.turns[this.chat.turns.length - 1];
    if (next && next.spoken && next.id === null && (!old || next.n > old.n)) {
      next.prompt = `${prompt} ${next.prompt}`;
      this.transcript.view(next.n)?.setPrompt(next.prompt);
    } else {
      this.continues = prompt;
    }
    this.display.render();
  }

  /** The user started speaking (`speech.start`, or a push-to-talk press): silence the reply. */
  bargeIn({ cancel }) {
    const turn = this.current;
    if (turn === null) return;
    if (turn.status === "streaming" || this.player.busy(turn.n)) this.cut("interrupted", { cancel });
    this.display.render();
  }

  /**
   * The user may be starting to speak over the reply (`speech.start`, hands-free): lower it at
   * once, not cut it. The server cuts it (`cancelled`) if the speech lasts its barge-in time;
   * a cough, a "mm-hm" or a door under that ends as `speech.end` `too_short`, and `resume`
   * brings the reply back, never cut (docs/web.md, "Listening").
   */
  duck() {
    const turn = this.current;
    if (turn === null || !(turn.status === "streaming" || this.player.busy(turn.n))) return;
    this.ducked = { turn: turn.n, at: this.player.currentTime };
    this.level(DUCKED);
  }

  /** The speech over the reply was too short to cut it: the reply is heard again. */
  resume() {
    if (this.ducked === null) return;
    this.ducked = null;
    this.level(1);
  }

  /**
   * The user has spoken over the reply for the barge-in time (`reply.paused`): pause it exactly
   * where it is while the server hears their words. Its frames still come, and queue.
   */
  pauseReply(turnId) {
    const turn = this.current;
    if (turn === null || this.paused !== null || (turnId !== null && turn.id !== null && turn.id !== turnId)) return;
    if (!(turn.status === "streaming" || this.player.busy(turn.n))) return;
    const pause = { at: this.player.currentTime, resumedAt: null, wallMs: performance.now(), resumedWallMs: null };
    turn.pauses.push(pause);
    this.paused = { turn: turn.n, pause };
    this.player.pause().then((at) => {
      if (this.paused?.pause !== pause) return; // resumed or cut meanwhile
      pause.at = at; // where the audio clock stopped
      this.reportPause(turn, at);
    });
    this.display.render();
  }

  /**
   * The words were only a backchannel, or none came (`reply.resumed`): the reply plays on from
   * the sample where it paused, at its full volume.
   */
  resumeReply(turnId) {
    const paused = this.paused;
    const turn = this.current;
    if (paused === null || turn === null || turn.n !== paused.turn) return;
    if (turnId !== null && turn.id !== null && turn.id !== turnId) return;
    this.paused = null;
    turn.pauseReport = null; // it plays on: the server drops that report too
    paused.pause.resumedAt = this.player.currentTime;
    paused.pause.resumedWallMs = performance.now();
    this.player.resume();
    this.resume();
    this.display.render();
  }

  /** Ramp the playing turn's volume to `value` (a few ms: no click). */
  level(value) {
    const gain = this.player.turn?.gain?.gain;
    if (gain) rampGain(gain, this.player.currentTime, value, RAMP_S);
  }

  /** The server stopped turn `turnId` by itself (a barge-in by voice): it is over. */
  serverCancelled(turnId) {
    const turn = this.current;
    if (turn !== null && (turnId === null || turn.id === turnId)) this.bargeIn({ cancel: false });
  }

  /** A new turn record, current, shown and about to play. */
  begin(prompt, options) {
    this.player.ensure();
    this.ducked = null; // the new turn plays at full volume
    this.paused = null;
    const turn = newTurn(this.chat.turns.length + 1, prompt, options);
    this.chat.turns.push(turn);
    this.current = turn;
    this.player.begin(turn.n);
    this.audioClock.sync();
    this.transcript.add(turn);
    this.display.setState("streaming");
    this.display.render();
    return turn;
  }

  failed(turn, error) {
    if (turn.status !== "streaming") return;
    this.report(turn, error instanceof SyntaxError ? "protocol" : "network", error.message);
    this.finish(turn, "failed");
  }

  /** Stop the current turn (the Stop button, Escape). */
  stop() {
    this.cut("stopped");
    this.display.render();
  }

  /** The player's `ended` callback: once the last source of a finished turn ends, go idle. */
  chunkEnded(entry) {
    const current = this.current;
    if (!current || entry.turn !== current.n || current.status === "streaming") return;
    if (this.player.busy(current.n)) return; // more of it is still scheduled
    this.display.setSpeaking(current, null);
    this.display.setState("idle");
    this.display.render();
  }

  /** Run the turn on its leg: the WebSocket if chosen and it opens, else SSE. */
  async stream(turn, signal) {
    if (turn.transport === "websocket") {
      try {
        await this.socket.open();
        return await this.streamSocket(turn);
      } catch (error) {
        if (turn.latency.bytes > 0) throw error; // the socket broke mid-turn
        turn.transport = "sse"; // no /ws here: fall back for this turn
        turn.fellBack = true;
      }
    }
    return this.streamSse(turn, signal);
  }

  body(turn) {
    const body = { prompt: turn.prompt, mode: turn.mode, speed: turn.speed };
    if (turn.voice) body.voice = turn.voice;
    if (turn.marks) body.marks = true;
    if (this.heard) body.heard = this.heard;
    this.heard = null;
    return body;
  }

  /**
   * Send the turn on the conversation's socket (or, `expect`, take the frames of the turn the
   * server started from speech); apply its frames until its end.
   */
  async streamSocket(turn, { expect = false } = {}) {
    const live = () => turn === this.current && turn.status === "streaming";
    const handlers = {
      onEvent: (event, bytes) => {
        turn.latency.bytes += bytes;
        if (!live()) return;
        this.handle(turn, event);
        if (event.type === "error" && event.in_reply_to === "prompt") this.finish(turn, "failed");
      },
      onAudio: (seq, pcm, bytes) => {
        turn.latency.bytes += bytes;
        if (!live()) return;
        this.playChunk(turn, seq, pcm, this.socket.info.sample_rate);
        this.display.render();
      },
    };
    await (expect ? this.socket.expect(handlers) : this.socket.turn(this.body(turn), handlers));
    this.ended(turn);
  }

  /** POST the turn, then apply its events as they arrive, until the body ends. */
  async streamSse(turn, signal) {
    const response = await fetch("/invocations", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "text/event-stream",
        [SESSION_HEADER]: this.chat.conversationId,
      },
      body: JSON.stringify(this.body(turn)),
      cache: "no-store",
      signal,
    });
    if (!response.ok) {
      const error = await requestError(response);
      this.report(turn, error.code, error.message);
      this.finish(turn, "failed");
      return;
    }
    for await (const event of readEvents(response, (n) => (turn.latency.bytes += n))) {
      if (turn !== this.current || turn.status !== "streaming") break; // a late event of an old turn
      this.handle(turn, event);
    }
    this.ended(turn);
  }

  /** The leg has delivered the turn's last frame: complete, unless `turn.end` never came. */
  ended(turn) {
    if (turn.status === "streaming") {
      if (turn.latency.totalMs === null) this.report(turn, "protocol", "the stream ended before turn.end");
      this.finish(turn, turn.latency.totalMs !== null ? "complete" : "failed");
    }
  }

  handle(turn, event) {
    const view = this.transcript.view(turn.n);
    switch (event.type) {
      case "turn.start":
        turn.id = event.turn_id;
        break;
      case "text.delta":
        if (turn.latency.ttftMs === null) turn.latency.ttftMs = sinceSent(turn);
        turn.textEndMs = sinceSent(turn);
        turn.text += event.text;
        view.appendText(event.text);
        break;
      case "segment":
        turn.segments.push(newSegment(event.seq, event.text, sinceSent(turn)));
        view.markSegment(event.seq, event.text);
        break;
      case "audio.delta":
        this.playChunk(turn, event.seq, base64ToBytes(event.audio), event.sample_rate);
        break;
      case "segment.marks": {
        const segment = turn.segments.find((s) => s.seq === event.seq);
        segment?.words.push(...event.words);
        view.markWords(event.seq, event.words);
        break;
      }
      case "segment.end": {
        const segment = turn.segments.find((s) => s.seq === event.seq);
        if (segment) {
          segment.endMs = sinceSent(turn);
          segment.audioMs = event.audio_ms;
        }
        break;
      }
      case "tool.start":
        turn.tools.push({ id: event.id, name: event.name, startMs: sinceSent(turn), endMs: null, status: null });
        view.showTool(event.id, event.name);
        break;
      case "tool.end": {
        const call = turn.tools.find((t) => t.id === event.id);
        if (call) Object.assign(call, { endMs: sinceSent(turn), status: event.status, durationMs: event.duration_ms });
        view.endTool(event.id, event.status, event.duration_ms);
        break;
      }
      case "metrics":
        turn.server = { ...event };
        delete turn.server.type;
        break;
      case "error":
        this.report(turn, event.code, event.message);
        break;
      case "turn.end":
        turn.latency.totalMs = sinceSent(turn);
        break;
      default:
        break; // unknown events are ignored (forward compatible)
    }
    this.display.render();
  }

  /** Schedule PCM of segment `seq` and record when it plays, in the turn, its segment and the page. */
  playChunk(turn, seq, bytes, sampleRate) {
    const chat = this.chat;
    const entry = this.player.enqueue(turn.n, bytes, sampleRate || undefined);
    if (entry === null) {
      chat.dropped += 1;
      return;
    }
    const ms = sinceSent(turn);
    const playStartMs = ms + (entry.startTime - entry.scheduledAt) * 1000;
    const playEndMs = playStartMs + entry.duration * 1000;
    entry.seq = seq;
    recordScheduled(chat, entry);
    const latency = turn.latency;
    latency.chunks += 1;
    latency.audioBytes += bytes.length;
    if (entry.underrun) {
      latency.underruns += 1;
      chat.underruns += 1;
    }
    if (latency.ttfaMs === null) {
      latency.ttfaMs = ms;
      latency.firstSoundMs = playStartMs;
      this.audioClock.check(entry.scheduledAt);
      this.transcript.view(turn.n)?.setMeta();
    }
    const segment = turn.segments.find((s) => s.seq === seq);
    if (segment) {
      segment.chunks += 1;
      segment.firstChunkMs ??= ms;
      segment.lastChunkMs = ms;
      segment.startTime ??= entry.startTime;
      segment.endTime = entry.startTime + entry.duration;
      segment.playStartMs ??= playStartMs;
      segment.playEndMs = playEndMs;
      segment.schedule.push({ offset: segment.audioS, startTime: entry.startTime, duration: entry.duration });
      segment.audioS += entry.duration;
    }
    chat.audio.lead = this.player.lead;
    this.display.wake();
  }

  report(turn, code, message) {
    turn.errors.push({ code, message });
    this.transcript.view(turn.n)?.showError(code, message);
  }

  /** The stream of `turn` is over: complete, failed, stopped or interrupted. */
  finish(turn, status) {
    turn.status = status;
    if (turn.latency.totalMs === null && status === "complete") turn.latency.totalMs = sinceSent(turn);
    this.transcript.view(turn.n)?.finish();
    if (turn === this.current) this.display.setState(this.player.busy(turn.n) ? "playing" : "idle");
    this.display.render();
  }

  /** `heard` for where `turn`'s playback stands at `time` (null: it had played to its end). */
  position(turn, time) {
    const position = turn.id === null ? null : playbackPosition(turn, time);
    if (position === null) return null;
    return { turn_id: turn.id, seq: position.seq, ms: Math.round(position.ms * 10) / 10 };
  }

  /**
   * Report where the paused reply stands, on the socket, at once: if the user's words cut it,
   * this is what they heard, and the server has it before it starts their turn (their
   * `transcript` comes before its `cancelled`); if it plays on, the server drops it.
   */
  reportPause(turn, at) {
    const report = this.position(turn, at);
    if (report === null || turn.transport !== "websocket") return;
    turn.pauseReport = report;
    this.socket.heard(report);
  }

  /** Report where `turn`'s playback stopped (its `stoppedAt`), unless it played to its end (or
   * the report of its pause, from the same stopped clock, went already). */
  reportHeard(turn) {
    const report = this.position(turn, turn.stoppedAt);
    if (report === null) return;
    this.heard = report;
    turn.heard = report;
    const sent = turn.pauseReport;
    if (sent && sent.seq === report.seq && sent.ms === report.ms) return;
    if (turn.transport === "websocket") this.socket.heard(report);
  }

  /**
   * Stop the current turn: cancel it on its leg (on the socket, unless `cancel` is false: the
   * server stopped it already), stop its audio, drop whatever still comes.
   */
  cut(status, { cancel = true } = {}) {
    const turn = this.current;
    if (turn === null) return;
    const playing = this.player.busy(turn.n); // a turn whose stream ended may still be heard
    this.requests.get(turn.n)?.abort();
    if (cancel && turn.transport === "websocket" && turn.status === "streaming") this.socket.cancel();
    // Cut by the voice that ducked it: what was heard ended where the user began to speak, or,
    // paused for their words, where it paused (the audio clock has stood still since).
    const ducked = this.ducked?.turn === turn.n ? this.ducked.at : null;
    const paused = this.paused?.turn === turn.n;
    this.ducked = null;
    this.paused = null;
    turn.cutAt = this.player.currentTime; // when its audio stopped
    turn.stoppedAt = paused ? turn.cutAt : (ducked ?? turn.cutAt);
    this.player.stop();
    this.reportHeard(turn);
    this.display.setSpeaking(turn, null);
    if (turn.status === "streaming" || playing) {
      this.transcript.view(turn.n)?.showUnheard(playbackPosition(turn, turn.stoppedAt));
      this.finish(turn, status);
    }
    this.current = null;
    this.display.setState("idle");
  }
}
