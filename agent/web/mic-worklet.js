// The microphone's AudioWorklet: the device's audio in (at the context's rate, whatever the
// device runs at), 16 kHz mono s16le out, in frames of `frameSamples` samples, each posted to the
// page as one ready binary /ws frame: the MIC magic, then the PCM. The context runs at the
// device's rate because Firefox refuses a 16 kHz context fed by a microphone stream; so the
// resampling happens here: a windowed-sinc low-pass below the new Nyquist frequency, then linear
// interpolation at the output instants. Each frame also carries its RMS level, for the meter.
// Design: docs/web.md, "Listening".

const TAPS = 31; // the low-pass filter's length, at the input rate

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
    this.filter = this.step > 1 ? lowPass((0.45 * targetRate) / sampleRate, TAPS) : null;
    this.history = new Float32Array(TAPS); // the last TAPS input samples, a ring
    this.at = 0; // ring position of the next input sample
    this.previous = 0; // the last filtered sample, and the one now
    this.current = 0;
    this.phase = 0; // where the next output sample lies after `previous`, in input samples
    this.frame = new Int16Array(frameSamples);
    this.filled = 0;
    this.energy = 0;
  }

  filtered(sample) {
    if (this.filter === null) return sample;
    this.history[this.at] = sample;
    this.at = (this.at + 1) % TAPS;
    let sum = 0;
    for (let i = 0; i < TAPS; i++) sum += this.filter[i] * this.history[(this.at + i) % TAPS];
    return sum;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const samples = channels[0]; // mono: getUserMedia asks for one channel
    for (let i = 0; i < samples.length; i++) {
      this.previous = this.current;
      this.current = this.filtered(samples[i]);
      // every output instant between the previous input sample and this one
      while (this.phase <= 1) {
        this.emit(this.previous + (this.current - this.previous) * this.phase);
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
