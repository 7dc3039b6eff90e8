// This tab's conversation id, made on every page load (a reload starts a new conversation,
// like the empty transcript). SESSION_HEADER (browser-leg.js) carries it on every request: the
// header AgentCore uses to route a session.

/** A UUID v4: crypto.randomUUID() in secure contexts (localhost included), else by hand. */
export function newConversationId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
