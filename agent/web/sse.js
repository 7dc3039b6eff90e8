// Incremental text/event-stream parsing over a fetch() body (EventSource cannot POST).
//
// Follows the HTML "event stream interpretation" rules for what this app needs: lines end in
// CRLF, LF or CR (our front doors write LF; other SSE servers may write CRLF); a line starting
// with ":" is a comment (the keep-alive ping); "data:" lines accumulate; a blank line
// dispatches. Events are yielded as soon as their blank line arrives, never when the body ends.

/**
 * Yield the JSON payload of every `data:` event in `response`'s body, as it arrives.
 * @param {Response} response a fetch response whose body is text/event-stream
 * @param {(bytes: number) => void} [onBytes] called with the size of each network chunk
 * @returns {AsyncGenerator<object>}
 */
export async function* readEvents(response, onBytes = () => {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data = [];
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        break;
      }
      onBytes(value.byteLength);
      buffer += decoder.decode(value, { stream: true });
      let start = 0;
      for (;;) {
        const cr = buffer.indexOf("\r", start);
        const lf = buffer.indexOf("\n", start);
        let end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
        if (end < 0) break;
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (end === cr && end === buffer.length - 1) break;
        const line = buffer.slice(start, end);
        start = end + (buffer[end] === "\r" && buffer[end + 1] === "\n" ? 2 : 1);
        if (line === "") {
          if (data.length) {
            const text = data.join("\n");
            data = [];
            yield JSON.parse(text);
          }
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "data") data.push(value);
        }
      }
      buffer = buffer.slice(start);
    }
  } finally {
    // Left early (the turn was stopped or superseded): close the body, do not drain it.
    if (!finished) reader.cancel().catch(() => {});
  }
}
