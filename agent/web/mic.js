// The microphone: getUserMedia with the browser's echo cancellation on and its noise
// suppression and automatic gain off (they changed what the recognizer heard: issue 49, in
// docs/web.md "Listening"), an AudioContext at the device's own rate, and the capture worklet
// (mic-worklet.js), which resamples to 16 kHz and hands back ready /ws frames (MIC magic + PCM
// s16le) of FRAME_MS each, with their level. Design: docs/web.md, "Listening".

import { MIC_MAGIC, MIC_SAMPLE_RATE } from "./browser-leg.js";

export const FRAME_MS = 20;

/** Why the microphone could not start, in words a user can act on. */
export function microphoneProblem(error) {
  switch (error?.name) {
    case "NotAllowedError":
    case "SecurityError":
      return "Microphone access was denied. Allow it in the browser's site settings to talk; typing still works.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No microphone was found. Plug one in to talk; typing still works.";
    case "NotReadableError":
      return "The microphone is in use by another program. Typing still works.";
    default:
      return `The microphone could not start (${error?.message ?? error}). Typing still works.`;
  }
}

export class Microphone {
  /**
   * @param {(frame: ArrayBuffer, level: number) => void} onFrame each frame, as it is made
   */
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.stream = null;
    this.ctx = null;
    this.node = null;
  }

  get running() {
    return this.stream !== null;
  }

  /** Ask for the microphone and start capturing; rejects with the browser's error. */
  async start() {
    if (this.running) return;
    if (!navigator.mediaDevices?.getUserMedia) {
      throw Object.assign(new Error("the microphone needs a secure page (https, or localhost)"), {
        name: "SecurityError",
      });
    }
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: false, autoGainControl: false, channelCount: 1 },
    });
    try {
      const ctx = new AudioContext({ latencyHint: "interactive" }); // the device's rate
      await ctx.audioWorklet.addModule("/web/mic-worklet.js");
      const node = new AudioWorkletNode(ctx, "mic-capture", {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        channelCount: 1,
        channelCountMode: "explicit",
        processorOptions: {
          magic: MIC_MAGIC,
          targetRate: MIC_SAMPLE_RATE,
          frameSamples: (MIC_SAMPLE_RATE * FRAME_MS) / 1000,
        },
      });
      node.port.onmessage = ({ data }) => this.onFrame(data.frame, data.level);
      ctx.createMediaStreamSource(stream).connect(node);
      node.connect(ctx.destination); // it outputs silence; connected, it is always processed
      if (ctx.state === "suspended") await ctx.resume();
      this.stream = stream;
      this.ctx = ctx;
      this.node = node;
    } catch (error) {
      for (const track of stream.getTracks()) track.stop();
      throw error;
    }
  }

  /** Release the microphone (the browser's recording indicator goes off). */
  stop() {
    if (!this.running) return;
    for (const track of this.stream.getTracks()) track.stop();
    this.node.port.onmessage = null;
    this.ctx.close().catch(() => {});
    this.stream = null;
    this.ctx = null;
    this.node = null;
  }
}
