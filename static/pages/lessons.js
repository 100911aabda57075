/* /lessons (issue 50 musts 1, 2): the teacher's lessons, the ones that ship with the app first. Each
   can be given (a class session walks its stages: POST /api/sessions {lesson}, then the class page),
   edited (a shipped one is copied first: it cannot be changed), copied, downloaded as its file and,
   when it is the teacher's own, deleted. A lesson file is imported as it is: the server checks it and
   a refusal names the field (stages[3].items[0].positions), with nothing stored. New lesson and Edit
   open the editor (lessons_editor.js) with ?edit=ID in the address, so a reload stays there. All of
   it is the instructor's (the login cookie). */
import { api } from "../lib/api.js";
import { $, clear, el } from "../lib/dom.js";
import { fieldMessage } from "../lib/errors.js";
import { setParams } from "../lib/state.js";
import { button, copyOf } from "./lessons_kit.js";
import { openEditor } from "./lessons_editor.js";

let lessons = [];
const say = (text) => { $("#l-list-status").textContent = text; };
const lessonPath = (id) => "/api/lessons/" + encodeURIComponent(id);
const detail = (err) => err.detail || err.message;

async function load() {
  lessons = await api("/api/lessons", { model: false, quiet: true });
  return lessons;
}

function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

function card(entry) {
  const meta = [entry.minutes ? "about " + entry.minutes + " minutes" : null,
    entry.stages + (entry.stages === 1 ? " stage" : " stages"),
    entry.updated_at ? "changed " + when(entry.updated_at) : null].filter(Boolean).join(" · ");
  const titleId = "l-lesson-" + entry.id.replace(/[^a-z0-9-]/gi, "_");
  const actions = [
    button("Give", (e) => give(entry, e.currentTarget), { primary: true, attrs: { dataset: { act: "give" },
      title: "Start a class with this lesson" } }),
    button(entry.shipped ? "Copy to edit" : "Edit", () => edit(entry), { attrs: { dataset: { act: "edit" } } }),
    button("Copy", () => copy(entry), { attrs: { dataset: { act: "copy" }, title: "Save a copy of this lesson as your own" } }),
    el("a", { class: "btn secondary", href: lessonPath(entry.id) + "?download=true", download: "", dataset: { act: "download" },
      text: "Download", title: "This lesson as a file (to keep, or to import on another server)" }),
    entry.shipped ? null : button("Delete", () => remove(entry), { attrs: { class: "btn secondary l-danger", dataset: { act: "delete" } } }),
  ];
  return el("li", { class: "l-lesson card", dataset: { id: entry.id } }, [
    el("h3", { id: titleId }, [el("span", { text: entry.title }),
      entry.shipped ? el("span", { class: "l-badge", text: "ships with the app" }) : null]),
    el("p", { class: "note l-meta", text: meta }),
    entry.summary ? el("p", { class: "l-summary", text: entry.summary }) : null,
    el("div", { class: "row l-actions", role: "group", "aria-labelledby": titleId }, actions),
  ]);
}

async function showList(focusId) {
  $("#l-editor").hidden = true;
  document.body.classList.remove("l-editing");
  $("#l-list").hidden = false;
  await load();
  const list = clear($("#l-lessons"));
  for (const entry of lessons) list.append(card(entry));
  if (focusId) {
    const row = list.querySelector("[data-id='" + CSS.escape(focusId) + "']");
    if (row) row.querySelector("[data-act='edit']").focus();
  }
}

async function give(entry, go) {
  go.disabled = true;
  say("Starting a class with “" + entry.title + "”…");
  try {
    const made = await api("/api/sessions", { body: { lesson: entry.id }, quiet: true });
    location.href = "/class?code=" + encodeURIComponent(made.code);
  } catch (err) {
    say("The class did not start: " + detail(err));
    go.disabled = false;
  }
}

function edit(entry) {
  setParams({ edit: entry.id });
  openLesson(entry);
}

async function copy(entry) {
  say("Copying “" + entry.title + "”…");
  try {
    const body = copyOf(await api(lessonPath(entry.id), { model: false, quiet: true }));
    const made = await api("/api/lessons", { body, model: false, quiet: true });
    await showList(made.id);
    say("Copied: “" + body.title + "” is now one of your lessons (at the top of your own).");
  } catch (err) {
    say("Not copied: " + detail(err));
  }
}

async function remove(entry) {
  if (!confirm("Delete the lesson “" + entry.title + "”? This cannot be undone. Classes already started from it keep their copy.")) return;
  try {
    await api(lessonPath(entry.id), { method: "DELETE", model: false, quiet: true });
    await showList();
    say("Deleted “" + entry.title + "”.");
    $("#l-new").focus();
  } catch (err) {
    say("Not deleted: " + detail(err));
  }
}

/* A file is posted as it is: the server's check is the only one, and it stores nothing it refuses. */
async function importFile(input) {
  const file = input.files[0];
  if (!file) return;
  fieldMessage(input, "", "error");
  let body;
  try {
    body = JSON.parse(await file.text());
  } catch (err) {
    fieldMessage(input, "Not imported: “" + file.name + "” is not a lesson file (it is not JSON).", "error");
    say("Not imported: “" + file.name + "” is not JSON.");
    input.value = "";
    return;
  }
  try {
    const made = await api("/api/lessons", { body, model: false, quiet: true });
    await showList(made.id);
    say("Imported “" + (body.title || file.name) + "”.");
  } catch (err) {
    const text = "Not imported: " + detail(err) + (err.parameter ? " (in the file: " + err.parameter + ")" : "");
    fieldMessage(input, text, "error");
    say(text);
  }
  input.value = ""; // the same file, mended, can be chosen again
}

async function openLesson(entry) {
  $("#l-list").hidden = true;
  try {
    await openEditor(entry, (savedId) => showList(savedId || (entry && entry.id)));
  } catch (err) {
    setParams({ edit: null });
    await showList();
    say("That lesson could not be opened: " + detail(err));
  }
}

async function start() {
  try {
    await load();
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      $("#l-login").hidden = false;
      return;
    }
    say("The lessons could not be listed: " + detail(err));
    $("#l-list").hidden = false;
    return;
  }
  const wanted = new URLSearchParams(location.search).get("edit");
  if (wanted === "new") return openLesson(null);
  const entry = wanted && lessons.find((x) => x.id === wanted);
  if (entry) return openLesson(entry);
  if (wanted) setParams({ edit: null });
  await showList();
}

$("#l-new").addEventListener("click", () => { setParams({ edit: "new" }); openLesson(null); });
$("#l-import").addEventListener("change", (e) => importFile(e.currentTarget));
start();
