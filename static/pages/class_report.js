/* /report?code=CODE: the teacher's report of a class session, drawn from GET .../report.json (the same
   file the "whole report" button downloads: app/classes/report.py). Three tables: the class against
   BERT per activity, each student's score with a ✓/✗ per item, and each item's text and right answer.
   Without a code, the classes still open to choose from. Instructor only (the server says 401/403). */
import { api } from "../lib/api.js";
import { sessionPath } from "../lib/classroom.js";
import { $, clear, el } from "../lib/dom.js";

const code = new URLSearchParams(location.search).get("code");
const PREFIX = { nsp: "N", fill: "B", concept: "C" }; // an item's short code in the tables' headers
const pct = (x) => Math.round(x * 100) + "\u00a0%";
const share = (right, of) => (of ? right + " of " + of + " (" + pct(right / of) + ")" : "no answers");
const itemCode = (it) => PREFIX[it.activity] + it.number;
const cell = (tag, text, cls, attrs) => el(tag, Object.assign({ text, class: cls || null }, attrs || {}));
const at = (iso) => new Date(iso).toLocaleString([], { weekday: "short", hour: "2-digit", minute: "2-digit" });

async function start() {
  let listing;
  try {
    listing = await api("/api/sessions", { model: false, quiet: true });
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      $("#r-login").hidden = false;
      return;
    }
    throw err;
  }
  if (!code) return pick(listing.sessions);
  draw(await api(sessionPath(code, "/report.json"), { model: false }));
}

function pick(sessions) {
  $("#r-pick").hidden = false;
  const list = clear($("#r-sessions"));
  for (const s of sessions) {
    list.append(el("li", {}, el("a", { href: "/report?code=" + encodeURIComponent(s.code),
      text: s.display_code + " (" + s.joined + " joined" + (s.ended ? ", ended" : "") + ")" })));
  }
  if (!sessions.length) list.append(el("li", { class: "note", text: "No class is open: a report lasts as long as its class session." }));
}

function draw(r) {
  $("#r-report").hidden = false;
  document.title = "Class report " + r.display_code + " · Pretraining Playground";
  const n = r.students.length;
  $("#r-about").textContent = "Class " + r.display_code + " · " + n + " student" + (n === 1 ? "" : "s") + " · " +
    (r.ended ? "the session has ended" : "the session is still running") + " · this report and its files are kept until " +
    at(r.expires_at) + ", when the session expires and its answers are deleted.";
  $("#r-json").href = sessionPath(r.code, "/report.json");
  $("#r-scores").href = sessionPath(r.code, "/scores.csv");
  $("#r-answers").href = sessionPath(r.code, "/export.csv");
  $("#r-rule").textContent = r.rule;
  drawClass($("#r-class"), r);
  drawStudents($("#r-students"), r);
  drawItems($("#r-items"), r);
}

function drawClass(table, r) {
  clear(table);
  table.append(el("thead", {}, el("tr", {}, [cell("th", "Activity", null, { scope: "col" }),
    cell("th", "Revealed", "num", { scope: "col" }), cell("th", "Class right", "num", { scope: "col" }),
    cell("th", r.model + " right", "num", { scope: "col" })])));
  const body = el("tbody");
  for (const a of r.activities.filter((x) => x.items)) {
    const bert = a.model_right === null ? cell("td", "–", "num", { title: r.model + " does not answer these" })
      : cell("td", share(a.model_right, a.counted), "num");
    body.append(el("tr", { dataset: { activity: a.activity } }, [cell("th", a.name, null, { scope: "row" }),
      cell("td", a.counted + " of " + a.items, "num"), cell("td", share(a.right, a.answers), "num"), bert]));
  }
  if (!body.children.length) body.append(el("tr", {}, cell("td", "No scored item has been shown yet.", "note", { colspan: "4" })));
  table.append(body, el("tfoot", {}, el("tr", {}, [cell("th", "All", null, { scope: "row" }),
    cell("td", r.activities.reduce((s, a) => s + a.counted, 0) + " of " + r.activities.reduce((s, a) => s + a.items, 0), "num"),
    cell("td", share(r.class.right, r.class.answers), "num"), cell("td", "")])));
}

function drawStudents(table, r) {
  clear(table);
  const acts = r.activities.filter((a) => a.items);
  // the total next to the nickname: on a phone the first columns are the ones on screen
  table.append(el("thead", {}, el("tr", {}, [cell("th", "Nickname", null, { scope: "col" }), cell("th", "Total", "num", { scope: "col" }),
    ...acts.map((a) => cell("th", a.name, "num", { scope: "col" })),
    ...r.items.map((it) => cell("th", itemCode(it), "r-code" + (it.revealed ? "" : " is-unrevealed"),
      { scope: "col", title: it.text + (it.revealed ? "" : " (not revealed)") }))])));
  const body = el("tbody");
  for (const s of r.students) {
    const parts = Object.fromEntries(s.score.activities.map((p) => [p.activity, p]));
    body.append(el("tr", {}, [cell("th", s.nickname, null, { scope: "row" }),
      cell("td", s.score.of ? s.score.right + "/" + s.score.of + " (" + pct(s.score.right / s.score.of) + ")" : "–", "num r-total"),
      ...acts.map((a) => cell("td", parts[a.activity] ? parts[a.activity].right + "/" + parts[a.activity].of : "–", "num")),
      ...r.items.map((it) => mark(it, s.answers[it.activity + ":" + it.item]))]));
  }
  if (!r.students.length) body.append(el("tr", {}, cell("td", "No student has joined.", "note", { colspan: String(acts.length + 2) })));
  table.append(body);
}

/* One student's answer to one item: ✓ or ✗ (the answer itself in the tooltip and for screen readers). */
function mark(it, answer) {
  const kind = !answer ? "none" : answer.right ? "right" : "wrong";
  const said = { none: "no answer", right: "right: " + (answer && answer.answer), wrong: "wrong: " + (answer && answer.answer) }[kind];
  return el("td", { class: "r-mark is-" + kind + (it.revealed ? "" : " is-unrevealed"), title: itemCode(it) + ", " + said,
    dataset: { item: it.activity + ":" + it.item } }, [{ none: "–", right: "✓", wrong: "✗" }[kind], el("span", { class: "sr-only", text: " " + said })]);
}

function drawItems(table, r) {
  clear(table);
  const heads = ["Item", "What the class saw", "Right answer", "Class right", r.model + "'s answer"];
  table.append(el("thead", {}, el("tr", {}, heads.map((h) => cell("th", h, null, { scope: "col" })))));
  const body = el("tbody");
  for (const it of r.items) {
    const said = it.activity === "fill" ? "“" + it.model_answer + "”" : it.model_answer; // a guess of letters, quoted
    const model = it.model_answer === null ? "–" : said + " " + (it.model_right ? "✓" : "✗");
    body.append(el("tr", { class: it.revealed ? "" : "is-unrevealed", dataset: { item: it.activity + ":" + it.item } }, [
      el("th", { scope: "row" }, [el("span", { class: "r-code", text: itemCode(it) }),
        el("span", { class: "r-tag", text: it.name + (it.revealed ? "" : " · not revealed, not counted") })]),
      // data-label: a phone shows each row as a card, every cell with its column's name (static/class_report.css)
      cell("td", it.text, "r-text", { "data-label": heads[1] }), cell("td", it.right_answer, null, { "data-label": heads[2] }),
      cell("td", share(it.right, it.answered), "num", { "data-label": heads[3] }), cell("td", model, null, { "data-label": heads[4] })]));
  }
  if (!r.items.length) body.append(el("tr", {}, cell("td", "No scored item has been shown yet.", "note", { colspan: "5" })));
  table.append(body);
}

$("#r-print").addEventListener("click", () => window.print());
start().catch(() => {});
