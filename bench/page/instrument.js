// The page benchmark's init script (bench/page/): runs before any of the page's own code and
// records, on the page's clock (performance.now(), ms), what the user hears and says, whatever
// the page's modules do. Nothing here changes what the page does.
//
// - Every AudioBufferSourceNode started on any AudioContext: when it plays (the audio clock's
//   `when`, mapped to the page's clock through the context's output timestamp) and how long.
// - Every WebSocket message: received (JSON: its type; binary: its size) and sent (JSON: its
//   type; a microphone frame: its PCM, base64, to find the end of speech in what was captured).
// The benchmark reads it all as `window.__page`.
(() => {
  const record = { sources: [], received: [], sent: [], mic: [], submitted: [] };
  Object.defineProperty(window, "__page", { value: record });
  // A typed prompt starts when its form is submitted (Enter), before the page opens its socket.
  addEventListener("submit", () => record.submitted.push(performance.now()), true);
  const MIC = [0, 77, 73, 67]; // "\0MIC": a microphone frame's magic (agent/browser_leg.py)

  function playsAt(ctx, when) {
    // The page's clock when the sample at `when` on the audio clock is heard. The output
    // timestamp pairs the sample being heard now (contextTime, behind currentTime by the
    // output's latency) with the page's clock: the latency is in it already. Without one,
    // currentTime is now, and the sample is heard the context's latencies later.
    const at = Math.max(when, ctx.currentTime);
    const stamp = ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
    if (stamp && stamp.performanceTime > 0) {
      return stamp.performanceTime + (at - stamp.contextTime) * 1000;
    }
    const latencyMs = ((ctx.outputLatency || 0) + (ctx.baseLatency || 0)) * 1000;
    return performance.now() + (at - ctx.currentTime) * 1000 + latencyMs;
  }

  const start = AudioBufferSourceNode.prototype.start;
  AudioBufferSourceNode.prototype.start = function (when = 0, ...rest) {
    const ctx = this.context;
    record.sources.push({
      at: performance.now(),
      when: Math.max(when, ctx.currentTime),
      now: ctx.currentTime, // the audio clock when it was scheduled: `when - now` was queued
      plays: playsAt(ctx, when),
      duration: this.buffer ? this.buffer.duration : 0,
      rate: ctx.sampleRate,
    });
    return start.call(this, when, ...rest);
  };

  function base64(bytes) {
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary);
  }

  function typeOf(text) {
    try {
      return JSON.parse(text).type ?? null;
    } catch {
      return null;
    }
  }

  const Native = window.WebSocket;
  class RecordedSocket extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", ({ data }) => {
        const t = performance.now();
        if (typeof data === "string") record.received.push({ t, type: typeOf(data), text: data });
        else record.received.push({ t, type: "binary", bytes: data.byteLength ?? data.size });
      });
    }

    send(data) {
      const t = performance.now();
      if (typeof data === "string") {
        record.sent.push({ t, type: typeOf(data), text: data });
      } else {
        const view = ArrayBuffer.isView(data) ? data : new Uint8Array(data);
        const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
        if (MIC.every((b, i) => bytes[i] === b)) {
          record.mic.push({ t, pcm: base64(bytes.subarray(MIC.length)) });
        }
      }
      return super.send(data);
    }
  }
  window.WebSocket = RecordedSocket;
})();
