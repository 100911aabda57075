/* /join: a student joins a class session with its code and a nickname, then follows the teacher:
   the item on screen is the one the class is on (also after a reload: the session's cookie keeps
   this browser's place), answers once, and after the reveal sees the truth and the class's answers. */
import { api } from "../lib/api.js";
import { choiceLabel, drawItem, drawPooled, follow, getResults, getState, sessionPath } from "../lib/classroom.js";
import { $, clear, el } from "../lib/dom.js";
import { setParams } from "../lib/state.js";

let code = (new URLSearchParams(location.search).get("code") || "").toUpperCase();
let shown = null; // version of the state on screen
let following = null;

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

async function join() {
  code = $("#j-code").value.replace(/[\s-]/g, "").toUpperCase();
  await api(sessionPath(code, "/join"), { model: false, body: { nickname: $("#j-name").value },
    fields: { code: $("#j-code"), nickname: $("#j-name") } });
  setParams({ code });
  enter(await getState(code));
}

function enter(s) {
  $("#j-form").hidden = true;
  $("#j-class").hidden = false;
  $("#j-me").textContent = s.me.nickname;
  $("#j-code-shown").textContent = s.display_code;
  render(s);
  if (!following) {
    following = follow(code, {
      state: (pub) => { if (!shown || pub.version !== shown) getState(code).then(render, () => {}); },
      gone: () => { $("#j-title").textContent = "This class session is over."; clear($("#j-item")); },
    });
  }
}

function send(activity, item, answer) {
  return api(sessionPath(code, "/answers"), { model: false, body: { activity, item, answer } })
    .then(() => getState(code)).then(render, () => {});
}

function choiceButtons(cur, answered, onPick) {
  const row = el("div", { class: "c-choices", role: "group", "aria-label": "Your answer" });
  const keys = cur.activity === "concept" ? cur.content.choices.map((_, k) => String(k)) : cur.content.choices;
  for (const key of keys) {
    row.append(el("button", { type: "button", class: "btn", "aria-pressed": String(answered === key), disabled: answered !== null && answered !== undefined,
      dataset: { answer: key }, text: choiceLabel(cur.activity, cur.content.choices, key), onclick: () => onPick(key) }));
  }
  return row;
}

function render(s) {
  if (!s.me) { // removed by the teacher: join again
    following && following.close();
    following = null;
    $("#j-form").hidden = false;
    $("#j-class").hidden = true;
    return;
  }
  shown = s.version;
  const cur = s.current;
  const status = $("#j-status");
  const item = $("#j-item");
  clear($("#j-results"));
  $("#j-title").textContent = cur ? s.page_name + " · item " + cur.number + " of " + cur.of
    : s.page === "end" || s.ended ? "The session has ended. Thank you!" : "Waiting for the teacher…";
  if (!cur) {
    clear(item);
    status.textContent = "";
  } else {
    drawItem(item, cur);
    const open = !s.locked && !s.revealed && !s.ended;
    if (cur.activity === "bert") {
      const holes = [...item.querySelectorAll(".c-hole")];
      holes.forEach((hole, j) => {
        const box = el("input", { type: "text", class: "c-mask", maxlength: "1", "aria-label": "hidden character " + (j + 1),
          value: cur.your_answer ? [...cur.your_answer][j] : "", disabled: !open || Boolean(cur.your_answer) });
        hole.replaceWith(box);
      });
      if (!cur.your_answer && open) {
        item.append(el("button", { type: "button", class: "btn", text: "Send my guess", onclick: () => {
          const guess = [...item.querySelectorAll(".c-mask")].map((b) => b.value || " ").join("");
          send("bert", cur.item, guess);
        } }));
      }
    } else if (cur.activity === "label") {
      for (const line of cur.lines || []) {
        const mine = (cur.your_labels || {})[line.item];
        item.append(el("p", { class: "c-seg", text: line.text }),
          choiceButtons({ activity: "label", content: { choices: cur.content.choices } }, open ? mine || null : mine || "",
            (key) => send("label", line.item, key)));
      }
    } else {
      item.append(choiceButtons(cur, open ? cur.your_answer : cur.your_answer || "", (key) => send(cur.activity, cur.item, key)));
    }
    if (s.revealed) {
      const right = cur.truth !== null && cur.truth !== undefined && cur.your_answer !== null && cur.your_answer !== undefined
        ? (cur.your_answer === cur.truth ? " You were right." : " You answered " + choiceLabel(cur.activity, cur.content.choices, cur.your_answer) + ".") : "";
      status.textContent = (cur.truth !== undefined && cur.truth !== null
        ? "The answer: " + (cur.activity === "bert" ? "“" + cur.truth + "”" : choiceLabel(cur.activity, cur.content.choices, cur.truth)) + "." : "") + right;
      getResults(code).then((r) => drawPooled($("#j-results"), r.items.find((x) => x.activity === cur.activity && x.item === cur.item)), () => {});
    } else if (s.locked) {
      status.textContent = "Answers are locked. Look at the projector.";
    } else {
      status.textContent = cur.your_answer ? "Answer sent. Wait for the reveal." : "";
    }
  }
  const leaders = clear($("#j-leaders"));
  leaders.hidden = !s.leaders;
  for (const l of s.leaders || []) leaders.append(el("li", { text: l.nickname + ": " + l.score }));
}

$("#j-go").addEventListener("click", () => join().catch(() => {}));
$("#j-name").addEventListener("keydown", (e) => { if (e.key === "Enter") join().catch(() => {}); });
rejoin();
