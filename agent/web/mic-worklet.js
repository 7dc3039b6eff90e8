// The microphone's AudioWorklet: the device's audio in (at the context's rate, whatever the
// device runs at), 16 kHz mono s16le out, in frames of `frameSamples` samples, each posted to the
// page as one ready binary /ws frame: the MIC magic, then the PCM. The context runs at the
// device's rate because Firefox refuses a 16 kHz context fed by a microphone stream; so the
// resampling happens here: a windowed-sinc low-pass below the new Nyquist frequency, then linear
// interpolation at the output instants (at 48 kHz each output instant is an input sample). The
// filter is long enough to keep the speech band whole: flat (within 0.1 dB) to 7.5 kHz, -11 dB
// at 8 kHz, -79 dB at 8.5 kHz at 48 kHz (the 31 taps it had until issue 49 cut 6-7 kHz by 4 dB
// and 7-8 kHz by 10, where the fricatives are: "sea otters" was heard as "the otters"). It is
// evaluated only where an output sample needs it: 255 multiplications per output sample.
// Each frame also carries its RMS level, for the meter. Design: docs/web.md, "Listening".

const CUTOFF_HZ = 7900; // the low-pass's cutoff (the output's Nyquist frequency is 8 kHz)
const TAPS_AT_48K = 255; // its length at 48 kHz; other rates scale it, so its span in time holds

/** A windowed-sinc (Blackman) low-pass with its cutoff at `cutoff` of the input rate. */
function lowPass(cutoff, taps) {
  const h = new Float32Array(taps);
  const middle = (taps - 1) / 2;
  let sum = 0;
  for (let i = 0; i < taps; i++) {
    const x = i - middle;
    const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const window = 0.42 - 0.5 * Math.cos((2 * Math.PI * i) / (taps - 1)) + 0.08 * Math.cos((4 * Math.PI * i) / (taps - 1));
    h[i] = sinc * window;
    sum += h[i];
  }
  for (let i = 0; i < taps; i++) h[i] /= sum; // unit gain at DC
  return h;
}

class MicCapture extends AudioWorkletProcessor {
  constructor({ processorOptions }) {
    super();
    const { magic, targetRate, frameSamples } = processorOptions;
    this.magic = Uint8Array.from(magic);
    this.step = sampleRate / targetRate; // input samples per output sample
    const taps = 2 * Math.round((TAPS_AT_48K * sampleRate) / 48000 / 2) + 1; // odd
    this.filter = this.step > 1 ? lowPass(Math.min(CUTOFF_HZ, 0.47 * targetRate) / sampleRate, taps) : null;
    this.size = (this.filter?.length ?? 1) + 1; // input kept: the filter's span and one more
    this.ring = new Float32Array(2 * this.size); // written twice, so any span is contiguous
    this.at = 0; // ring position of the next input sample
    this.phase = 0; // where the next output sample lies after the one-back input, in input samples
    this.frame = new Int16Array(frameSamples);
    this.filled = 0;
    this.energy = 0;
  }

  /** The filtered input `back` samples before the newest (0 or 1). */
  filtered(back) {
    const newest = this.at - 1 + this.size - back; // in the ring's second copy
    if (this.filter === null) return this.ring[newest];
    const h = this.filter;
    const start = newest - h.length + 1;
    let sum = 0;
    for (let i = 0; i < h.length; i++) sum += h[i] * this.ring[start + i];
    return sum;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const samples = channels[0]; // mono: getUserMedia asks for one channel
    for (let i = 0; i < samples.length; i++) {
      this.ring[this.at] = this.ring[this.at + this.size] = samples[i];
      this.at = (this.at + 1) % this.size;
      // every output instant between the one-back input sample and this one
      while (this.phase <= 1) {
        const phase = this.phase;
        if (phase === 0) this.emit(this.filtered(1));
        else if (phase === 1) this.emit(this.filtered(0));
        else {
          const before = this.filtered(1);
          this.emit(before + (this.filtered(0) - before) * phase);
        }
        this.phase += this.step;
      }
      this.phase -= 1;
    }
    return true;
  }

  emit(value) {
    const clipped = Math.max(-1, Math.min(1, value));
    this.frame[this.filled++] = Math.round(clipped * 32767);
    this.energy += clipped * clipped;
    if (this.filled < this.frame.length) return;
    const bytes = new Uint8Array(this.magic.length + this.frame.byteLength);
    bytes.set(this.magic, 0);
    bytes.set(new Uint8Array(this.frame.buffer), this.magic.length); // little-endian, as s16le
    const level = Math.sqrt(this.energy / this.frame.length);
    this.port.postMessage({ frame: bytes.buffer, level }, [bytes.buffer]);
    this.filled = 0;
    this.energy = 0;
  }
}

registerProcessor("mic-capture", MicCapture);
