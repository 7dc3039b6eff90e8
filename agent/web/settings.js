// The voice, blend, speed, mode and transport controls: the options a prompt is sent with (and
// the leg it goes on), the voices and transports offered, the choice remembered in localStorage.

const SETTINGS_KEY = "voiceChat.settings";
const MODE = 'input[name="mode"]';
const TRANSPORT = 'input[name="transport"]';

export class Settings {
  /**
   * @param {{voice: HTMLSelectElement, blend: HTMLSelectElement, blendShare: HTMLInputElement,
   *          blendShareValue: HTMLElement, speed: HTMLInputElement, speedValue: HTMLElement,
   *          marks: HTMLInputElement}} ui
   */
  constructor({ voice, blend, blendShare, blendShareValue, speed, speedValue, marks }) {
    this.voice = voice;
    this.blend = blend;
    this.blendShare = blendShare;
    this.blendShareValue = blendShareValue;
    this.speed = speed;
    this.speedValue = speedValue;
    this.marks = marks;
  }

  /**
   * The options for the next prompt: {voice, speed, mode, transport, marks}. `voice` is null for
   * the server's default, a name, or a two-voice blend as `a(0.7)+b(0.3)` (docs/openai_api.md).
   */
  values() {
    const { voice, blend, blendShare, ...rest } = this.controls();
    if (!voice || !blend) return { voice, ...rest };
    const other = (1 - blendShare).toFixed(1);
    return { voice: `${voice}(${blendShare.toFixed(1)})+${blend}(${other})`, ...rest };
  }

  /** What the controls hold, as remembered: the blend's parts kept apart. */
  controls() {
    return {
      voice: this.voice.value || null,
      blend: this.blend.value || null,
      blendShare: Number(this.blendShare.value),
      speed: Number(this.speed.value),
      mode: document.querySelector(`${MODE}:checked`).value,
      transport: document.querySelector(`${TRANSPORT}:checked`).value,
      marks: this.marks.checked,
    };
  }

  /** Remember the controls' values whenever one changes. */
  listen() {
    this.speed.addEventListener("input", () => {
      this.showSpeed();
      this.save();
    });
    this.voice.addEventListener("change", () => {
      this.syncBlend();
      this.save();
    });
    this.blend.addEventListener("change", () => {
      this.syncBlend();
      this.save();
    });
    this.blendShare.addEventListener("input", () => {
      this.syncBlend();
      this.save();
    });
    this.marks.addEventListener("change", () => this.save());
    for (const radio of document.querySelectorAll(`${MODE}, ${TRANSPORT}`)) {
      radio.addEventListener("change", () => this.save());
    }
  }

  /** Put back the remembered speed and mode (the voice waits for the list: offerVoices). */
  restore() {
    const saved = this.saved();
    if (typeof saved.speed === "number") this.speed.value = String(saved.speed);
    if (saved.mode === "batch") document.querySelector(`${MODE}[value="batch"]`).checked = true;
    if (saved.transport === "sse") document.querySelector(`${TRANSPORT}[value="sse"]`).checked = true;
    if (saved.marks === false) this.marks.checked = false;
    if (typeof saved.blendShare === "number") this.blendShare.value = String(saved.blendShare);
    this.showSpeed();
  }

  /**
   * Fill the voice selectors: the voices, `defaultVoice` preselected; without one, "Server
   * default" first. A remembered voice (and blend) that is on the list wins.
   */
  offerVoices(voices, defaultVoice) {
    const options = defaultVoice ? [] : [new Option("Server default", "")];
    for (const voice of voices) options.push(new Option(voice, voice));
    this.voice.replaceChildren(...options);
    this.blend.replaceChildren(new Option("No blend", ""), ...voices.map((v) => new Option(v, v)));
    if (defaultVoice) this.voice.value = defaultVoice;
    const saved = this.saved();
    if (saved.voice && voices.includes(saved.voice)) this.voice.value = saved.voice;
    if (saved.blend && voices.includes(saved.blend)) this.blend.value = saved.blend;
    this.syncBlend();
  }

  /**
   * A blend needs a named first voice and a different second one: the blend list offers every
   * voice but the first, and the mix slider works only while a blend is chosen.
   */
  syncBlend() {
    const voice = this.voice.value;
    for (const option of this.blend.options) option.disabled = option.value !== "" && option.value === voice;
    if (!voice || this.blend.value === voice) this.blend.value = "";
    this.blend.disabled = !voice;
    this.blendShare.disabled = !this.blend.value;
    const share = Math.round(Number(this.blendShare.value) * 100);
    this.blendShareValue.textContent = `${share} / ${100 - share}`;
  }

  /** Offer the WebSocket leg only if the server does (/config's `transports`). */
  offerTransports(transports) {
    const websocket = document.querySelector(`${TRANSPORT}[value="websocket"]`);
    websocket.disabled = !transports.includes("websocket");
    if (websocket.disabled) document.querySelector(`${TRANSPORT}[value="sse"]`).checked = true;
  }

  showSpeed() {
    this.speedValue.textContent = `${Number(this.speed.value).toFixed(1)}×`;
  }

  save() {
    try {
      localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.controls()));
    } catch {
      // private mode: settings just are not remembered
    }
  }

  saved() {
    try {
      return JSON.parse(localStorage.getItem(SETTINGS_KEY)) || {};
    } catch {
      return {};
    }
  }
}
