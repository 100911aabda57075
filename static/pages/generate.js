/* Generation Walkthrough: GPT's next-character distribution from POST /api/next-token, shown raw,
   after temperature, and after top-k/top-p. Step asks the server for the next character with the
   seed and the draw index (app/sampling.py: u_i = splitmix32(splitmix32(seed) ^ i) / 2^32, inverse CDF
   over the final distribution), the same draw as /api/generate and the stream make, so stepping 30
   characters gives the same text as fast sampling with the same prompt, knobs and seed.
   URL: prompt, out (generated so far), temperature, top_k, top_p, seed, view (distribution tab).
   The distribution chart (tabs, panels, table) is generate_dists.js; the text so far, generate_text.js. */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { charName, pct, num, thousands, clamp, len, cut, chars as textChars } from "../lib/text.js";
import { clearError, fieldMessage, clearFieldErrors, report } from "../lib/errors.js";
import { ApiError, info, latest } from "../lib/api.js";
import { urlState, isProjector } from "../lib/state.js";
import { ask, stream, badge, lastWhere, warmUp } from "../lib/compute.js";
import { onDevice, needs } from "../lib/engine.js";
import { shortcutsEnabled, valueText } from "../lib/chrome.js";
import { linkHas } from "../lib/corpus.js";
import { drawDists, showDists, wireTabs } from "./generate_dists.js";
import { appendVisible, drawText, tail } from "./generate_text.js";

const phone = window.matchMedia("(max-width: 600px)").matches;
const ROWS = isProjector() ? 7 : phone ? 8 : 12; // bars per panel (all of them are in the table)
const MAX_OUT = 1000; // the server steps at most limits.max_new_tokens characters (see maxOut)
const STREAM_CHARS = 200;
const VIEWS = ["all", "raw", "tempered", "final"];
const SHIPPED_PROMPT = "To be, or not to be, ";
const state = urlState({ prompt: SHIPPED_PROMPT, out: "", temperature: 1, top_k: 0, top_p: 1, seed: 0, view: "" });
const v = state.values;
let ownPrompt = null; // a training run's set: the first words of a line of its own held-out text (lib/corpus.js)
let limits = null; // from /api/models (info)
let vocabSize = 100;
let context = null; // GPT's context (card), for the "only the last N characters" note
const previews = latest(); // the latest answer wins
let busy = false;
let playing = false;

const promptBox = $("#g-prompt");
const temp = $("#g-temp");
const topk = $("#g-topk");
const topp = $("#g-topp");
const seedBox = $("#g-seed");
const FIELDS = {
  prompt: { control: promptBox, say: (e) => (/empty/.test(e.detail || "") ? "The prompt is empty: type a few words first."
    : "The prompt is too long for the server (at most " + thousands(maxPrompt()) + " characters).") },
  temperature: { control: temp, say: () => "This temperature is not allowed here." },
  top_k: { control: topk, say: () => "Top-k must be between 0 (off) and " + vocabSize + " (every character)." },
  top_p: { control: topp, say: () => "Top-p must be above 0 and at most 1 (off)." },
  seed: { control: seedBox, say: () => "The seed must be a whole number from 0 to " + thousands(maxSeed()) + "." },
  generated: { control: promptBox, say: () => "The generated text does not fit the prompt; press Reset." },
};
// Until /api/models answers, nothing is cut or clamped here (the server still checks).
const maxSeed = () => (limits && Number.isFinite(limits.max_seed) ? limits.max_seed : Infinity);
const maxOut = () => (limits && Number.isFinite(limits.max_new_tokens) ? limits.max_new_tokens : MAX_OUT);
const maxPrompt = () => (limits && Number.isFinite(limits.max_prompt_chars) ? limits.max_prompt_chars : Infinity);

/* ---------- state and controls ---------- */
function sanitize() {
  v.temperature = clamp(Math.round(v.temperature * 20) / 20, 0, 2);
  v.top_k = clamp(Math.round(v.top_k), 0, vocabSize);
  v.top_p = clamp(Math.round(v.top_p * 20) / 20, 0.05, 1);
  v.seed = clamp(Math.round(v.seed) || 0, 0, maxSeed());
  v.out = cut(v.out, maxOut());
  if (!VIEWS.includes(v.view)) v.view = "";
}

function showValues() {
  const t = v.temperature === 0 ? "0 (greedy)" : num(v.temperature, 2);
  const k = v.top_k === 0 ? "0 (off)" : String(v.top_k);
  const p = v.top_p >= 1 ? "1.00 (off)" : num(v.top_p, 2);
  $("#g-temp-out").textContent = t;
  $("#g-topk-out").textContent = k;
  $("#g-topp-out").textContent = p;
  valueText(temp, "temperature " + (v.temperature === 0 ? "0, greedy: always the most likely character" : num(v.temperature, 2)));
  valueText(topk, v.top_k === 0 ? "top-k off (0): every character kept" : "keep the " + v.top_k + " most likely characters");
  valueText(topp, v.top_p >= 1 ? "top-p off (1.00): every character kept" : "keep " + Math.round(v.top_p * 100) + " % of the probability mass");
}

function syncControls() {
  promptBox.value = v.prompt;
  temp.value = String(v.temperature);
  topk.max = String(vocabSize);
  topk.value = String(v.top_k);
  topp.value = String(v.top_p);
  if (Number.isFinite(maxSeed())) seedBox.max = String(maxSeed());
  seedBox.value = String(v.seed);
  showValues();
  showView();
}

const fullText = () => v.prompt + v.out;

/* GPT reads at most `context` characters: say so when the text is longer. */
function contextNote() {
  const n = len(fullText());
  fieldMessage(promptBox, context && n > context
    ? "GPT reads only the last " + context + " characters of the text (it is " + thousands(n) + " characters long)." : "", "notice");
}

function renderText(highlightLast) {
  const chars = drawText($("#g-text"), v.prompt, v.out, highlightLast);
  $("#g-count").textContent = String(chars.length);
  $("#g-undo").disabled = chars.length === 0;
  contextNote();
}

/* ---------- the three distributions (pages/generate_dists.js draws them) ---------- */
const view = () => v.view || (phone ? "final" : "all"); // the projector too: the three side by side
const showView = () => showDists(view());
wireTabs((name) => { state.set({ view: name }); showView(); });
const draw = (data, sampled) => { drawDists(data, sampled, v, ROWS); showView(); };

/* The distribution at this point of the text. `generated` tells the server how many trailing
   characters were generated, so it reads the same window generation would; with `seed` it also
   draws the next character (response.sample). */
function fetchDist(text, withSeed) {
  const body = { prompt: text, generated: len(v.out), temperature: v.temperature, top_k: v.top_k, top_p: v.top_p };
  if (withSeed) body.seed = v.seed;
  return ask("/api/next-token", body, onDevice("/api/next-token"), { fields: FIELDS }); // the server, or this device (lib/compute.js)
}

async function preview() {
  const text = fullText();
  if (!text) {
    clear($("#g-dists"));
    $("#g-step-info").textContent = "Type a prompt to start.";
    fieldMessage(promptBox, "The prompt is empty: type a few words first.", "error");
    return;
  }
  const current = previews.begin();
  try {
    const data = await fetchDist(text, false);
    if (!current()) return;
    clearError();
    clearFieldErrors();
    draw(data);
    $("#g-step-info").textContent = "Next character after “" + tail(text, 24) + "”" +
      (data.greedy ? " (greedy: the top character will be taken)." : ": Step samples it from panel 3.");
  } catch (err) {
    /* report has put the error next to its control */
  }
}
const previewSoon = debounce(preview, 150);

async function step() {
  if (busy) return false;
  const text = fullText();
  if (!text) {
    fieldMessage(promptBox, "The prompt is empty: type a few words first.", "error");
    return false;
  }
  if (len(v.out) >= maxOut()) {
    fieldMessage($("#g-step"), "This walkthrough stops at " + maxOut() + " generated characters: press Undo or Reset.", "error");
    return false;
  }
  busy = true;
  try {
    const stepNo = len(v.out);
    const data = await fetchDist(text, true);
    previews.cancel(); // a preview still in flight must not redraw over this step
    clearError();
    clearFieldErrors();
    const s = data.sample;
    state.set({ out: v.out + s.char });
    renderText(true);
    draw(data, s.index);
    $("#g-step-info").textContent = "Step " + (stepNo + 1) + ": after “" + tail(text, 24) + "” sampled " + charName(s.char) +
      " (final probability " + pct(s.prob) + ", u = " + num(s.u, 4) + ").";
    return true;
  } catch (err) {
    return false;
  } finally {
    busy = false;
  }
}

function undo() {
  if (!v.out) return;
  state.set({ out: textChars(v.out).slice(0, -1).join("") });
  renderText(false);
  preview();
}

/* ---------- play / pause ---------- */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function setPlaying(on) {
  playing = on;
  const button = $("#g-play");
  button.setAttribute("aria-pressed", on ? "true" : "false");
  button.textContent = on ? "Pause ❚❚" : "Play";
}

async function play() {
  if (playing) {
    setPlaying(false);
    return;
  }
  setPlaying(true);
  while (playing) {
    const ok = await step();
    if (!ok) break;
    await sleep(300);
  }
  setPlaying(false);
}

/* ---------- fast sampling: POST /api/generate/stream (lib/stream.js reads its events) ---------- */
let streamAbort = null; // AbortController of the stream being read

function stopStream(message) {
  if (streamAbort) streamAbort.abort();
  streamAbort = null;
  $("#g-stream").disabled = false;
  $("#g-stream-stop").disabled = true;
  if (message) $("#g-stream-status").textContent = message;
}

async function startStream() {
  stopStream();
  if (!v.prompt) {
    fieldMessage(promptBox, "The prompt is empty: type a few words first.", "error");
    return;
  }
  const box = clear($("#g-stream-text"));
  appendVisible(box, v.prompt);
  const fresh = el("span", { class: "gen-new" });
  box.appendChild(fresh);
  let received = 0;
  clearError();
  $("#g-stream").disabled = true;
  $("#g-stream-stop").disabled = false;
  $("#g-stream-status").textContent = "Streaming with seed " + v.seed + "…";
  const controller = new AbortController();
  streamAbort = controller;
  const onEvent = (event, data) => {
    if (event === "token") {
      received += len(data.text);
      appendVisible(fresh, data.text);
      box.scrollTop = box.scrollHeight;
      $("#g-stream-status").textContent = "Streaming… " + received + " characters";
    } else if (event === "done") {
      const stepped = textChars(v.out);
      const same = cut(data.text, stepped.length) === v.out;
      stopStream("Done: " + len(data.text) + " characters sampled " + (lastWhere() === "device" ? "on your device" : "by the server") +
        " (seed " + v.seed + ")." +
        (stepped.length && stepped.length <= STREAM_CHARS ? (same ? " Its first " + stepped.length + " are the " +
          stepped.length + " you stepped above." : " They differ from the stepped text: a knob or the seed changed since.") : ""));
    } else if (event === "error") {
      stopStream("Stream stopped after " + received + " characters: " + data.detail);
    }
  };
  try {
    await stream("/api/generate/stream", { prompt: v.prompt, max_new_tokens: STREAM_CHARS, temperature: v.temperature,
      top_k: v.top_k, top_p: v.top_p, seed: v.seed }, onEvent, onDevice("/api/generate"), controller.signal);
  } catch (err) {
    if (err.name === "AbortError") return;
    if (err instanceof ApiError) { // refused before the first character
      stopStream("");
      report(err, FIELDS);
      return;
    }
    if (streamAbort === controller && !received) report(new ApiError("the stream was interrupted", 0), FIELDS);
  }
  if (streamAbort === controller) stopStream("Stream stopped after " + received + " characters.");
}

/* ---------- wiring ---------- */
function onKnob() {
  sanitize();
  state.write();
  showValues();
  previewSoon();
}

temp.addEventListener("input", () => { v.temperature = Number(temp.value); onKnob(); });
topk.addEventListener("input", () => { v.top_k = Number(topk.value); onKnob(); });
topp.addEventListener("input", () => { v.top_p = Number(topp.value); onKnob(); });
seedBox.addEventListener("input", () => {
  const seed = parseInt(seedBox.value, 10);
  if (Number.isFinite(seed) && seed >= 0 && seed <= maxSeed()) {
    fieldMessage(seedBox, "", "error");
    state.set({ seed });
  } else if (seedBox.value !== "") {
    fieldMessage(seedBox, "The seed must be a whole number from 0 to " + thousands(maxSeed()) + ".", "error");
  }
});

/* The prompt box: a paste beyond the server's limit is cut, and the page says so. */
function onPromptInput() {
  const max = maxPrompt();
  if (len(promptBox.value) > max) {
    const n = len(promptBox.value);
    promptBox.value = cut(promptBox.value, max);
    fieldMessage(promptBox, "The prompt was cut to " + thousands(max) + " characters (you pasted " + thousands(n) + ").", "error");
  }
  onPrompt();
}
const onPrompt = debounce(() => {
  state.set({ prompt: promptBox.value, out: "" });
  renderText(false);
  preview();
}, 400);
promptBox.addEventListener("input", onPromptInput);

$("#g-step").addEventListener("click", step);
$("#g-play").addEventListener("click", play);
$("#g-undo").addEventListener("click", undo);
$("#g-reset").addEventListener("click", () => {
  setPlaying(false);
  stopStream("");
  clear($("#g-stream-text"));
  state.reset();
  if (ownPrompt) state.set({ prompt: ownPrompt });
  clearError();
  clearFieldErrors();
  syncControls();
  renderText(false);
  preview();
});
$("#g-stream").addEventListener("click", startStream);
$("#g-stream-stop").addEventListener("click", () => stopStream("Stopped."));

/* Keys. On a slider the arrows move the slider, so Enter steps from there (and from the seed box),
   and Escape leaves the control so that Space and → step again. */
for (const control of [temp, topk, topp, seedBox]) {
  control.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "Enter") {
      event.preventDefault();
      step();
    } else if (event.key === "Escape") {
      event.preventDefault();
      control.blur();
      $("#g-walk").focus({ preventScroll: true });
    }
  });
}

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || typingTarget(event.target)) return;
  if (!shortcutsEnabled()) return;
  const onButton = event.target.closest && event.target.closest("button, a, summary, [role='tab']");
  if (event.key === " " || event.key === "ArrowRight") {
    if (onButton) return; // Space on a button is that button's own click; → on a tab moves the tab
    event.preventDefault();
    step();
  } else if (event.key === "Backspace") {
    event.preventDefault();
    undo();
  } else if (event.key === "p" || event.key === "P") {
    event.preventDefault();
    play();
  }
});

/* ---------- start ---------- */
badge($("#g-step-info")); // where the answers are computed: this server or this device
badge($("#g-stream-status"));
warmUp(needs("/api/generate")); // a static copy loads GPT now; a server only with --models-on-phones (lib/compute.js)
sanitize();
syncControls();
renderText(false);
info().then((info) => {
  limits = info.limits;
  vocabSize = info.vocab.chars.length;
  context = info.cards.gpt && info.cards.gpt.config ? info.cards.gpt.config.context : null;
  ownPrompt = info.examples ? info.examples.prompt : null;
  if (ownPrompt && !linkHas("prompt") && !linkHas("out") && v.prompt === SHIPPED_PROMPT && !v.out) {
    v.prompt = ownPrompt;
    renderText(false);
  }
  sanitize();
  syncControls();
  contextNote();
}).catch(() => {}).finally(() => {
  state.write();
  preview();
});
