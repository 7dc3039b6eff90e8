// The chat transcript: a message pair per turn, the reply's text as it streams in, each spoken
// sentence wrapped in a span so the one being heard can be highlighted, errors as alerts, and
// a meta line under the reply (mode, voice, speed, first audio, how the turn ended).

const ERROR_TITLES = {
  tts_busy: "The speech server is busy, retrying",
  tts_reconnecting: "Speech was interrupted, reconnecting",
  tts_unavailable: "Speech is unavailable",
  synthesis_failed: "A sentence could not be spoken",
  llm_failed: "The model failed",
  superseded: "Interrupted by a newer prompt",
  network: "Connection failed",
  protocol: "Unreadable reply",
  unknown_voice: "Unknown voice",
  invalid_speed: "Invalid speed",
  prompt_too_long: "The message is too long",
};

const WORD = /[\p{L}\p{N}]/u;

/**
 * Where in `raw` (displayed text, markdown included) the speakable `spoken` text ends: the
 * letters and digits of `spoken` are matched in order, markup in between is skipped.
 * Returns -1 if they cannot all be found.
 */
function alignEnd(raw, spoken) {
  let i = 0;
  for (const ch of spoken) {
    if (!WORD.test(ch)) continue;
    const want = ch.toLowerCase();
    while (i < raw.length && raw[i].toLowerCase() !== want) i++;
    if (i >= raw.length) return -1;
    i++;
  }
  while (i < raw.length && !/\s/.test(raw[i]) && !WORD.test(raw[i])) i++; // closing marks
  return i;
}

/** The seq of the segment of `turn` playing at `time` on the audio clock, or null. */
export function segmentHeardAt(turn, time) {
  const segment = turn.segments.find((s) => s.startTime !== null && s.startTime <= time && time < s.endTime);
  return segment ? segment.seq : null;
}

/**
 * The word of `turn` being heard at `time` on the audio clock: {seq, index}, or null. The
 * chunk playing at `time` says how far into its segment's audio that is (chunks of a segment
 * may be apart after an underrun); the word is the last one started by then.
 */
export function wordHeardAt(turn, time) {
  for (const segment of turn.segments) {
    const chunk = segment.schedule.find((c) => c.startTime <= time && time < c.startTime + c.duration);
    if (!chunk) continue;
    const ms = (chunk.offset + time - chunk.startTime) * 1000;
    let index = -1;
    while (index + 1 < segment.words.length && segment.words[index + 1].start_ms <= ms) index++;
    return index < 0 ? null : { seq: segment.seq, index };
  }
  return null;
}

/**
 * Where the letters and digits of `word` first appear in `text` from `from`: [start, end) or
 * null. A mark's word is the text as written ("$5.99" while "five dollars and ninety-nine
 * cents" is said), so a symbol it starts with ("$", "#", "@") is lit with it.
 */
function findWord(text, word, from) {
  const letters = [...word].filter((ch) => WORD.test(ch)).map((ch) => ch.toLowerCase());
  if (!letters.length) return null;
  const lead = word.slice(0, word.search(WORD));
  for (let start = from; start < text.length; start++) {
    if (text[start].toLowerCase() !== letters[0]) continue;
    let i = start + 1;
    let k = 1;
    while (k < letters.length && i < text.length) {
      const ch = text[i].toLowerCase();
      if (ch === letters[k]) k++;
      else if (WORD.test(ch)) break;
      i++;
    }
    if (k !== letters.length) continue;
    const before = start - lead.length;
    return lead && before >= from && text.slice(before, start) === lead ? [before, i] : [start, i];
  }
  return null;
}

/**
 * How many characters of `text` were heard by `fraction` of its audio: up to the last word
 * (a run of non-spaces) whose middle lies within that fraction of its characters, as the
 * server's memory counts without word timings (agent/core/memory.py).
 */
function heardInProportion(text, fraction) {
  const limit = fraction * text.length;
  let end = 0;
  for (const match of text.matchAll(/\S+/g)) {
    if (match.index + match[0].length / 2 > limit) break;
    end = match.index + match[0].length;
  }
  return end;
}

/** The text node of `root` where its character `index` falls, and the offset in that node. */
function textPoint(root, index) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let node;
  let seen = 0;
  while ((node = walker.nextNode())) {
    if (index <= seen + node.data.length) return { node, offset: index - seen };
    seen += node.data.length;
  }
  return null;
}

/** The number of characters of `root` before `element` (a descendant) begins. */
function charsBefore(root, element) {
  const range = document.createRange();
  range.setStart(root, 0);
  range.setEndBefore(element);
  return range.toString().length;
}

/** The list of messages (#transcript) and the placeholder shown while it is empty. */
export class Transcript {
  constructor(list, empty) {
    this.list = list;
    this.empty = empty;
    this.views = new Map(); // turn number -> TurnView
  }

  /** Show a new turn (an entry of voiceChat.turns): its prompt and the reply to come. */
  add(turn) {
    const view = new TurnView(this, turn);
    this.views.set(turn.n, view);
    return view;
  }

  /** The view of turn number `n`, if it has one. */
  view(n) {
    return this.views.get(n);
  }

  /** Follow new content, unless the reader has scrolled up. */
  scroll() {
    const list = this.list;
    if (list.scrollHeight - list.scrollTop - list.clientHeight < 80) list.scrollTop = list.scrollHeight;
  }
}

/** One turn in the transcript: the user's message and the agent's reply. */
class TurnView {
  constructor(transcript, turn) {
    this.transcript = transcript;
    this.turn = turn;
    const user = document.createElement("li");
    user.className = turn.spoken ? "msg user spoken" : "msg user";
    user.innerHTML = `<span class="who">${turn.spoken ? "You said" : "You"}</span><p class="body"></p>`;
    user.querySelector(".body").textContent = turn.prompt;
    this.user = user;

    const agent = document.createElement("li");
    agent.className = "msg agent pending";
    agent.innerHTML =
      '<span class="who">Agent</span><p class="body"></p><div class="notes"></div>' +
      '<p class="meta"></p>';
    this.agent = agent;
    this.body = agent.querySelector(".body");
    this.notes = agent.querySelector(".notes");
    this.meta = agent.querySelector(".meta");
    this.tail = document.createTextNode("");
    this.body.append(this.tail);
    this.spans = new Map();
    this.speaking = null;
    this.words = new Map(); // seq -> {rest: the text node not yet matched, spans: word spans (or null)}
    this.heard = null; // the highlighted word's span
    transcript.empty.hidden = true;
    transcript.list.append(user, agent);
    this.setMeta();
  }

  /** The user's message now reads `prompt` (a turn that continues a withdrawn one). */
  setPrompt(prompt) {
    this.user.querySelector(".body").textContent = prompt;
  }

  /** Take the turn off the transcript: it was withdrawn, never said. */
  remove() {
    this.user.remove();
    this.agent.remove();
    this.transcript.views.delete(this.turn.n);
    this.transcript.empty.hidden = this.transcript.views.size > 0;
  }

  appendText(text) {
    this.agent.classList.remove("pending");
    this.tail.appendData(text);
    this.transcript.scroll();
  }

  /** Wrap the displayed text that segment `seq` speaks, so it can be highlighted. */
  markSegment(seq, spoken) {
    const raw = this.tail.data;
    const found = alignEnd(raw, spoken);
    const end = found < 0 ? raw.length : found;
    const space = raw.length - raw.trimStart().length; // the gap before it is not highlighted
    const start = Math.min(space, end);
    const span = document.createElement("span");
    span.className = "seg";
    span.dataset.seq = String(seq);
    span.textContent = raw.slice(start, end);
    this.tail.data = raw.slice(end);
    if (start > 0) this.body.insertBefore(document.createTextNode(raw.slice(0, start)), this.tail);
    this.body.insertBefore(span, this.tail);
    this.spans.set(seq, span);
  }

  /** Wrap the words of segment `seq` that timings arrived for, in order, so each can be highlighted. */
  markWords(seq, words) {
    const span = this.spans.get(seq);
    if (!span) return;
    let marks = this.words.get(seq);
    if (!marks) {
      span.normalize();
      marks = { rest: span.firstChild ?? span.appendChild(document.createTextNode("")), spans: [] };
      this.words.set(seq, marks);
    }
    for (const word of words) {
      const found = findWord(marks.rest.data, word.text, 0);
      if (!found) {
        marks.spans.push(null); // not in the displayed text: timed, not highlighted
        continue;
      }
      const middle = marks.rest.splitText(found[0]);
      marks.rest = middle.splitText(found[1] - found[0]);
      const wrap = document.createElement("span");
      wrap.className = "word";
      wrap.dataset.index = String(marks.spans.length);
      middle.replaceWith(wrap);
      wrap.append(middle);
      marks.spans.push(wrap);
    }
  }

  /** Highlight word `index` of segment `seq` as the one being heard (null: none). */
  setWord(heard) {
    const span = heard ? (this.words.get(heard.seq)?.spans[heard.index] ?? null) : null;
    if (span === this.heard) return;
    this.heard?.classList.remove("heard");
    this.heard = span;
    span?.classList.add("heard");
  }

  /** Highlight segment `seq` as the one being heard (null: none). */
  setSpeaking(seq) {
    if (seq === this.speaking) return;
    this.spans.get(this.speaking)?.classList.remove("speaking");
    this.speaking = seq;
    this.spans.get(seq)?.classList.add("speaking");
  }

  /** A tool call began: a line naming it, until it ends. */
  showTool(id, name) {
    const note = document.createElement("div");
    note.className = "tool";
    note.dataset.id = id;
    note.dataset.status = "running";
    note.textContent = `Using ${name}…`;
    this.notes.append(note);
    this.agent.classList.remove("pending");
    this.transcript.scroll();
  }

  /** Tool call `id` ended: how, and how long it took. */
  endTool(id, status, durationMs) {
    const note = [...this.notes.querySelectorAll(".tool")].find((n) => n.dataset.id === id);
    if (!note) return;
    const name = note.textContent.replace(/^Using /, "").replace(/…$/, "");
    const how = { ok: "used", error: "failed", cancelled: "cancelled" }[status] ?? status;
    note.dataset.status = status;
    note.textContent = `${name} ${how} (${Math.round(durationMs)} ms)`;
  }

  /**
   * Playback of the reply was cut at `position` ({seq, ms}: `ms` into segment `seq`'s audio;
   * null: it played to its end): what followed was never heard, so it is struck through
   * (`.unheard`), as the server keeps only what was heard (docs/events.md, `heard`).
   */
  showUnheard(position) {
    if (position === null) return;
    const span = this.spans.get(position.seq);
    const cut = span ? charsBefore(this.body, span) + this.heardChars(span, position) : 0;
    const point = textPoint(this.body, cut);
    if (point === null) return;
    const walker = document.createTreeWalker(this.body, NodeFilter.SHOW_TEXT);
    walker.currentNode = point.node.splitText(point.offset);
    const rest = [walker.currentNode];
    while (walker.nextNode()) rest.push(walker.currentNode);
    for (const node of rest.filter((n) => n.data.trim())) {
      const unheard = document.createElement("span");
      unheard.className = "unheard";
      node.replaceWith(unheard);
      unheard.append(node);
    }
    this.agent.dataset.cut = "true";
  }

  /** How many characters of segment `seq`'s span (`span`) were heard by `ms` into its audio. */
  heardChars(span, { seq, ms }) {
    const segment = this.turn.segments.find((s) => s.seq === seq);
    const sentMs = (segment?.audioS ?? 0) * 1000;
    if (sentMs === 0) return 0;
    const text = span.textContent;
    const words = segment.words;
    if (ms >= sentMs && (segment.endMs !== null || !words.length)) return text.length; // all of it
    const played = words.findLastIndex((w) => (w.start_ms + w.end_ms) / 2 <= Math.min(ms, sentMs));
    const wrap = played < 0 ? null : this.words.get(seq)?.spans[played];
    if (!wrap) return played < 0 && words.length ? 0 : heardInProportion(text, ms / sentMs);
    let end = charsBefore(span, wrap) + wrap.textContent.length;
    while (end < text.length && !/\s/.test(text[end]) && !WORD.test(text[end])) end++; // its closing marks
    return end;
  }

  showError(code, message) {
    const note = document.createElement("div");
    note.className = "error";
    note.setAttribute("role", "alert");
    const title = document.createElement("strong");
    title.textContent = ERROR_TITLES[code] ?? "The request failed";
    const detail = document.createElement("span");
    detail.textContent = ` ${message} `;
    const tag = document.createElement("code");
    tag.textContent = code;
    note.append(title, detail, tag);
    this.notes.append(note);
    this.agent.classList.remove("pending");
    this.transcript.scroll();
  }

  /** The turn's stream is over: show how it ended. */
  finish() {
    this.setMeta();
    this.agent.classList.remove("pending");
  }

  setMeta() {
    const t = this.turn;
    const parts = [t.mode, t.voice ?? "default voice", `${t.speed.toFixed(1)}×`];
    if (t.latency.ttfaMs !== null) parts.push(`first audio ${(t.latency.ttfaMs / 1000).toFixed(2)} s`);
    const label = {
      streaming: "",
      complete: "",
      stopped: "stopped",
      interrupted: "interrupted",
      failed: "failed",
    }[t.status];
    if (label) parts.push(label);
    this.meta.textContent = parts.join(" · ");
    this.agent.dataset.status = t.status;
  }
}
