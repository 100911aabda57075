/* What the lessons page's modules share (static/pages/lessons*.js): the stage kinds as a teacher reads
   them, a new stage of each kind, labelled controls, and an applet's settings as its address holds them.
   The lesson file format is the server's (app/lessons/schema.py); the page learns the applets a lesson
   may show from the server's own description of it (/openapi.json), so that list has one owner.
   KINDS                 [kind, the teacher's word] in the order the "Add a stage" menu lists them
   kindName(stage)       "Be the BERT", "Applet: Generation", ...
   copyOf(body)          a lesson's file as its copy ("… (copy)")
   blankStage(kind)      a new stage (a fill stage starts with an empty sentence: the teacher types it)
   applets()             the pages a lesson can show, [{path, name}] (promise, asked once)
   appletName(path)      the page's name in the site's navigation
   uid(stem), field(label, control, opts), button(text, onclick, opts)
   typed(text)           a setting's value as the page's share link means it: 5, 0.5, [3, 4], or text
   shown(value)          the other way: [3, 4] -> "3,4"
   fromAddress(text, paths)  {page, state, dropped} or {error}: a share link read into a stage's settings
   queryOf(state)        the settings as an address's query (the server's rule: app/lessons/presenter.py) */
import { api } from "../lib/api.js";
import { el } from "../lib/dom.js";

export const KINDS = [["applet", "Applet demo"], ["fill", "Be the BERT"], ["nsp", "NSP class set"],
  ["concept", "Concept check"], ["label", "Label together"]];
const WORDS = Object.fromEntries(KINDS);

/* The keys of an address that the class session sets, not the stage (app/lessons/schema.py RESERVED_KEYS):
   a share link carries some of them (projector, hide, model), so they are left out when one is pasted. */
const RESERVED = ["projector", "hide", "model", "code", "key", "embed"];

export function appletName(path) {
  const link = document.querySelector("#site-nav a[href='" + path + "']");
  return link ? link.textContent.trim() : path;
}

export function kindName(stage) {
  return stage.kind === "applet" ? "Applet: " + appletName(stage.page) : WORDS[stage.kind] || stage.kind;
}

export function blankStage(kind) {
  const notes = "";
  if (kind === "applet") return { kind, title: "Generation: temperature and top-k", page: "/generate", state: {}, phones: "applet", notes };
  if (kind === "nsp") return { kind, title: "Next-sentence prediction", count: 5, seed: Math.floor(Math.random() * 10000), notes };
  if (kind === "fill") return { kind, title: "Be the BERT: guess the hidden characters", items: [{ text: "", positions: [] }], notes };
  if (kind === "concept") return { kind, title: "Concept check", questions: [], notes };
  return { kind, title: "Label together", labels: ["happy", "sad"], lines: [], notes };
}

export function copyOf(body) {
  const copy = JSON.parse(JSON.stringify(body));
  copy.title = String(body.title).slice(0, 113) + " (copy)"; // a title is at most 120 characters
  return copy;
}

let appletsPromise = null;
export function applets() {
  if (!appletsPromise) {
    appletsPromise = api("/openapi.json", { model: false, quiet: true }).then((doc) => {
      const page = doc.components.schemas.AppletStage.properties.page;
      return page.enum.map((path) => ({ path, name: appletName(path) }));
    });
    appletsPromise.catch(() => { appletsPromise = null; }); // asked again next time
  }
  return appletsPromise;
}

let n = 0;
export const uid = (stem) => "l-" + stem + "-" + ++n;

/* A control with its label above it (and a hint under it); opts.wide: the whole row. */
export function field(label, control, opts) {
  const o = opts || {};
  if (!control.id) control.id = uid("f");
  return el("div", { class: "control" + (o.wide ? " wide" : "") }, [
    el("label", { for: control.id, text: label }), control, o.hint ? el("span", { class: "hint", text: o.hint }) : null]);
}

export function button(text, onclick, opts) {
  const o = opts || {};
  return el("button", Object.assign({ type: "button", class: o.primary ? "btn" : "btn secondary", text, onclick }, o.attrs || {}));
}

const INT = /^-?\d{1,15}$/;
const FLOAT = /^-?\d{0,15}\.\d{1,15}$/;
const INTS = /^\d{1,15}(,\d{1,15})+$/;

/* A number or a list of numbers stays one only when writing it back gives the same text ("007" stays
   text), so a setting goes through the lesson file and back into the address unchanged. */
export function typed(text) {
  const s = String(text);
  if (INT.test(s) && String(Number(s)) === s) return Number(s);
  if (FLOAT.test(s) && String(Number(s)) === s.replace(/^(-?)\./, "$10.")) return Number(s);
  if (INTS.test(s) && s.split(",").every((p) => String(Number(p)) === p)) return s.split(",").map(Number);
  return s;
}

export const shown = (value) => (Array.isArray(value) ? value.join(",") : String(value));

export function queryOf(state) {
  const text = (v) => (typeof v === "boolean" ? (v ? "1" : "0") : shown(v));
  return new URLSearchParams(Object.entries(state || {}).map(([k, v]) => [k, text(v)])).toString();
}

export function fromAddress(text, paths) {
  const raw = String(text || "").trim();
  if (!raw) return { error: "Paste an address first: open the applet, set it up, and copy the link from “Share this setup”." };
  let url;
  try {
    url = new URL(raw, location.origin);
  } catch (err) {
    return { error: "That is not an address. Copy it from the applet's “Share this setup” panel." };
  }
  const page = url.pathname.replace(/\/+$/, "") || "/";
  if (!paths.includes(page)) {
    return { error: "“" + page + "” is not an applet a lesson can show. It can show: " +
      paths.map((p) => appletName(p) + " (" + p + ")").join(", ") + "." };
  }
  const state = {};
  const dropped = [];
  for (const [key, value] of url.searchParams) {
    if (RESERVED.includes(key)) dropped.push(key);
    else state[key] = typed(value);
  }
  return { page, state, dropped };
}
