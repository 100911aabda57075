/* GPT vs BERT computed on this device, as the server computes it (POST /api/compare:
   app/routers/compare.py, app/tasks/compare.py), for the static copy and for when the server is away
   (lib/compute.js). Family-blind: every family whose page pieces (static/families/<name>.js) carry a
   `device.compare` reader and whose model the set holds takes part, in the families' order (GPT
   reads the left of a position, BERT both sides):
     room(config)               {chars, why}: how much of a text it reads (why: null when it reads
                                the last part of a longer one)
     guess(engine, ids, pos)    {probs (over the ordinary characters) or null, reads: what it read}
     strip(engine, ids)         p(the true character) at every position (null where it cannot say)
   compare(engine, body)   the body of POST /api/compare -> its answer: each reader's guess at one
                           position, keyed by its family, and the strip (every reader's probability of
                           every true character)
   onDevice.compare(body)  the same on this page's engine (lib/engine.js) */
import { FIRST_CHAR, UNK, EngineError, ranked } from "./engine_core.js";
import { engineFor } from "./engine.js";
import { PIECES, label } from "../families/index.js";

const MAX_COMPARE_CHARS = 64; // app/schemas: MAX_COMPARE_CHARS

function entropy(p) {
  let h = 0;
  for (const x of p) if (x > 0) h -= x * Math.log(x);
  return h;
}

function guess(vocab, p, truth, topK, reads) {
  const known = truth >= FIRST_CHAR;
  const po = known ? p[truth - FIRST_CHAR] : null;
  return { available: true, p_true: po, rank: known ? p.filter((x) => x > po).length + 1 : null, entropy: entropy(p),
    top: ranked(vocab, p, topK), reads };
}

function checkCompare(body) {
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  if (Array.from(text).length > MAX_COMPARE_CHARS) {
    throw new EngineError("text: String should have at most " + MAX_COMPARE_CHARS + " characters", "text");
  }
  const position = body.position;
  if (!(Number.isInteger(position) && position >= 0)) throw new EngineError("position: Input should be greater than or equal to 0", "position");
  const topK = body.top_k === undefined ? 5 : body.top_k;
  if (!(Number.isInteger(topK) && topK >= 1 && topK <= 20)) throw new EngineError("top_k: must be a whole number from 1 to 20", "top_k");
  return { text, position, topK, strip: body.strip === undefined ? true : !!body.strip };
}

/* The readers of this set: [[family, its compare reader, its label]]. */
function readers(engine) {
  return Object.entries(PIECES).filter(([name, p]) => p.device && p.device.compare && engine.manifest.models[name])
    .map(([name, p]) => [name, p.device.compare, label(name)]);
}

export async function compare(engine, body) {
  const req = checkCompare(body);
  const vocab = engine.vocab;
  const chars = Array.from(req.text);
  const those = readers(engine);
  for (const [name, reader, title] of those) {
    const config = engine.config(name);
    const room = reader.room(config);
    if (room.why && chars.length > room.chars) {
      throw new EngineError("text is " + chars.length + " characters long; " + title + " reads at most " + room.chars +
        " (" + room.why + ")", "text");
    }
  }
  const pos = req.position;
  if (pos >= chars.length) throw new EngineError("position " + pos + " is out of range for a text of " + chars.length + " characters", "position");
  const [ids, unknown] = vocab.encode(req.text);
  const out = { tokens: ids.map((t) => vocab.token(t)), position: pos, char: ids[pos] !== UNK ? chars[pos] : "[UNK]" };
  let strip = null;
  if (req.strip) {
    strip = ids.map((t, i) => ({ position: i, char: vocab.token(t) }));
    for (const [name, reader] of those) {
      (await reader.strip(engine, ids)).forEach((p, i) => { strip[i][name] = p; });
    }
  }
  for (const [name, reader] of those) {
    const g = await reader.guess(engine, ids, pos);
    out[name] = g.probs ? guess(vocab, g.probs, ids[pos], req.topK, g.reads)
      : { available: false, p_true: null, rank: null, entropy: null, top: [], reads: g.reads };
  }
  return Object.assign(out, { strip, unknown_chars: unknown });
}

/* The models the compare page downloads ahead (lib/compute.js warmUp): its readers'. */
export const READERS = (key) => !!(PIECES[key] && PIECES[key].device && PIECES[key].device.compare);

export const onDevice = {
  compare: async (body) => compare(await engineFor(body && body.model), body),
};
