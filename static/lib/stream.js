/* Server-sent events, both ways the pages receive them.
   postEvents(url, body, onEvent, signal)
                  POST a JSON body (with the chosen model set, as api() sends it) and read the
                  response as server-sent events: onEvent(name, data) per event (data parsed from
                  JSON). A busy 503 is retried as api() retries it; a refusal throws ApiError.
                  Resolves when the stream ends. POST, not EventSource's GET: a long prompt would
                  not fit in a URL.
   listen(url, handlers)
                  an EventSource whose named events call handlers[name](data) with data parsed
                  from JSON (a malformed event is skipped); returns the EventSource */
import { errorOf, retrying } from "./api.js";
import { modelId } from "./state.js";
import { siteUrl } from "./site.js";

/* Blocks end with a blank line; ":" lines keep the connection alive. Returns the unfinished rest. */
export function parseEvents(buffer, onEvent) {
  let text = buffer.replace(/\r\n/g, "\n");
  let cut;
  while ((cut = text.indexOf("\n\n")) >= 0) {
    const block = text.slice(0, cut);
    text = text.slice(cut + 2);
    let event = "message";
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
    }
    if (data) onEvent(event, JSON.parse(data));
  }
  return text;
}

export async function postEvents(url, body, onEvent, signal) {
  const model = modelId();
  const payload = JSON.stringify(model ? Object.assign({ model }, body) : body);
  const response = await retrying(() => fetch(siteUrl(url), { method: "POST", signal,
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" }, body: payload }));
  if (!response.ok) throw await errorOf(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), onEvent);
  }
}

export function listen(url, handlers) {
  const source = new EventSource(url);
  for (const [name, fn] of Object.entries(handlers)) {
    source.addEventListener(name, (e) => {
      let data;
      try {
        data = JSON.parse(e.data);
      } catch (err) {
        return; // skip a malformed event
      }
      fn(data);
    });
  }
  return source;
}
