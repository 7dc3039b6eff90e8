// The voice, speed, mode and transport controls: the options a prompt is sent with (and the
// leg it goes on), the voices and transports offered, the choice remembered in localStorage.

const SETTINGS_KEY = "voiceChat.settings";
const MODE = 'input[name="mode"]';
const TRANSPORT = 'input[name="transport"]';

export class Settings {
  /**
   * @param {{voice: HTMLSelectElement, speed: HTMLInputElement, speedValue: HTMLElement,
   *          marks: HTMLInputElement}} ui
   */
  constructor({ voice, speed, speedValue, marks }) {
    this.voice = voice;
    this.speed = speed;
    this.speedValue = speedValue;
    this.marks = marks;
  }

  /** The options for the next prompt: {voice (null: the server's default), speed, mode, transport, marks}. */
  values() {
    const mode = document.querySelector(`${MODE}:checked`).value;
    const transport = document.querySelector(`${TRANSPORT}:checked`).value;
    const voice = this.voice.value || null;
    return { voice, speed: Number(this.speed.value), mode, transport, marks: this.marks.checked };
  }

  /** Remember the controls' values whenever one changes. */
  listen() {
    this.speed.addEventListener("input", () => {
      this.showSpeed();
      this.save();
    });
    this.voice.addEventListener("change", () => this.save());
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
    this.showSpeed();
  }

  /**
   * Fill the voice selector: the voices, `defaultVoice` preselected; without one, "Server
   * default" first. A remembered voice that is on the list wins.
   */
  offerVoices(voices, defaultVoice) {
    const options = defaultVoice ? [] : [new Option("Server default", "")];
    for (const voice of voices) options.push(new Option(voice, voice));
    this.voice.replaceChildren(...options);
    if (defaultVoice) this.voice.value = defaultVoice;
    const saved = this.saved();
    if (saved.voice && voices.includes(saved.voice)) this.voice.value = saved.voice;
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
      localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.values()));
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
