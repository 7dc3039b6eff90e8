// Keeps the page in step with its state: the status pill and the Stop button, redraws of the
// latency panel batched (at most one each PANEL_MS), and the frame loop that, while audio
// plays (and only then), highlights the sentence being heard and moves the timeline's playhead.

import { renderLatency } from "./latency.js";
import { sinceSent } from "./state.js";
import { segmentHeardAt, wordHeardAt } from "./transcript.js";

// The latency panel is redrawn at most this often, for an event or the playhead: it is read,
// not watched frame by frame, and a redraw (the timeline's SVG, rebuilt) on every streamed
// token cost Chromium a third of a core while the first sentence was being synthesized on the
// same two cores (docs/web.md, "Where the time goes").
const PANEL_MS = 100;

export class Display {
  /**
   * @param {object} options
   * @param {object} options.chat the page state (state.js)
   * @param {import("./player.js").PcmPlayer} options.player
   * @param {import("./transcript.js").Transcript} options.transcript
   * @param {() => object | null} options.currentTurn the turn being streamed or played
   * @param {HTMLElement} options.status the status pill
   * @param {HTMLButtonElement} options.stopButton the Stop button
   * @param {object} options.panel the latency panel's elements (latency.js)
   */
  constructor({ chat, player, transcript, currentTurn, status, stopButton, panel }) {
    this.chat = chat;
    this.player = player;
    this.transcript = transcript;
    this.currentTurn = currentTurn;
    this.status = status;
    this.stopButton = stopButton;
    this.panel = panel;
    this.queued = false;
    this.drawnAt = -Infinity; // when the panel was last drawn (performance.now())
    this.ticking = false; // the frame loop runs (`wake`)
  }

  /** The page's state: idle | streaming (a request is open) | playing (audio left). */
  setState(state) {
    this.chat.state = state;
    this.stopButton.disabled = state === "idle";
    document.body.dataset.state = state;
    this.renderStatus();
  }

  /** Highlight segment `seq` of `turn` as the one being heard (null: none). */
  setSpeaking(turn, seq) {
    this.transcript.view(turn.n)?.setSpeaking(seq);
    this.chat.speaking = seq === null ? null : { turn: turn.n, seq };
    if (seq === null) this.setHeard(turn, null, null);
  }

  /** Highlight the word `heard` ({seq, index} or null) of `turn`, as heard at clock time `at`. */
  setHeard(turn, heard, at) {
    this.transcript.view(turn.n)?.setWord(heard);
    const text = heard ? turn.segments.find((s) => s.seq === heard.seq)?.words[heard.index]?.text : null;
    this.chat.heard = heard ? { turn: turn.n, seq: heard.seq, index: heard.index, text, at } : null;
  }

  renderStatus() {
    const { chat, status } = this;
    const turn = this.currentTurn();
    let label = "Ready";
    if (chat.speaking) label = "Speaking";
    else if (chat.state === "streaming") label = turn && turn.text ? "Writing" : "Waiting for the model";
    else if (chat.state === "playing") label = "Speaking";
    status.textContent = label;
    status.dataset.state = chat.speaking ? "speaking" : chat.state;
  }

  /** Redraw at an animation frame at least PANEL_MS after the last (once, however often asked). */
  render() {
    if (this.queued) return;
    this.queued = true;
    const frame = () =>
      requestAnimationFrame(() => {
        this.queued = false;
        this.draw();
      });
    const wait = this.drawnAt + PANEL_MS - performance.now();
    if (wait > 0) setTimeout(frame, wait);
    else frame();
  }

  draw() {
    this.drawnAt = performance.now();
    const turn = this.chat.turns[this.chat.turns.length - 1] ?? null;
    let playhead = null;
    if (turn && turn === this.currentTurn() && this.chat.state !== "idle" && this.player.busy(turn.n)) {
      playhead = sinceSent(turn);
    }
    renderLatency(this.panel, turn, playhead);
    this.renderStatus();
  }

  /**
   * Run the frame loop while a turn's audio plays (call it when a chunk is scheduled): it
   * highlights what is heard and moves the playhead, and stops once nothing plays, so that an
   * idle page, or one waiting for its first audio, asks Chromium for no frames (a loop that
   * always ran cost a sixth of a core, taken from the synthesis on the same cores).
   */
  wake() {
    if (this.ticking) return;
    this.ticking = true;
    requestAnimationFrame(this.tick);
  }

  tick = (now) => {
    const turn = this.currentTurn();
    if (!turn || !this.player.busy(turn.n)) {
      if (turn && this.chat.heard) this.setHeard(turn, null, null); // a gap: no word is heard
      this.ticking = false;
      return;
    }
    requestAnimationFrame(this.tick);
    const time = this.player.currentTime;
    const seq = segmentHeardAt(turn, time);
    const view = this.transcript.view(turn.n);
    if (view && view.speaking !== seq) {
      this.setSpeaking(turn, seq);
      this.renderStatus();
    }
    if (turn.marks) this.setHeard(turn, wordHeardAt(turn, time), time);
    if (now - this.drawnAt > PANEL_MS) this.draw();
  };

  /** Redraw whenever the timeline's width changes. */
  start() {
    let width = 0;
    new ResizeObserver(([entry]) => {
      const w = Math.round(entry.contentRect.width);
      if (w !== width) {
        width = w;
        this.render();
      }
    }).observe(this.panel.timeline);
  }
}
