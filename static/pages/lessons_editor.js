/* The lesson editor of /lessons (?edit=ID; ?edit=new for a new lesson). The lesson file (the server's
   format, app/lessons/schema.py) is edited in place in the browser and sent whole on Save: POST for a
   new lesson or a copy of a shipped one (which cannot be changed), PUT for a saved one. The stages are
   cards in the class's order: unfold one to edit its fields (lessons_stages.js), move it up or down,
   duplicate, delete (with undo) or preview it as the projector will show it (lessons_preview.js).
   The server checks everything; its refusal names the field's path (stages[3].items[0].positions),
   and every control carries its path (data-path), so the sentence lands beside the field, its card
   unfolded, and in the status line at the top.
   openEditor(entry, back)  entry: a row of GET /api/lessons, or null for a new lesson; back(id) after
                            "All lessons" (id: the lesson's saved id, null if never saved)
   isDirty()                unsaved changes */
import { api } from "../lib/api.js";
import { $, clear, debounce, el } from "../lib/dom.js";
import { clearError, clearFieldErrors, report } from "../lib/errors.js";
import { setParams } from "../lib/state.js";
import { KINDS, applets, blankStage, button, copyOf, kindName, uid } from "./lessons_kit.js";
import { stageBody } from "./lessons_stages.js";
import { clearPreview, initPreview, previewStage } from "./lessons_preview.js";

let doc = null; // the lesson file being edited
let id = null; // its saved id; null: not saved yet (a new lesson, or a copy of a shipped one)
let saved = ""; // the file as saved last: unsaved changes are the difference
let ctx = null; // what the stage fields pick from: {applets, concepts}
const opened = new Set(); // the stages whose card is unfolded (the stage objects: they keep it as they move)
let undo = null; // {stage, index}: the stage deleted last
let onBack = () => {};
let previewed = null; // the stage on the preview: it follows the stage's edits and moves
let wired = false;

export const isDirty = () => doc !== null && JSON.stringify(doc) !== saved;
const say = (text) => { $("#l-edit-status").textContent = text; };
const lessonPath = (which) => "/api/lessons/" + encodeURIComponent(which);

export async function openEditor(entry, back) {
  onBack = back;
  wire();
  if (!ctx) {
    const [pages, concepts] = await Promise.all([applets(), api("/api/concepts", { model: false, quiet: true })]);
    ctx = { applets: pages, concepts: concepts.questions };
  }
  const body = entry ? await api(lessonPath(entry.id), { model: false, quiet: true }) : null;
  opened.clear();
  undo = null;
  previewed = null;
  $("#l-undo").hidden = true;
  if (entry && entry.shipped) { // a shipped lesson is copied to be changed: this is the copy, until saved
    doc = copyOf(body);
    id = null;
    saved = "";
    say("This is a copy of “" + body.title + "”, which ships with the app. Change it, then Save: it becomes your own lesson.");
  } else {
    doc = body || { title: "", summary: "", stages: [] };
    id = entry ? entry.id : null;
    saved = JSON.stringify(doc);
    say(entry ? "" : "A new lesson: give it a title, add its stages, then Save.");
  }
  $("#l-title").value = doc.title;
  $("#l-summary").value = doc.summary || "";
  $("#l-minutes").value = doc.minutes || "";
  clearFieldErrors($("#l-editor"));
  clearPreview();
  renderStages();
  dirty();
  $("#l-editor").hidden = false;
  document.body.classList.add("l-editing"); // the page's introduction steps aside for the editor (lessons.css)
  $("#l-title").focus();
}

function heading() {
  $("#l-editor-h").textContent = id === null ? (doc.title ? "“" + doc.title + "”, not saved yet" : "A new lesson, not saved yet")
    : "Editing “" + doc.title + "”";
}

function dirty() {
  heading();
  const done = id !== null && !isDirty(); // a new lesson, or a copy, is not saved until it is
  $("#l-save").textContent = done ? "Saved" : "Save";
  $("#l-save").classList.toggle("secondary", done);
}

/* ---------- the stage cards ---------- */
function renderStages(focus) {
  const list = clear($("#l-stages"));
  doc.stages.forEach((stage, i) => list.append(card(stage, i)));
  if (!doc.stages.length) list.append(el("li", { class: "note l-none", text: "No stages yet: add the first one below." }));
  if (!focus) return;
  const row = list.children[focus.index];
  const tools = row ? [row.querySelector("[data-act='" + focus.act + "']"), ...row.querySelectorAll(".l-stage-tools button")] : [];
  const target = tools.find((b) => b && !b.disabled) || $("#l-add-kind");
  target.focus();
}

function card(stage, i) {
  const n = doc.stages.length;
  const bodyId = "l-stage-body-" + i;
  const kind = el("span", { class: "l-kind l-kind-" + stage.kind, text: kindName(stage) });
  const title = el("span", { class: "l-stage-title", text: stage.title || "(no title yet)" });
  const changed = () => {
    kind.textContent = kindName(stage);
    title.textContent = stage.title || "(no title yet)";
    if (stage === previewed) follow();
    dirty();
  };
  const body = el("div", { class: "l-stage-body", id: bodyId, hidden: !opened.has(stage) },
    stageBody(stage, "stages[" + i + "]", changed, ctx));
  const tool = (text, act, onclick, attrs) => button(text, onclick, { attrs: Object.assign({ dataset: { act } }, attrs || {}) });
  const toggle = tool(opened.has(stage) ? "Close" : "Edit", "edit", () => fold(stage, !opened.has(stage)),
    { "aria-expanded": String(opened.has(stage)), "aria-controls": bodyId });
  return el("li", { class: "l-stage", dataset: { index: String(i), kind: stage.kind } }, [
    el("div", { class: "l-stage-head" }, [
      el("span", { class: "l-stage-n", "aria-hidden": "true", text: String(i + 1) }),
      el("h3", { class: "l-stage-name" }, [el("span", { class: "sr-only", text: "Stage " + (i + 1) + ": " }), kind, title]),
      el("div", { class: "l-stage-tools", role: "group", "aria-label": "Stage " + (i + 1) }, [
        toggle,
        tool("Preview", "preview", () => preview(i)),
        tool("↑ Up", "up", () => move(i, -1), { disabled: i === 0, "aria-label": "Move stage " + (i + 1) + " up" }),
        tool("↓ Down", "down", () => move(i, 1), { disabled: i === n - 1, "aria-label": "Move stage " + (i + 1) + " down" }),
        tool("Duplicate", "duplicate", () => duplicate(i)),
        tool("Delete", "delete", () => remove(i)),
      ]),
    ]),
    body,
  ]);
}

function fold(stage, open) {
  if (open) opened.add(stage);
  else opened.delete(stage);
  const row = $("#l-stages").children[doc.stages.indexOf(stage)];
  if (!row) return;
  row.querySelector(".l-stage-body").hidden = !open;
  const toggle = row.querySelector("[data-act='edit']");
  toggle.setAttribute("aria-expanded", String(open));
  toggle.textContent = open ? "Close" : "Edit";
}

const named = (stage) => "“" + (stage.title || kindName(stage)) + "”";

function move(i, d) {
  const [stage] = doc.stages.splice(i, 1);
  doc.stages.splice(i + d, 0, stage);
  renderStages({ index: i + d, act: d < 0 ? "up" : "down" });
  say("Moved " + named(stage) + " to stage " + (i + d + 1) + ".");
  if (previewed) follow(); // its place in the lesson changed
  dirty();
}

function duplicate(i) {
  const copy = JSON.parse(JSON.stringify(doc.stages[i]));
  doc.stages.splice(i + 1, 0, copy);
  opened.add(copy);
  renderStages({ index: i + 1, act: "edit" });
  say("Duplicated " + named(copy) + ": the copy is stage " + (i + 2) + ".");
  if (previewed) follow(); // its place in the lesson changed
  dirty();
}

function remove(i) {
  const [stage] = doc.stages.splice(i, 1);
  undo = { stage, index: i };
  renderStages({ index: Math.min(i, doc.stages.length - 1), act: "delete" });
  say("Deleted stage " + (i + 1) + ", " + named(stage) + ".");
  if (previewed) follow(); // its place in the lesson changed
  $("#l-undo").hidden = false;
  dirty();
}

function restore() {
  if (!undo) return;
  doc.stages.splice(undo.index, 0, undo.stage);
  renderStages({ index: undo.index, act: "delete" });
  say("Stage " + (undo.index + 1) + ", " + named(undo.stage) + ", is back.");
  if (previewed) follow(); // its place in the lesson changed
  undo = null;
  $("#l-undo").hidden = true;
  dirty();
}

function add() {
  const stage = blankStage($("#l-add-kind").value);
  doc.stages.push(stage);
  opened.add(stage);
  renderStages();
  const row = $("#l-stages").lastElementChild;
  row.scrollIntoView({ block: "start" });
  row.querySelector(".l-stage-body input").focus();
  say("Added stage " + doc.stages.length + ": " + kindName(stage) + ". Fill in its fields, then Save.");
  if (previewed) follow(); // its place in the lesson changed
  dirty();
}

/* The preview follows the stage it shows, once the typing pauses; a half-typed stage the server
   refuses says so on the preview only (a field's message waits for Save or the Preview button). */
const follow = debounce(() => {
  const i = doc ? doc.stages.indexOf(previewed) : -1;
  if (i < 0) {
    previewed = null;
    clearPreview();
    return;
  }
  for (const row of $("#l-stages").children) row.classList.toggle("is-previewed", row.dataset.index === String(i));
  previewStage(doc, i, () => {});
}, 600);

function preview(i) {
  previewed = doc.stages[i];
  for (const row of $("#l-stages").children) row.classList.toggle("is-previewed", row.dataset.index === String(i));
  const frame = $("#l-preview");
  const r = frame.getBoundingClientRect();
  if (r.top > innerHeight || r.bottom < 0) frame.scrollIntoView({ block: "start" }); // one column: the preview is below
  previewStage(doc, i, (err) => placeError(err, ""));
}

/* ---------- saving, and a refusal beside its field ---------- */
function controlFor(parameter) {
  if (!parameter) return null;
  let best = null;
  for (const node of $("#l-editor").querySelectorAll("[data-path]")) {
    const p = node.dataset.path;
    const fits = parameter === p || parameter.startsWith(p + ".") || parameter.startsWith(p + "[");
    if (fits && (!best || p.length > best.dataset.path.length)) best = node;
  }
  if (best && !best.id) best.id = uid("field");
  return best;
}

function placeError(err, lead) {
  const text = lead + (err.detail || err.message);
  say(text);
  const control = controlFor(err.parameter);
  const row = control && control.closest(".l-stage");
  if (row) fold(doc.stages[Number(row.dataset.index)], true);
  report(err, { [String(err.parameter)]: { control, say: () => text } });
}

async function save() {
  clearFieldErrors($("#l-editor"));
  clearError();
  const go = $("#l-save");
  go.disabled = true;
  say("Saving…");
  try {
    if (id === null) {
      id = (await api("/api/lessons", { body: doc, model: false, quiet: true })).id;
      setParams({ edit: id });
    } else {
      await api(lessonPath(id), { method: "PUT", body: doc, model: false, quiet: true });
    }
    saved = JSON.stringify(doc);
    say("Saved at " + new Date().toLocaleTimeString() + ". Give it from the list of lessons (“All lessons”).");
  } catch (err) {
    placeError(err, "Not saved: ");
  } finally {
    go.disabled = false;
    dirty();
  }
}

function back() {
  if (isDirty() && !confirm("Leave without saving? Your changes to this lesson would be lost.")) return;
  doc = null;
  clearPreview();
  $("#l-editor").hidden = true;
  document.body.classList.remove("l-editing");
  setParams({ edit: null });
  onBack(id);
}

function wire() {
  if (wired) return;
  wired = true;
  $("#l-title").addEventListener("input", (e) => { doc.title = e.target.value; dirty(); });
  $("#l-summary").addEventListener("input", (e) => { doc.summary = e.target.value; dirty(); });
  $("#l-minutes").addEventListener("input", (e) => {
    if (e.target.value.trim() === "") delete doc.minutes;
    else doc.minutes = Number(e.target.value);
    dirty();
  });
  $("#l-add-kind").append(...KINDS.map(([kind, words]) => el("option", { value: kind, text: words })));
  $("#l-add").addEventListener("click", add);
  $("#l-save").addEventListener("click", save);
  $("#l-back").addEventListener("click", back);
  $("#l-edit-status").after(button("Undo", restore, { attrs: { id: "l-undo", hidden: true } }));
  document.addEventListener("keydown", (e) => { // Ctrl+S / ⌘S saves, as in any editor
    if (doc && !$("#l-editor").hidden && (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s") { e.preventDefault(); save(); }
  });
  addEventListener("beforeunload", (e) => { if (isDirty()) { e.preventDefault(); e.returnValue = ""; } });
  initPreview();
}
