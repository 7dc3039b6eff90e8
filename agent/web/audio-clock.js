// Whether sound really plays: mirrors the player's AudioContext into voiceChat.audio, and a
// second after a turn's first chunk checks that the audio clock advances. Some browsers keep
// it still until a click; then the page says so and the next click resumes the context.

export class AudioClock {
  /**
   * @param {import("./player.js").PcmPlayer} player
   * @param {object} chat the page state (state.js); its `audio` field is kept up to date
   * @param {HTMLElement} note where the page says that audio is blocked
   */
  constructor(player, chat, note) {
    this.player = player;
    this.chat = chat;
    this.note = note;
  }

  /** Copy the context's state, rate and the player's lead into voiceChat.audio. */
  sync() {
    const ctx = this.player.ctx;
    const audio = this.chat.audio;
    audio.contextState = ctx ? ctx.state : "none";
    audio.sampleRate = ctx ? ctx.sampleRate : null;
    audio.lead = this.player.lead;
    if (ctx && !ctx.onstatechange) ctx.onstatechange = () => this.sync();
  }

  /** A second from now: has the clock moved past `then` (seconds on the audio clock)? */
  check(then) {
    setTimeout(() => {
      this.sync();
      const running = this.player.paused || this.player.currentTime > then; // paused: by us
      this.chat.audio.running = running;
      this.note.hidden = running;
      if (!running) {
        this.note.textContent =
          `Audio is not playing: the browser keeps the audio clock stopped (${this.player.ctx?.state}). ` +
          "Click anywhere on the page to allow sound.";
      }
    }, 1000);
  }

  /** Resume a context that is not running on any click on the page. */
  listen() {
    document.addEventListener("pointerdown", () => {
      const ctx = this.player.ctx;
      if (ctx && ctx.state !== "running" && !this.player.paused) {
        ctx.resume().then(() => this.sync(), () => {});
      }
    });
  }
}
