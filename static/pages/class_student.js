/* /join: a student joins a class session with its code and a nickname, then follows the teacher:
   the item on screen is the one the class is on (also after a reload: the session's cookie keeps
   this browser's place), answers once, and after the reveal sees the truth and the class's answers.
   Inside a session the phone shows the class and nothing else (body.in-class hides the site's
   header and footer; a small "leave" link stays), freezes while the teacher pauses, keeps its
   scroll position when it redraws, and shows the rejoin code that gets the nickname back from
   another browser (typed into the form's "Joined already?" field). When the teacher turns on "models on
   the phones" for the session, the phone downloads the device copies of GPT and BERT (with a progress
   line; on mobile data after the student agrees), so each applet can compute here if the server goes. */
import { api } from "../lib/api.js";
import { choiceLabel, drawItem, drawLabels, drawPooled, follow, getResults, getState, isReconnecting, sessionPath } from "../lib/classroom.js";
import { $, clear, el } from "../lib/dom.js";
import { clearError, clearFieldErrors, fieldMessage, showError } from "../lib/errors.js";
import { setParams } from "../lib/state.js";
import { keepOnDevice } from "../lib/compute.js";
import { letterBoxes } from "../lib/letter_boxes.js";
import { drawApplet, leaveApplet } from "../lib/class_applet.js";


/* A Be-the-BERT guess in words. Answers are never sent with a blank now (lib/letter_boxes.js), but a
   session kept from before stores blanks as spaces: shown as "_". */
function bertGuess(guess) {
  if (!guess.trim()) return "nothing: you left every hidden character blank";
  return "“" + guess.replaceAll(" ", "_") + "”" + (guess.includes(" ") ? " (_ = left blank)" : "");
}

let code = (new URLSearchParams(location.search).get("code") || "").toUpperCase();
// The join key of the QR code's link (/join?code=CODE&key=KEY, app/classes/joinkey.py): a secret too long
// to guess, so a join with it gets in even when someone on this network has typed many wrong codes. It
// belongs to the link's code: sent only while the code box still holds that code, on every try.
const link = { code: code.replace(/[\s-]/g, ""), key: new URLSearchParams(location.search).get("key") || "" };
let shown = null; // version of the state on screen
let following = null;
let last = null; // the state on screen (drawn again, taps closed, while reconnecting)
let late = null; // {item, text}: the student's tap on this item arrived after the teacher locked it
let draft = null; // {item, letters}: what the student typed in a Be-the-BERT item's boxes, not sent yet

async function rejoin() {
  if (!code) return;
  $("#j-code").value = code;
  try {
    const s = await getState(code);
    if (s.me) enter(s);
  } catch (err) {
    $("#j-code").value = code; // a wrong or expired code: the form says so when the student presses Join
  }
}

let knocking = null; // the timer of the next try while this network's code guesses are spent

async function join() {
  clearTimeout(knocking);
  code = $("#j-code").value.replace(/[\s-]/g, "").toUpperCase();
  const again = $("#j-rejoin").value.trim();
  const body = again ? { nickname: $("#j-name").value, rejoin: again } : { nickname: $("#j-name").value };
  if (link.key && !again && code === link.code) body.key = link.key;
  try {
    await api(sessionPath(code, "/join"), { model: false, body,
      fields: { code: $("#j-code"), nickname: $("#j-name"), rejoin: $("#j-rejoin") } });
  } catch (err) {
    // Someone on this network sent many wrong codes: the server answers every code alike, and a right
    // one waits at the door until the teacher lets it in (app/classes/door.py). Try again by itself.
    if (err.status !== 429 || err.parameter !== "code" || again) throw err;
    clearError(); // not the student's mistake: a calm line under the code instead of the red box
    clearFieldErrors($("#j-form"));
    fieldMessage($("#j-code"), "Many wrong codes came from your network (the Wi-Fi you are on), so codes from it " +
      "cannot be checked right now. If your code is right, your teacher now sees “" + $("#j-name").value.trim() +
      "” at the door and can let you in." + (body.key ? "" : " Scanning the QR code on the projector gets you in at once.") +
      " This page keeps trying by itself.", "notice");
    knocking = setTimeout(() => join().catch(() => {}), 5000);
    return;
  }
  clearFieldErrors($("#j-form")); // joined: the last try's "nickname is taken" is old news
  fieldMessage($("#j-name"), "", "notice");
  clearError();
  setParams({ code });
  enter(await getState(code));
}

function enter(s) {
  document.body.classList.add("in-class");
  $("#j-form").hidden = true;
  $("#j-class").hidden = false;
  render(s);
  if (!following) {
    following = follow(code, {
      state: (pub) => { if (!shown || pub.version !== shown) getState(code).then(render, () => {}); },
      back: () => { clearError(); getState(code).then(render, () => {}); }, // the server is back (a restart)
      down: () => { if (last) render(last); }, // the taps close until it is back
      gone: () => { $("#j-paused").hidden = true; $("#j-title").textContent = "This class session is over."; clear($("#j-item")); },
    });
  }
}

function send(activity, item, answer) {
  return api(sessionPath(code, "/answers"), { model: false, quiet: true, body: { activity, item, answer } })
    .then(() => { clearError(); return getState(code); }, (err) => {
      // Too late (the teacher locked or moved on as the tap left): not an error of the student's, and
      // the screen's newest state says what is open now. Anything else is shown as before.
      if (err.status === 409 || err.status === 404) late = { item, text: "Your tap arrived just after that: it was not counted." };
      else showError(err.message);
      return getState(code);
    }).then(render, () => {});
}

function choiceButtons(activity, choices, answered, locked, onPick, truth) {
  const row = el("div", { class: "c-choices" + (activity === "concept" ? " c-choices-long" : ""), role: "group", "aria-label": "Your answer" });
  const keys = activity === "concept" ? choices.map((_, k) => String(k)) : choices;
  for (const key of keys) {
    row.append(el("button", { type: "button", class: "btn" + (has(truth) && truth === key ? " is-truth" : ""), "aria-pressed": String(answered === key),
      disabled: locked || (answered !== null && answered !== undefined),
      dataset: { answer: key }, text: choiceLabel(activity, choices, key), onclick: () => onPick(key) }));
  }
  return row;
}

const has = (x) => x !== null && x !== undefined;

function drawLabelLines(item, cur, open) {
  const mine = cur.your_labels || {};
  const done = Object.keys(mine).length;
  const list = el("ol", { class: "j-lines" });
  for (const line of cur.lines || []) {
    list.append(el("li", { class: "j-line" + (has(mine[line.item]) ? " is-done" : ""), dataset: { item: line.item } }, [
      el("p", { class: "c-seg", text: line.text }),
      choiceButtons("label", cur.content.choices, mine[line.item], !open, (key) => send("label", line.item, key)),
    ]));
  }
  item.append(list);
  return done;
}

/* The end screen's own score, as "You got 7 of 10 right: NSP 3/4, Be the BERT 2/3, Concept check 2/3."
   (the revealed items count: app/classes/scores.py). */
function ownScore(score) {
  if (!score.of) return "Your teacher revealed no answers, so there is no score this time.";
  return "You got " + score.right + " of " + score.of + " right: " + score.activities.map((a) => a.name + " " + a.right + "/" + a.of).join(", ") + ".";
}

function title(s, cur, labelled) {
  if (s.applet) return s.applet.title;
  if (!cur) return s.page === "end" || s.ended ? "The session has ended. Thank you!" : "Waiting for the teacher…";
  if (cur.activity === "label") return "Label together · " + labelled + " of " + (cur.lines || []).length + " lines labelled";
  return s.page_name + " · item " + cur.number + " of " + cur.of;
}

function render(s) {
  if (!s.me) { // removed by the teacher (or the nickname taken back on another phone): say so, join again
    const wasIn = following !== null;
    following && following.close();
    following = null;
    shown = null;
    document.body.classList.remove("in-class");
    $("#j-form").hidden = false;
    $("#j-class").hidden = true;
    if (wasIn) {
      fieldMessage($("#j-name"), "You were removed from the class: your teacher removed your nickname, or you joined " +
        "with it on another phone. Pick a nickname and press Join to take part again.", "notice");
    }
    return;
  }
  const y = window.scrollY; // a redraw after each tap must not jump the page back up
  if (shown !== null && s.version !== shown) clearError(); // an error belongs to the state it happened in
  shown = s.version;
  last = s;
  // the teacher's "models on the phones" (once): GPT and BERT, the models the class's activities and most applets
  // run (docs/classroom.md); T5 and PLM, in the device manifest too, download only on a page that needs them
  if (s.models_on_phones && !s.ended) keepOnDevice((key) => key === "gpt" || key === "bert");
  $("#j-me").textContent = s.me.nickname;
  $("#j-code-shown").textContent = s.display_code;
  $("#j-rejoin-shown").textContent = s.me.rejoin_code ? s.me.rejoin_code.slice(0, 3) + "-" + s.me.rejoin_code.slice(3) : "";
  const paused = Boolean(s.paused) && !s.ended;
  $("#j-paused").hidden = !paused;
  const cur = s.current;
  const status = $("#j-status");
  const item = $("#j-item");
  clear($("#j-results"));
  let labelled = 0;
  if (s.page !== "applet") leaveApplet();
  if (s.applet) { // a lesson's applet stage: the same applet, following the teacher (or: look at the projector)
    drawApplet(item, s.applet, "phone", { stage: s.lesson && s.lesson.stage });
    status.textContent = "";
  } else if (!cur) {
    clear(item);
    status.textContent = s.me.score ? ownScore(s.me.score) : ""; // the end screen: the server sends it to this phone only
  } else {
    // a redraw (the teacher changed something) keeps the Be-the-BERT box the student was typing in
    const typing = document.activeElement && document.activeElement.closest("#j-item") ? document.activeElement.dataset.box : undefined;
    const typingIn = typing === undefined ? null : Number(typing);
    drawItem(item, cur);
    const open = !s.locked && !s.revealed && !s.ended && !paused && !isReconnecting();
    if (cur.activity === "fill") {
      if (!draft || draft.item !== cur.item) draft = { item: cur.item, letters: [] };
      letterBoxes(item, cur.content.masks, { value: cur.your_answer, disabled: !open, draft: draft.letters, focus: typingIn,
        onSend: !cur.your_answer && open ? (guess) => send("fill", cur.item, guess) : null });
    } else if (cur.activity === "label") {
      labelled = drawLabelLines(item, cur, open);
    } else {
      item.append(choiceButtons(cur.activity, cur.content.choices, cur.your_answer, !open, (key) => send(cur.activity, cur.item, key),
        s.revealed ? cur.truth : null));
    }
    if (s.revealed) {
      const truthShown = has(cur.truth) ? (cur.activity === "fill" ? "“" + cur.truth + "”" : choiceLabel(cur.activity, cur.content.choices, cur.truth)) : null;
      const right = has(cur.truth) && has(cur.your_answer)
        ? (cur.your_answer === cur.truth ? " You were right." : " You answered " +
          (cur.activity === "fill" ? bertGuess(cur.your_answer) : choiceLabel(cur.activity, cur.content.choices, cur.your_answer)) + ".") : "";
      status.textContent = (truthShown ? "The answer: " + truthShown + "." : "") + right;
      if (cur.activity === "concept" && has(cur.your_answer) && cur.why && cur.why[Number(cur.your_answer)]) {
        status.append(el("span", { class: "c-why", text: "Why not: " + cur.why[Number(cur.your_answer)] }));
      }
      getResults(code).then((r) => {
        if (cur.activity === "label") drawLabels($("#j-results"), r.items, cur.lines, cur.content.choices, true);
        else drawPooled($("#j-results"), r.items.find((x) => x.activity === cur.activity && x.item === cur.item));
      }, () => {});
    } else if (s.locked) {
      status.textContent = "Answers are locked. Look at the projector." + (late && late.item === cur.item ? " " + late.text : "");
    } else if (cur.activity === "label") {
      status.textContent = labelled ? "Labels sent: " + labelled + ". Keep going, or wait for the teacher." : "";
    } else {
      status.textContent = cur.your_answer ? "Answer sent. Wait for the reveal." : "";
    }
  }
  $("#j-title").textContent = title(s, cur, labelled);
  const leaders = clear($("#j-leaders"));
  leaders.hidden = !s.leaders;
  // shown: on top, under the title (as the projector gives it a screen of its own), not below a long reveal
  if (s.leaders) $("#j-title").after(leaders.parentElement);
  else $(".j-stage").append(leaders.parentElement);
  for (const l of s.leaders || []) leaders.append(el("li", { text: l.nickname + ": " + l.score }));
  window.scrollTo(0, y);
}

$("#j-go").addEventListener("click", () => join().catch(() => {}));
$("#j-name").addEventListener("keydown", (e) => { if (e.key === "Enter") join().catch(() => {}); });
rejoin();
