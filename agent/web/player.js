// Gapless playback of streamed PCM s16le mono with the Web Audio API (design: docs/web.md).
//
// Every chunk becomes one AudioBufferSourceNode started at an exact time on the audio clock:
// the first chunk of a turn at currentTime + lead, every later one at the end of the one before
// (nextTime), so consecutive chunks join sample-exactly. Nothing waits for an `ended` event,
// and no chunk carries a WAV header. The context runs at 24 kHz, the stream's rate, so no
// chunk is resampled on its own. All sources of a turn feed one GainNode: stopping a turn
// ramps that gain to zero in a few milliseconds (no click) and stops every source at once.
// Pausing fades the turn out over PAUSE_FADE_S, then suspends the context: its clock stops, so
// every scheduled chunk keeps its place on it and plays on, faded back in, from the same sample
// when it resumes; chunks that come meanwhile queue behind them as ever (the clock has not
// passed their start, so no underrun is counted). The microphone captures on a context of its
// own (mic.js), which a pause leaves running.
// The lead is a jitter buffer: it grows by LEAD_STEP_S after each underrun (up to maxLead) and
// shrinks by half that after each turn that played with none (down to the starting lead), so
// one hiccup does not delay every later reply's first audio for the rest of the page's life.

import { SAMPLE_RATE } from "./browser-leg.js";

const FADE_S = 0.004; // fade-in after silence, and the stop ramp: short enough to be instant
const STOP_S = 0.012;
const PAUSE_FADE_S = 0.01; // a pause fades out, and its resume back in, over this: no click
const FADE_WAIT_MS = 150; // the longest a pause waits for its fade to play before it stops
const LEAD_STEP_S = 0.05; // the lead grows by this after an underrun, shrinks by half after a clean turn

/** Decode base64 to bytes (Uint8Array.fromBase64 where the browser has it). */
export function base64ToBytes(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** PCM s16le bytes to Float32 samples in [-1, 1). An odd trailing byte is ignored. */
export function pcm16ToFloat32(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(bytes.byteLength >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  return samples;
}

export class PcmPlayer {
  /**
   * @param {object} options
   * @param {number} [options.lead] seconds between a turn's first chunk arriving and playing;
   *   the lead never shrinks below it
   * @param {number} [options.maxLead] the lead grows by 50 ms after each underrun, up to this
   * @param {(entry: object) => void} [options.onEnded] a scheduled chunk stopped or finished
   */
  constructor({ lead = 0.1, maxLead = 0.4, onEnded = () => {} } = {}) {
    this.lead = lead;
    this.leastLead = lead;
    this.maxLead = maxLead;
    this.onEnded = onEnded;
    this.ctx = null;
    this.turn = null; // {id, gain, sources: Map<source, entry>, nextTime, chunks, underruns}
    this.paused = false; // the context is suspended by `pause`, not by the browser
  }

  /** Create or resume the AudioContext. Call it from a user gesture (send, click). */
  ensure() {
    if (!this.ctx) {
      const Context = window.AudioContext || window.webkitAudioContext;
      try {
        this.ctx = new Context({ sampleRate: SAMPLE_RATE, latencyHint: "interactive" });
      } catch {
        this.ctx = new Context({ latencyHint: "interactive" }); // resamples each buffer
      }
    }
    if (this.ctx.state === "suspended" && !this.paused) this.ctx.resume().catch(() => {});
    return this.ctx;
  }

  /**
   * Pause playback where it is: the turn fades out over PAUSE_FADE_S, then the audio clock stops
   * with every chunk in its place. Resolves once the context is suspended, with the audio clock
   * where it stopped.
   */
  async pause() {
    if (!this.ctx || this.paused) return this.currentTime;
    this.paused = true;
    if (this.turn !== null && this.ctx.state === "running") {
      const faded = this.ctx.currentTime + PAUSE_FADE_S;
      rampGain(this.turn.gain.gain, this.ctx.currentTime, 0, PAUSE_FADE_S);
      // The audio clock, not the wall clock, says when the fade has played: a busy audio
      // thread renders late. Wait for it, but no longer than FADE_WAIT_MS (the pause is a stop).
      const giveUp = performance.now() + FADE_WAIT_MS;
      while (this.ctx.currentTime < faded && performance.now() < giveUp) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!this.paused) return this.currentTime; // resumed or stopped while it faded
      if (this.turn !== null && this.ctx.currentTime < faded) {
        // The fade never played: stop at silence, so that the resume fades in from it rather
        // than the rest of this fade-out playing at full gain first.
        this.turn.gain.gain.cancelScheduledValues(this.ctx.currentTime);
        this.turn.gain.gain.value = 0;
      }
    }
    await this.ctx.suspend().catch(() => {});
    return this.currentTime;
  }

  /** Play on from where `pause` stopped, the turn faded back in over PAUSE_FADE_S. */
  resume() {
    if (!this.paused) return;
    this.paused = false;
    if (this.turn !== null) rampGain(this.turn.gain.gain, this.ctx.currentTime, 1, PAUSE_FADE_S);
    this.ctx.resume().catch(() => {});
  }

  get currentTime() {
    return this.ctx ? this.ctx.currentTime : 0;
  }

  /** Is any source of turn `id` still scheduled or sounding? */
  busy(id) {
    return this.turn !== null && this.turn.id === id && this.turn.sources.size > 0;
  }

  /** Start a new turn: whatever the previous one had scheduled stops now. */
  begin(id) {
    this.stop();
    const gain = this.ctx.createGain();
    gain.connect(this.ctx.destination);
    this.turn = { id, gain, sources: new Map(), nextTime: 0, chunks: 0, underruns: 0 };
  }

  /**
   * Schedule one chunk of turn `id`. Returns its schedule entry, or null when the chunk
   * belongs to a turn that is no longer current (a late chunk after barge-in: dropped).
   */
  enqueue(id, bytes, sampleRate = SAMPLE_RATE) {
    const turn = this.turn;
    if (turn === null || turn.id !== id) return null;
    const samples = pcm16ToFloat32(bytes);
    if (samples.length === 0) return null;
    const ctx = this.ctx;
    const now = ctx.currentTime;
    // Within a turn, a chunk that comes after the previous one finished playing is an underrun:
    // the listener heard a gap. Restart with a fade-in and keep a longer lead from then on.
    const underrun = turn.chunks > 0 && now > turn.nextTime;
    if (underrun) {
      turn.underruns += 1;
      this.lead = Math.min(this.maxLead, this.lead + LEAD_STEP_S);
    }
    const contiguous = turn.chunks > 0 && !underrun;
    const startTime = contiguous ? turn.nextTime : now + this.lead;
    if (!contiguous) fadeIn(samples, Math.round(FADE_S * sampleRate));
    const buffer = ctx.createBuffer(1, samples.length, sampleRate);
    buffer.copyToChannel(samples, 0);
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(turn.gain);
    source.start(startTime);
    turn.nextTime = startTime + buffer.duration;
    turn.chunks += 1;
    const entry = {
      turn: id,
      startTime,
      duration: buffer.duration,
      scheduledAt: now,
      underrun,
      endedAt: null,
    };
    turn.sources.set(source, entry);
    source.onended = () => {
      entry.endedAt = ctx.currentTime;
      turn.sources.delete(source);
      source.disconnect();
      this.onEnded(entry);
    };
    return entry;
  }

  /**
   * Stop the current turn's audio at once: ramp its gain to 0, stop every source. A paused turn
   * is silenced where it paused (nothing more of it sounds), and the context runs again.
   */
  stop() {
    const turn = this.turn;
    if (turn === null) return this.resume();
    this.turn = null;
    if (turn.chunks > 1 && turn.underruns === 0) {
      this.lead = Math.max(this.leastLead, this.lead - LEAD_STEP_S / 2);
    }
    const now = this.ctx.currentTime;
    const ramp = this.paused ? 0 : STOP_S;
    const gain = turn.gain.gain;
    gain.cancelScheduledValues(now);
    gain.setValueAtTime(this.paused ? 0 : gain.value, now);
    gain.linearRampToValueAtTime(0, now + ramp);
    for (const source of turn.sources.keys()) {
      try {
        source.stop(now + ramp);
      } catch {
        // already stopped
      }
    }
    this.resume();
    setTimeout(() => turn.gain.disconnect(), 500);
  }
}

/** Ramp `param` from its value at `now` to `value` over `seconds` of the audio clock. */
export function rampGain(param, now, value, seconds) {
  param.cancelScheduledValues(now);
  param.setValueAtTime(param.value, now);
  param.linearRampToValueAtTime(value, now + seconds);
}

function fadeIn(samples, length) {
  const n = Math.min(length, samples.length);
  for (let i = 0; i < n; i++) samples[i] *= i / n;
}
