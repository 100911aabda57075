/* A stage as the projector will show it, inside the lesson editor. The server resolves the stage
   (POST /api/lesson-preview: an NSP draw's pairs, a fill sentence's holes, the concept questions, an
   applet's address) exactly as a class session given the lesson will; this module only draws it:
   a class stage's items with the class page's own drawing (lib/classroom.js drawItem, drawLabels) on a
   screen of the projector's size in CSS pixels, shrunk to the frame as a whole, so its proportions are
   the projector's; an applet stage as the applet itself in projector mode (an <iframe>, same origin),
   shrunk the same way. ←/→ step through a class stage's items; "Show the answer" shows its truth.
   initPreview()                  wire the frame, the screen-shape menu and the buttons (once); "Full
                                  screen" shows the frame alone, ←/→ stepping there too
   previewStage(doc, index, onError)  show stage `index` of the lesson being edited; a refusal goes to
                                  onError(err) with the field's path as it is in the whole lesson
   clearPreview() */
import { api } from "../lib/api.js";
import { LETTERS, drawItem, drawLabels } from "../lib/classroom.js";
import { $, clear, el } from "../lib/dom.js";
import { modelId } from "../lib/state.js";
import { KINDS, appletName } from "./lessons_kit.js";

const WORDS = Object.fromEntries(KINDS);
let shown = null; // {index, stage, items} of the stage on the screen
let at = 0; // the item on the screen
let size = { w: 1280, h: 720 };
let asked = 0; // the latest request wins (a teacher clicking Preview on two stages quickly)

function fitScale() {
  const frame = $("#l-frame");
  const screen = $("#l-screen");
  const full = document.fullscreenElement === frame; // the whole screen: fit both ways, centred
  const scale = full ? Math.min(frame.clientWidth / size.w, frame.clientHeight / size.h) : frame.clientWidth / size.w;
  if (!full) frame.style.height = Math.round(size.h * scale) + "px";
  screen.style.width = size.w + "px";
  screen.style.height = size.h + "px";
  screen.style.left = full ? Math.round((frame.clientWidth - size.w * scale) / 2) + "px" : "0";
  screen.style.top = full ? Math.round((frame.clientHeight - size.h * scale) / 2) + "px" : "0";
  screen.style.transform = "scale(" + scale + ")";
}

/* The projector never scrolls: like it (lib/fit.js), shrink the type until the item fits, not below 60 %. */
function fitType() {
  const screen = $("#l-screen");
  let fit = 1;
  screen.style.setProperty("--l-fit", "1");
  while (fit > 0.6 && (screen.scrollHeight > screen.clientHeight + 1 || screen.scrollWidth > screen.clientWidth + 1)) {
    fit = Math.round((fit - 0.05) * 100) / 100;
    screen.style.setProperty("--l-fit", String(fit));
  }
}

export function initPreview() {
  const shape = $("#l-shape");
  shape.addEventListener("change", () => {
    const [w, h] = shape.value.split("x").map(Number);
    size = { w, h };
    $("#l-frame").classList.toggle("is-4-3", w / h < 1.5);
    fitScale();
    if (shown) drawNow();
  });
  new ResizeObserver(fitScale).observe($("#l-frame"));
  $("#l-prev-item").addEventListener("click", () => step(-1));
  $("#l-next-item").addEventListener("click", () => step(1));
  $("#l-answer").addEventListener("change", drawNow);
  // Full screen: the preview at the size it will have (a phone turned sideways, a laptop on the projector)
  $("#l-full").addEventListener("click", () => $("#l-frame").requestFullscreen().then(() => $("#l-frame").focus(), () => {}));
  $("#l-frame").addEventListener("keydown", (e) => {
    const d = { ArrowLeft: -1, ArrowRight: 1 }[e.key];
    if (d && shown) { e.preventDefault(); step(d); }
  });
  fitScale();
}

function step(d) {
  if (!shown || !shown.stage.items) return;
  at = Math.max(0, Math.min(shown.stage.items.length - 1, at + d));
  drawNow();
}

export function clearPreview() {
  asked++;
  shown = null;
  clear($("#l-screen"));
  $("#l-preview-step").hidden = true;
  $("#l-preview-what").textContent = "Press “Preview” on a stage to see it here.";
  $("#l-preview-note").textContent = "";
}

/* The stage alone, in a lesson of its own: the preview of one stage is not held up by a half-edited other one. */
export async function previewStage(doc, index, onError) {
  const ticket = ++asked;
  const stage = doc.stages[index];
  $("#l-preview-what").textContent = "Stage " + (index + 1) + " of " + doc.stages.length + ": " + (stage.title || "(no title)") + " …";
  const model = modelId();
  let got;
  try {
    got = await api("/api/lesson-preview", { body: { title: doc.title || "Preview", stages: [stage] }, model: false, quiet: true,
      params: model ? { model } : undefined });
  } catch (err) {
    if (ticket !== asked) return;
    const where = (text) => (text ? String(text).replace(/^stages\[0\]/, "stages[" + index + "]") : text);
    err.parameter = where(err.parameter);
    err.detail = where(err.detail);
    clearPreview();
    $("#l-preview-what").textContent = "Stage " + (index + 1) + " cannot be shown yet: " + (err.detail || err.message);
    onError(err);
    return;
  }
  if (ticket !== asked) return;
  const again = shown && shown.index === index; // the same stage, changed: stay on its item, the answer as it was
  shown = { index, stage: got.stages[0], of: doc.stages.length };
  at = again ? Math.max(0, Math.min(at, (shown.stage.items || []).length - 1)) : 0;
  if (!again) $("#l-answer").checked = false;
  drawNow();
}

function drawNow() {
  const s = shown.stage;
  const screen = clear($("#l-screen"));
  const stepper = $("#l-preview-step");
  $("#l-preview-what").textContent = "Stage " + (shown.index + 1) + " of " + shown.of + ": " + s.title;
  if (s.kind === "applet") {
    stepper.hidden = true;
    const url = s.url + (s.url.endsWith("?") ? "" : "&") + "projector=1";
    screen.classList.add("is-applet");
    screen.append(el("iframe", { class: "l-applet", src: url, title: "The applet " + appletName(s.url.split("?")[0]) + " in projector mode" }));
    $("#l-preview-note").textContent = "The phones show " + (s.phones === "projector" ? "a card asking the class to look at the projector."
      : "the same applet, and follow you as you change it.") + " The projector opens it with these settings; what you change there in class, the screens follow.";
    return;
  }
  screen.classList.remove("is-applet");
  const items = s.items;
  const current = items[at];
  const answer = $("#l-answer").checked;
  const label = s.kind === "label";
  stepper.hidden = label || !items.length;
  $("#l-answer").disabled = label;
  $("#l-item-n").textContent = items.length ? "item " + (at + 1) + " of " + items.length : "";
  $("#l-prev-item").disabled = at === 0;
  $("#l-next-item").disabled = at >= items.length - 1;
  const body = el("div", { class: "c-item" });
  const now = el("div", { class: "c-now l-now" }, [
    el("h2", { text: WORDS[s.kind] + (label || !current ? "" : " · item " + current.number + " of " + current.of) }), body]);
  screen.append(el("p", { class: "l-strip", text: "(a slim strip here keeps the join address and the class's code)" }), now);
  if (!current) {
    body.append(el("p", { class: "note", text: "This stage has no items yet." }));
  } else if (label) { // the projector shows every line at once, each with how many labelled it
    drawItem(body, current);
    const lines = el("div");
    drawLabels(lines, [], items.map((it) => ({ item: it.item, text: it.content.text })), current.content.choices, false);
    body.append(lines);
  } else {
    drawItem(body, Object.assign({}, current, { truth: answer ? current.truth : null }), { choices: true });
    if (answer && current.activity === "nsp") body.append(el("p", { class: "verdict l-truth", text: "The answer: " + current.truth }));
    if (answer && current.activity === "concept") body.append(el("p", { class: "verdict l-truth", text: "The answer: " +
      LETTERS[Number(current.truth)] + "." }));
  }
  $("#l-preview-note").textContent = label ? "Label together has no right answer: the class's labels are the data." :
    "Before the reveal the projector shows the item; the answer appears when you reveal it (R).";
  fitType();
}
