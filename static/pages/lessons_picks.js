/* The class activities' pickers in the lesson editor (lessons_stages.js places them in a stage's card):
   nspPairs     NSP: a number of pairs drawn with a stated seed, or pairs picked from the model set's
                quiz bank (browsed one pair at a time: GET /api/nsp/quiz?index=N), in the teacher's order
   fillItems    Be the BERT: sentences, each with its hidden characters clicked (1 to 10), as the class
                page's picker does (a strip of character buttons; ←/→ move along it, one Tab stop)
   conceptPicker  the concept check: questions chosen from its bank (GET /api/concepts) and ordered
   Each edits the stage object in place, calls changed(), and marks its controls with data-path (the
   field's place in the lesson file) so the server's refusal lands beside them. */
import { api } from "../lib/api.js";
import { clear, el, rovingKeys } from "../lib/dom.js";
import { fieldMessage } from "../lib/errors.js";
import { button, field, uid } from "./lessons_kit.js";

const MAX_HIDDEN = 10; // app/lessons/schema.py FillItem.positions
const pairs = new Map(); // NSP pairs seen while browsing, by id: their text names a picked pair on the list

/* An ordered list the teacher rearranges: each row's words, then Up, Down and Remove (buttons, so the
   keyboard does it all); after a move the same button of the moved row keeps the focus. */
function ordered(list, values, words, changed) {
  const draw = (focus) => {
    clear(list);
    values.forEach((value, k) => {
      const text = words(value);
      const move = (d, act) => {
        const [x] = values.splice(k, 1);
        values.splice(k + d, 0, x);
        draw({ row: k + d, act });
        changed();
      };
      list.append(el("li", { class: "l-pick" }, [
        el("span", { class: "l-pick-text", text }),
        el("span", { class: "l-pick-tools", role: "group", "aria-label": "Item " + (k + 1) }, [
          button("↑", () => move(-1, "up"), { attrs: { "aria-label": "Move up", disabled: k === 0, dataset: { act: "up" } } }),
          button("↓", () => move(1, "down"), { attrs: { "aria-label": "Move down", disabled: k === values.length - 1, dataset: { act: "down" } } }),
          button("Remove", () => { values.splice(k, 1); draw({ row: Math.min(k, values.length - 1), act: "remove" }); changed(); },
            { attrs: { "aria-label": "Remove item " + (k + 1), dataset: { act: "remove" } } }),
        ]),
      ]));
    });
    if (!values.length) list.append(el("li", { class: "note l-none", text: "None yet." }));
    if (focus && list.children[focus.row]) {
      const row = list.children[focus.row];
      const target = [row.querySelector("[data-act='" + focus.act + "']"), ...row.querySelectorAll("button")].find((b) => b && !b.disabled);
      if (target) target.focus();
    }
  };
  draw();
  return draw;
}

/* ---------- NSP: drawn with a seed, or picked from the bank ---------- */
export function nspPairs(stage, path, changed) {
  const drawn = { count: stage.count || 5, seed: stage.seed !== undefined && stage.seed !== null ? stage.seed : Math.floor(Math.random() * 10000) };
  const picked = stage.items ? stage.items.slice() : [];
  const num = (v) => (String(v).trim() === "" ? undefined : Number(v));
  const count = el("input", { type: "number", min: "1", max: "50", value: drawn.count, inputmode: "numeric", dataset: { path: path + ".count" },
    oninput: (e) => { drawn.count = num(e.target.value); stage.count = drawn.count; changed(); } });
  const seed = el("input", { type: "number", min: "0", value: drawn.seed, inputmode: "numeric", dataset: { path: path + ".seed" },
    oninput: (e) => { drawn.seed = num(e.target.value); stage.seed = drawn.seed; changed(); } });
  const reseed = button("Draw other pairs", () => {
    drawn.seed = Math.floor(Math.random() * 100000);
    seed.value = drawn.seed;
    stage.seed = drawn.seed;
    changed();
  });
  const drawBox = el("div", { class: "controls" }, [field("How many pairs (1 to 50)", count), field("Seed", seed,
    { hint: "The same seed draws the same pairs every time." }), reseed]);

  const list = el("ol", { class: "l-picked", id: uid("pairs"), dataset: { path: path + ".items" } });
  const words = (id) => { const p = pairs.get(id); return p ? id + ": “" + short(p.a) + "” / “" + short(p.b) + "”" : id; };
  const redraw = ordered(list, picked, words, changed);
  const browser = bankBrowser((item) => {
    picked.push(item.id);
    redraw();
    changed();
  }, (id) => picked.includes(id));
  const pickBox = el("div", {}, [el("div", { class: "control wide" }, [
    el("span", { class: "label", id: list.id + "-h", text: "The pairs, in the order the class meets them" }), list]), browser.node]);
  list.setAttribute("aria-labelledby", list.id + "-h");

  const name = uid("nsp-way");
  const setWay = (way) => {
    drawBox.hidden = way !== "draw";
    pickBox.hidden = way !== "pick";
    if (way === "draw") {
      delete stage.items;
      Object.assign(stage, { count: drawn.count, seed: drawn.seed });
    } else {
      delete stage.count;
      delete stage.seed;
      stage.items = picked;
      browser.open();
    }
  };
  const way = el("fieldset", { class: "l-radios" }, [el("legend", { text: "Which pairs" }),
    ...[["draw", "Drawn at random from the bank"], ["pick", "Picked by you from the bank"]].map(([value, text]) =>
      el("label", {}, [el("input", { type: "radio", name, value, checked: (stage.items ? "pick" : "draw") === value,
        onchange: () => { setWay(value); changed(); } }), " " + text]))]);
  setWay(stage.items ? "pick" : "draw");
  return [way, drawBox, pickBox];
}

const short = (text) => { const s = String(text).replace(/\s+/g, " ").trim(); return s.length > 40 ? s.slice(0, 39) + "…" : s; };

/* The quiz bank, one pair at a time (the bank has a few hundred: fetched only as the teacher looks). */
function bankBrowser(add, has) {
  let current = null;
  let started = false;
  const at = el("input", { type: "number", min: "1", value: "1", inputmode: "numeric", id: uid("pair-at"),
    onchange: (e) => load(Number(e.target.value)) });
  const total = el("span", { class: "note" });
  const shownPair = el("div", { class: "l-pair", "aria-live": "polite" });
  const addButton = button("Add this pair", () => { if (current && !has(current.id)) { add(current); addButton.disabled = true; } },
    { primary: true });
  async function load(k) {
    fieldMessage(at, "", "error");
    try {
      current = await api("/api/nsp/quiz", { params: { index: k - 1 }, quiet: true });
    } catch (err) {
      fieldMessage(at, "That pair could not be shown: " + (err.detail || err.message), "error");
      return;
    }
    pairs.set(current.id, current);
    at.value = current.index + 1;
    at.max = current.count;
    total.textContent = "of " + current.count + " (" + current.id + ")";
    clear(shownPair).append(el("p", { class: "label", text: "Segment A" }), el("div", { class: "c-seg", text: current.a }),
      el("p", { class: "label", text: "Segment B" }), el("div", { class: "c-seg c-seg-b", text: current.b }));
    addButton.disabled = has(current.id);
  }
  const step = (d) => load(Math.max(1, Math.min(Number(at.max) || 1e9, Number(at.value) + d)));
  const node = el("div", { class: "l-bank panel" }, [
    el("div", { class: "row" }, [field("Pair in the bank", at), total,
      button("←", () => step(-1), { attrs: { "aria-label": "Previous pair in the bank" } }),
      button("→", () => step(1), { attrs: { "aria-label": "Next pair in the bank" } }), addButton]),
    shownPair]);
  return { node, open: () => { if (!started) { started = true; load(1); } } };
}

/* ---------- Be the BERT: sentences and their hidden characters ---------- */
export function fillItems(stage, path, changed) {
  const list = el("ol", { class: "l-fill", id: uid("sentences"), dataset: { path: path + ".items" } });
  const draw = () => {
    clear(list);
    stage.items.forEach((item, j) => list.append(fillItem(stage, item, j, path, changed, draw)));
  };
  draw();
  const add = button("Add a sentence", () => {
    stage.items.push({ text: "", positions: [] });
    draw();
    changed();
    list.lastElementChild.querySelector("input").focus();
  });
  return [el("div", { class: "control wide" }, [el("span", { class: "label", text: "Sentences: type each one, then click the characters to hide (1 to 10)" }),
    list, el("div", { class: "row" }, add)])];
}

function fillItem(stage, item, j, path, changed, redraw) {
  const at = path + ".items[" + j + "]";
  const text = el("input", { type: "text", maxlength: "120", spellcheck: "false", value: item.text, dataset: { path: at + ".text" },
    placeholder: "To be, or not to be, that is the question" });
  const strip = el("div", { class: "c-chars l-chars", role: "group", id: uid("chars"), dataset: { path: at + ".positions" },
    "aria-label": "Sentence " + (j + 1) + ": the characters; press one to hide it" });
  const count = el("p", { class: "note l-hidden-count", "aria-live": "polite" });
  const chars = () => [...item.text]; // code points, as the server counts positions
  const say = () => {
    const n = item.positions.length;
    count.textContent = item.text ? n + (n === 1 ? " character hidden: " : " characters hidden: ") +
      (item.positions.map((p) => chars()[p]).join("") || "none yet") + " (1 to " + MAX_HIDDEN + ")" : "Type the sentence first.";
  };
  function toggle(button, i) {
    fieldMessage(strip, "", "notice");
    if (button.getAttribute("aria-disabled") === "true") {
      fieldMessage(strip, "A space cannot be hidden: pick a letter or a punctuation mark.", "notice");
      return;
    }
    const k = item.positions.indexOf(i);
    if (k >= 0) item.positions.splice(k, 1);
    else if (item.positions.length >= MAX_HIDDEN) {
      fieldMessage(strip, "At most " + MAX_HIDDEN + " characters per sentence: show one again first.", "notice");
      return;
    } else {
      item.positions.push(i);
      item.positions.sort((a, b) => a - b);
    }
    button.setAttribute("aria-pressed", String(k < 0));
    say();
    changed();
  }
  const drawStrip = () => {
    clear(strip);
    chars().forEach((ch, i) => {
      const space = /\s/.test(ch);
      strip.append(el("button", { type: "button", class: "ch" + (space ? " is-space" : ""), tabindex: i === 0 ? "0" : "-1",
        dataset: { index: String(i) }, "aria-pressed": String(item.positions.includes(i)), "aria-disabled": space ? "true" : null,
        "aria-label": (space ? "space" : ch) + ", character " + (i + 1), text: space ? "␣" : ch,
        onclick: (e) => toggle(e.currentTarget, i) }));
    });
    say();
  };
  rovingKeys(strip, () => {});
  text.addEventListener("input", () => {
    item.text = text.value;
    const now = chars();
    item.positions = item.positions.filter((p) => p < now.length && !/\s/.test(now[p])); // the hidden ones still there
    drawStrip();
    changed();
  });
  drawStrip();
  const remove = button("Remove this sentence", () => { stage.items.splice(j, 1); redraw(); changed(); },
    { attrs: { disabled: stage.items.length < 2 } });
  return el("li", { class: "l-fill-item" }, [field("Sentence " + (j + 1), text, { wide: true }),
    el("div", { class: "control wide" }, [strip, count]), remove]);
}

/* ---------- the concept check: questions chosen and ordered ---------- */
export function conceptPicker(stage, path, changed, bank) {
  const byId = new Map(bank.map((q) => [q.id, q]));
  const list = el("ol", { class: "l-picked", id: uid("questions"), dataset: { path: path + ".questions" } });
  const words = (id) => { const q = byId.get(id); return q ? q.topic + ": " + q.question : id + " (not a question of the concept check)"; };
  const select = el("select", { class: "l-add-q" });
  const add = button("Add the question", () => {
    if (!select.value) return;
    stage.questions.push(select.value);
    redraw();
    choices();
    changed();
    select.focus();
  });
  const choices = () => {
    const left = bank.filter((q) => !stage.questions.includes(q.id));
    clear(select).append(...left.map((q) => el("option", { value: q.id, text: short(q.topic) + ": " + q.question })));
    add.disabled = !left.length;
  };
  const redraw = ordered(list, stage.questions, words, () => { choices(); changed(); });
  choices();
  list.setAttribute("aria-labelledby", list.id + "-h");
  return [el("div", { class: "control wide" }, [
    el("span", { class: "label", id: list.id + "-h", text: "The questions, in the order the class meets them" }), list]),
  el("div", { class: "row l-add-q-row" }, [field("Add a question from the concept check", select, { wide: true }), add])];
}
