/* The teacher's side of a class that gives a lesson (app/lessons/presenter.py): the lesson's stages
   as a strip of buttons (the one the class is on pressed), the teacher's notes for the stage, and
   ←/→ walking the stage's items and then on to the next stage (or back to the previous one).
   drawStages(node, notesNode, state, put)   the strip and the notes (hidden outside a lesson)
   stepLesson(state, delta, put)              one step; true when the lesson took it */
import { clear, el } from "../lib/dom.js";

const KIND = { applet: "Demo", nsp: "NSP", fill: "Be the BERT", concept: "Concept check", label: "Label together" };

export function drawStages(node, notesNode, s, put) {
  const lesson = s.lesson;
  node.hidden = !lesson;
  notesNode.hidden = true;
  if (!lesson) return;
  clear(node).append(el("span", { class: "c-lesson-title", text: lesson.title + ":" }));
  lesson.stages.forEach((stage, k) => {
    node.append(el("button", { type: "button", class: "btn secondary c-stage-btn", "aria-pressed": String(k === lesson.stage),
      title: KIND[stage.kind] + (stage.items ? " · " + stage.items + (stage.items === 1 ? " item" : " items") : ""),
      text: (k + 1) + ". " + stage.title, onclick: () => put({ stage: k }) }));
  });
  const now = lesson.stage === null ? null : lesson.stages[lesson.stage];
  const keys = now && now.kind === "applet" ? " Inside the applet, press Esc to give ← → back to the class." : "";
  if (now && (now.notes || keys)) {
    notesNode.hidden = false;
    notesNode.textContent = (now.notes ? "Your notes (only you see them): " + now.notes : "") + keys;
  }
}

export function stepLesson(s, delta, put) {
  const lesson = s.lesson;
  if (!lesson) return false;
  const k = lesson.stage;
  if (k === null || k === undefined) {
    if (delta > 0) put({ stage: 0 }); // from the waiting room to the first stage
    return true;
  }
  const stage = lesson.stages[k];
  const keys = stage.keys || [];
  if (stage.kind !== "applet" && stage.kind !== "label" && s.page === stage.kind) {
    const next = keys[keys.indexOf(s.item) + delta];
    if (next) { put({ item: next }); return true; }
  }
  if (k + delta >= 0 && k + delta < lesson.of) put({ stage: k + delta });
  return true;
}
