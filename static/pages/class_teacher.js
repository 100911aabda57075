/* /class: the instructor starts a class session, shows the join code and QR code, sets the pace
   (follow me, lock, reveal, pause) and watches how many answered (the split comes with the reveal,
   for the teacher too: the page may be on the projector). The controls sit
   in one sticky bar (keys: ← → item, L lock, R reveal, O reopen, P pause, J join screen), the current item
   and its live results beside the join panel and the roster, all on one 1280x720 screen.
   With projector=1 the same page is the stage (static/stage.css): the lobby is the code, the QR
   code and the joined count; once the class moves on, a slim strip keeps the address and code
   while the item and its pooled results fill the screen. The keys still work there. */
import { api } from "../lib/api.js";
import { drawItem, drawLabels, drawPooled, follow, sessionPath } from "../lib/classroom.js";
import { $, clear, el, typingTarget } from "../lib/dom.js";
import { qrImage } from "../lib/qr.js";
import { isProjector, setParams } from "../lib/state.js";
import { drawApplet, leaveApplet } from "../lib/class_applet.js";
import { drawStages, stepLesson } from "./class_lesson.js";

const PAGES = [["lobby", "Waiting room"], ["nsp", "NSP class set"], ["fill", "Be the BERT"],
  ["concept", "Concept check"], ["label", "Label together"]];
let code = new URLSearchParams(location.search).get("code");
let state = null;
let lastResults = null;
let listing = null;
// The projector's own link (/class?code=CODE&projector=1#key=KEY, app/classes/projector.py): this
// page is then a wall screen, with no login, no control, and the state every student may read.
const wallKey = new URLSearchParams(location.hash.slice(1)).get("key");
let wallJoin = null; // the projector's join link, as the server gives it (with the join key)

const put = (body) => api(sessionPath(code, "/state"), { method: "PUT", body, model: false }).then(show);

async function openWall() {
  try {
    await api(sessionPath(code, "/projector"), { method: "POST", body: { key: wallKey }, model: false, quiet: true });
  } catch (err) {
    $("#c-login").hidden = false;
    $("#c-login").textContent = err.status === 409 ? "This class has ended: its projector link works no more."
      : "This projector link does not open a class on this server (copy it again from the teacher's page).";
    return;
  }
  document.body.classList.add("class-wall");
  if (!isProjector()) setParams({ projector: "1" });
  const first = await api(sessionPath(code), { model: false });
  listing = { student_urls: first.join_url ? [new URL(first.join_url).origin] : [], fix: "--host 0.0.0.0" };
  wallJoin = first.join_url;
  open(code);
}

async function start() {
  if (wallKey && code) return openWall();
  try {
    listing = await api("/api/sessions", { model: false, quiet: true });
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      $("#c-login").hidden = false;
      return;
    }
    throw err;
  }
  if (code) return open(code);
  $("#c-start").hidden = false;
  $("#c-reach").textContent = listing.reachable
    ? "Students will open " + listing.student_urls[0] + "/join"
    : "Students cannot reach this server: it listens on this computer only. Restart it with " + listing.fix +
      " (python -m app " + listing.fix + ") so that phones on the same network can join.";
  const list = clear($("#c-sessions"));
  for (const s of listing.sessions) {
    const link = el("a", { href: "/class?code=" + s.code, text: s.display_code + " (" + s.joined + " joined" + (s.ended ? ", ended" : "") + ")" });
    list.append(el("li", {}, link));
  }
  if (!listing.sessions.length) list.append(el("li", { class: "note", text: "none" }));
}

async function create() {
  const labels = $("#c-labels").value.split(",").map((x) => x.trim()).filter(Boolean);
  const lines = $("#c-lines").value.split("\n").map((x) => x.trim()).filter(Boolean);
  const made = await api("/api/sessions", { model: false, body: { nsp_count: Number($("#c-nsp").value), labels: lines.length ? labels : [], lines },
    fields: { nsp_count: $("#c-nsp"), labels: $("#c-labels"), lines: $("#c-lines") } });
  setParams({ code: made.code });
  code = made.code;
  open(code);
}

function open(which) {
  document.body.classList.add("class-live");
  $("#c-start").hidden = true;
  $("#c-live").hidden = false;
  const url = listing.student_urls[0];
  delete clear($("#c-qr")).dataset.link; // drawn with the first state, which holds the join key (joinLink)
  if (url) {
    $("#c-url").textContent = url.replace(/^https?:\/\//, "") + "/join";
  } else {
    $("#c-url").textContent = "(no address students can reach)";
    const warn = $("#c-unreachable");
    warn.hidden = false;
    warn.textContent = "Students cannot reach this server: it listens on this computer only. Restart it with " + listing.fix + ".";
  }
  $("#c-report").href = "/report?code=" + encodeURIComponent(which);
  $("#c-csv").href = sessionPath(which, "/export.csv");
  $("#c-jsonl").href = sessionPath(which, "/labels.jsonl");
  $("#c-finetune").href = "/finetune?class=" + encodeURIComponent(which); // the fine-tune lab fetches them itself
  const pages = clear($("#c-pages"));
  for (const [key, name] of PAGES) {
    pages.append(el("button", { type: "button", class: "btn secondary", dataset: { page: key }, "aria-pressed": "false", text: name,
      onclick: () => put({ page: key }) }));
  }
  follow(which, { state: show, results: (r) => { lastResults = r; showResults(); }, gone: () => { location.href = "/class"; } });
}

/* The QR code's link: the join page with the code and the session's join key (app/classes/joinkey.py),
   a secret too long to guess, so that a class whose phones share one network address gets in by
   itself even while someone on that address types wrong codes. Never carries projector mode. */
function joinLink(s) {
  if (wallKey) return wallJoin;
  const url = listing.student_urls[0];
  return url ? url + "/join?code=" + s.code + (s.join_key ? "&key=" + encodeURIComponent(s.join_key) : "") : null;
}

function drawQr(link) {
  const qr = $("#c-qr");
  if (!link || qr.dataset.link === link) return;
  clear(qr).append(qrImage(link, "QR code of the join page: " + link));
  qr.dataset.link = link;
}

function keysOf(page) {
  return state && state.items && state.items[page] ? state.items[page].map((x) => x.item) : [];
}

function stage(s) {
  const live = $("#c-live");
  const lobby = s.page === "lobby" || Boolean(s.join_screen); // J (on any of the teacher's screens) sets it for all
  live.classList.toggle("is-lobby", lobby);
  live.classList.toggle("is-live", !lobby);
  live.dataset.page = s.page;
  live.classList.toggle("is-revealed", Boolean(s.revealed));
  live.classList.toggle("is-paused", Boolean(s.paused));
  live.classList.toggle("is-ended", Boolean(s.ended)); // the projector stops inviting students in
}

function show(s) {
  if (!s.participants && !wallKey) return; // a student-shaped state (the poll fallback without the instructor cookie)
  state = s;
  stage(s);
  drawQr(joinLink(s));
  $("#c-code").textContent = s.display_code;
  $("#c-joined").textContent = s.joined;
  $("#c-answered").textContent = s.answered;
  for (const b of document.querySelectorAll("#c-pages button")) b.setAttribute("aria-pressed", String(b.dataset.page === s.page));
  $("#c-lock").setAttribute("aria-pressed", String(s.locked));
  $("#c-reveal").setAttribute("aria-pressed", String(s.revealed));
  $("#c-reopen").disabled = !s.current || (!s.revealed && !s.locked);
  const silent = s.silent || 0;
  $("#c-remove-silent").disabled = !silent;
  $("#c-remove-silent").textContent = "Remove the silent (" + silent + ")";
  const door = s.door || [];
  $("#c-door").hidden = !door.length;
  doorNames(door, (s.door_knocked || 0) - door.length);
  $("#c-door-in").textContent = "Let them in (" + door.length + ")";
  $("#c-admit").title = "Let a late student in by nickname" + ((s.admitted || []).length ? " (waiting: " + s.admitted.join(", ") + ")" : "");
  $("#c-board").setAttribute("aria-pressed", String(s.leaderboard));
  $("#c-phones").setAttribute("aria-pressed", String(Boolean(s.models_on_phones)));
  $("#c-phones").textContent = "Models on the phones: " + (s.models_on_phones ? "on" : "off");
  $("#c-pause").setAttribute("aria-pressed", String(Boolean(s.paused)));
  $("#c-pause").firstChild.textContent = s.paused ? "Go on " : "Pause ";
  $("#c-room-lock").setAttribute("aria-pressed", String(Boolean(s.room_locked)));
  $("#c-room-lock").textContent = s.room_locked ? "Open room" : "Close room";
  if (document.activeElement !== $("#c-places")) $("#c-places").value = s.max_participants;
  const cur = s.current;
  const where = cur ? (cur.activity === "label" ? (cur.lines || []).length + " lines at once" : "item " + cur.number + " of " + cur.of) : "";
  const stageNo = s.lesson && s.lesson.stage !== null && s.lesson.stage !== undefined
    ? "Stage " + (s.lesson.stage + 1) + " of " + s.lesson.of + " · " : ""; // a lesson says where in it the class is
  $("#c-where").textContent = stageNo + s.page_name + (where ? ": " + where : "") +
    (s.paused ? " · paused" : "") + (s.locked ? " · locked" : "") + (s.revealed ? " · revealed" : "") + (s.ended ? " · ended" : "");
  $("#c-item-h").textContent = cur ? s.page_name + (cur.activity === "label" ? "" : " · item " + cur.number + " of " + cur.of) : s.page_name;
  drawStages($("#c-stages"), $("#c-notes"), s, put);
  if (s.projector_key) { // the projector's own link (app/classes/projector.py): one click from here, no login there
    $("#c-wall-open").href = location.origin + "/class?code=" + encodeURIComponent(s.code) + "&projector=1#key=" + s.projector_key;
  }
  $("#c-wall-open").hidden = !s.projector_key;
  if (s.page !== "applet") leaveApplet();
  if (s.applet) {
    $("#c-item-h").textContent = s.applet.title;
    drawApplet($("#c-item"), s.applet, wallKey ? "projector" : "teacher", { stage: s.lesson && s.lesson.stage,
      projector: isProjector(), onQuery: (query) => put({ applet_query: query }) });
  } else if (cur) drawItem($("#c-item"), cur, { choices: true });
  else if (s.page === "end") drawEnd();
  else clear($("#c-item")).append(el("p", { class: "note", text: s.page === "lobby" ? "Waiting for the class to join." :
    "This activity has no items yet." }));
  const people = clear($("#c-people"));
  for (const p of s.participants || []) {
    people.append(el("li", { class: p.answered ? "answered" : "" }, [
      el("span", { class: "c-nick", title: p.nickname, text: (p.answered ? "✓ " : "") + p.nickname }),
      el("button", { type: "button", class: "c-remove", text: "✕", title: "remove " + p.nickname, "aria-label": "remove " + p.nickname,
        onclick: () => { if (confirm("Remove " + p.nickname + " from the class? Their answers leave the results.")) {
          api(sessionPath(code, "/participants/" + p.id), { method: "DELETE", model: false }).catch(() => {});
        } } }),
    ]));
  }
  const leaders = clear($("#c-leaders"));
  const board = s.page === "end" ? null : s.leaders; // the end screen shows its own top of the class (drawEnd)
  leaders.hidden = !board;
  for (const l of board || []) leaders.append(el("li", { text: l.nickname + ": " + l.score }));
  showResults();
}

/* The end of the lesson, worth showing: the class's final score against BERT (the NSP items revealed)
   and, only while the leaderboard is on, the top of the class (right answers on revealed items). This
   page is the projector too: nicknames beside scores come from state.leaders, which the server sends
   only with the leaderboard on (app/classes/views.py), never from the instructor's roster. */
const TOP = 5;
function drawEnd() {
  const node = clear($("#c-item"));
  node.append(el("p", { class: "c-end-title", text: "The session has ended. Thank you!" }));
  const nsp = lastResults && lastResults.summary.nsp;
  if (nsp && nsp.items) {
    const you = Math.round(nsp.class_accuracy * 100), bert = Math.round(nsp.bert_accuracy * 100);
    node.append(el("p", { class: "c-end-score" }, ["Next-sentence prediction, " + nsp.items + " question" + (nsp.items > 1 ? "s" : "") +
      ": the class ", el("strong", { text: you + "\u00a0%" }), " right, BERT ", el("strong", { text: bert + "\u00a0%" }), " right. " +
      (you > bert ? "The class beat BERT!" : you === bert ? "A tie with BERT." : "BERT won this time.")]));
  } else if (lastResults) {
    node.append(el("p", { class: "note", text: "No NSP question was revealed, so there is no score against BERT." }));
  }
  const top = (state.leaders || []).filter((l) => l.score > 0).slice(0, TOP); // ranked by the server
  if (top.length) {
    node.append(el("p", { class: "label", text: "Top of the class (right answers on revealed items)" }),
      el("ol", { class: "c-end-top" }, top.map((p) => el("li", { text: p.nickname + ": " + p.score }))));
  }
}

function showResults() {
  if (!state || !lastResults) return;
  if (state.page === "end") drawEnd();
  const cur = state.current;
  const mine = cur && lastResults.items.find((r) => r.activity === cur.activity && r.item === cur.item);
  const node = $("#c-results");
  if (cur && cur.activity === "label") {
    drawLabels(node, lastResults.items, cur.lines, cur.content.choices, state.revealed);
  } else {
    // the projector keeps a concept question's counts for the reveal; the teacher's own screen sees them live
    drawPooled(node, mine || null); // before the reveal: how many answered (the server sends no split)
  }
  const nsp = lastResults.summary.nsp;
  $("#c-summary").textContent = state.page === "nsp" && nsp.items ? "NSP so far (" + nsp.items + " revealed): the class " +
    Math.round(nsp.class_accuracy * 100) + " % right, BERT " + Math.round(nsp.bert_accuracy * 100) + " % right." : "";
}

function step(delta) {
  if (state && stepLesson(state, delta, put)) return; // a lesson walks its stages
  if (!state || !state.current) return;
  const keys = keysOf(state.page);
  const next = keys[keys.indexOf(state.item) + delta];
  if (next) put({ item: next });
}

function drawMaskPicker() {
  const box = clear($("#c-bert-chars"));
  [...$("#c-bert-text").value].forEach((ch, i) => {
    box.append(el("button", { type: "button", "aria-pressed": "false", dataset: { pos: String(i) }, text: ch === " " ? "␣" : ch,
      onclick: (e) => { const b = e.currentTarget; b.setAttribute("aria-pressed", String(b.getAttribute("aria-pressed") !== "true")); } }));
  });
}

async function addBert() {
  const positions = [...document.querySelectorAll("#c-bert-chars button[aria-pressed='true']")].map((b) => Number(b.dataset.pos));
  const made = await api(sessionPath(code, "/items"), { model: false, body: { activity: "fill", text: $("#c-bert-text").value, positions },
    fields: { text: $("#c-bert-text"), positions: $("#c-bert-chars") } });
  await put({ page: "fill", item: made.item });
}

/* An item's phase is the server's: open -> locked -> revealed. A revealed item stays revealed (going
   back shows it so); reopening it to answers is its own step, asked first. */
function reveal() {
  if (state && state.current && !state.revealed) put({ revealed: true });
}

function reopen() {
  if (!state || !state.current || (!state.revealed && !state.locked)) return;
  if (confirm("Reopen this item? Students can answer it again" + (state.revealed ? " (its answer is hidden again; " +
    "the class has seen it already)" : "") + ".")) put({ reopen: true });
}

// Each name at the door is a button that lets that one in (a flood's made-up names stay out);
// rebuilt only when the list changes, so a refresh never takes the button from under a finger.
function doorNames(door, more) {
  const box = $("#c-door-names");
  const key = JSON.stringify([door, more]);
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren();
  if (!door.length) return;
  box.append("At the door (someone on their network sent many wrong codes, so they cannot join by themselves" +
    (more > 0 ? "; " + more + " more knocked and are not listed" : "") + "), tap a name to let that one in: ");
  for (const name of door) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "btn";
    b.textContent = name;
    b.setAttribute("aria-label", "Let " + name + " in");
    b.addEventListener("click", () => put({ admit: name }));
    box.append(b, " ");
  }
}

function admit() {
  const name = prompt("Let a late student in: their nickname (they join with it once, even with the room closed or full)");
  if (name && name.trim()) put({ admit: name.trim() });
}

function toggleJoinScreen() {
  if (state && state.page !== "lobby") put({ join_screen: !state.join_screen });
}

$("#c-create").addEventListener("click", () => create().catch(() => {}));
$("#c-prev").addEventListener("click", () => step(-1));
$("#c-next").addEventListener("click", () => step(1));
$("#c-lock").addEventListener("click", () => put({ locked: !state.locked }));
$("#c-reveal").addEventListener("click", reveal);
$("#c-reopen").addEventListener("click", reopen);
$("#c-admit").addEventListener("click", admit);
$("#c-door-in").addEventListener("click", () => put({ let_in_door: true }));
$("#c-pause").addEventListener("click", () => put({ paused: !state.paused }));
$("#c-board").addEventListener("click", () => put({ leaderboard: !state.leaderboard }));
$("#c-room-lock").addEventListener("click", () => put({ room_locked: !state.room_locked }));
$("#c-phones").addEventListener("click", () => put({ models_on_phones: !state.models_on_phones }));
$("#c-places").addEventListener("change", () => {
  const n = Number($("#c-places").value);
  if (Number.isInteger(n) && n >= 1 && n <= 1000) put({ max_participants: n });
});
$("#c-remove-silent").addEventListener("click", () => {
  const n = state ? state.silent || 0 : 0;
  if (!n) return;
  if (confirm("Remove " + n + (n === 1 ? " nickname that has" : " nicknames that have") + " never answered, though the class " +
    "answered since they joined? Their places and nicknames are freed.")) {
    api(sessionPath(code, "/participants?never_answered=true"), { method: "DELETE", model: false }).catch(() => {});
  }
});
$("#c-end").addEventListener("click", () => { if (confirm("End the session? Students can no longer answer.")) put({ ended: true }); });
$("#c-delete").addEventListener("click", () => {
  if (confirm("Delete this session and every answer in it?")) {
    api(sessionPath(code), { method: "DELETE", model: false }).then(() => { location.href = "/class"; });
  }
});
$("#c-bert-text").addEventListener("input", drawMaskPicker);
$("#c-bert-go").addEventListener("click", () => addBert().catch(() => {}));
document.addEventListener("keydown", (e) => {
  if (!code || wallKey || typingTarget(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
  const act = { ArrowRight: () => step(1), ArrowLeft: () => step(-1), l: () => put({ locked: !state.locked }),
    r: reveal, o: reopen, p: () => put({ paused: !state.paused }), j: toggleJoinScreen }[e.key.length === 1 ? e.key.toLowerCase() : e.key];
  if (act && state) { e.preventDefault(); act(); }
});
drawMaskPicker();
start();
