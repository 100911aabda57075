/* Be the BERT on a phone: one box per hidden character that types like one text box (issue 51).
   letterBoxes(node, count, opts)  replaces the item's hidden characters (.c-hole, lib/classroom.js
                          drawItem) in `node` with `count` boxes; returns { boxes, send }.
   opts: value (the answer already sent: shown, boxes disabled), disabled, draft (an array the boxes
         keep what is typed in, so a redraw of the page does not lose it), focus (the box to focus),
         onSend(guess) (with it, a "Send my guess" button; the guess has a character in every box)
   Typing fills the boxes in order (focus moves on), Backspace in an empty box goes back and clears the
   one before, a paste or a word the keyboard suggests spreads over the boxes from the box it lands in,
   ← and → move between boxes, Enter sends. Mobile keyboards often send no key for a letter (keydown's
   key is "Unidentified"), so the typing itself is read from the `input` event, never from keydown.
   A box left empty is never sent as a space: the button says which box is empty and goes there. */
import { el } from "./dom.js";

/* The characters of `text` a box can hold: a hidden character is never a space (the server refuses
   hiding one), so spaces (and line breaks in a paste) carry nothing. */
const letters = (text) => [...text].filter((ch) => !/\s/.test(ch));

export function letterBoxes(node, count, opts = {}) {
  const shown = opts.value ? [...opts.value] : opts.draft || [];
  const boxes = [];
  for (let j = 0; j < count; j++) {
    boxes.push(el("input", { type: "text", class: "c-mask", "aria-label": "hidden character " + (j + 1) + " of " + count,
      autocomplete: "off", autocapitalize: "none", autocorrect: "off", spellcheck: "false",
      enterkeyhint: j === count - 1 ? "send" : "next", dataset: { box: String(j) },
      value: shown[j] || "", disabled: Boolean(opts.disabled || opts.value) }));
  }
  const kept = boxes.map((b) => b.value); // each box's value as this module last left it
  const note = el("p", { class: "note j-fill-note", role: "status" });
  const keep = () => {
    boxes.forEach((b, j) => { kept[j] = b.value; b.removeAttribute("aria-invalid"); });
    if (opts.draft) opts.draft.splice(0, opts.draft.length, ...kept);
    note.textContent = "";
  };
  const go = (j) => {
    const box = boxes[Math.max(0, Math.min(count - 1, j))];
    box.focus();
    box.select(); // the next character typed replaces this one, as in one text box with the letter selected
  };
  // Lay `text` over the boxes from box `from` on (what does not fit is dropped); focus the box after it.
  const spread = (from, text) => {
    const list = letters(text).slice(0, count - from);
    list.forEach((ch, k) => { boxes[from + k].value = ch; });
    keep();
    go(from + list.length);
  };
  const empty = () => boxes.findIndex((b) => !b.value);
  const send = () => {
    const j = empty();
    if (j >= 0) {
      boxes[j].setAttribute("aria-invalid", "true");
      note.textContent = "Box " + (j + 1) + " is empty: type a character in it, then send.";
      go(j);
      return;
    }
    opts.onSend(boxes.map((b) => b.value).join(""));
  };

  boxes.forEach((box, j) => {
    let before = null; // the box's selection just before an edit, to tell what the edit added
    box.addEventListener("beforeinput", () => { before = { start: box.selectionStart, end: box.selectionEnd }; });
    box.addEventListener("input", () => {
      const was = kept[j];
      // what the edit inserted: value = was[0, start) + inserted + was[end, ...). Without a beforeinput
      // (older browsers) the box's letter was selected (go() selects it), so all of it was replaced.
      const { start, end } = before || { start: 0, end: was.length };
      before = null;
      const value = box.value;
      const inserted = value.slice(start, value.length - (was.length - end));
      if (!value) keep(); // the letter deleted: stay here
      else if (letters(inserted).length) spread(j, inserted); // one letter, or several (a suggestion, an IME): spread
      else { // only a space, or an edit that added nothing (a keyboard ending its word): nothing changes
        box.value = was;
        if (document.activeElement === box) box.select();
      }
    });
    box.addEventListener("paste", (e) => {
      e.preventDefault();
      spread(j, (e.clipboardData || window.clipboardData).getData("text"));
    });
    box.addEventListener("keydown", (e) => {
      if (e.key === "Backspace" && !box.value && j > 0) {
        e.preventDefault();
        boxes[j - 1].value = "";
        keep();
        go(j - 1);
      } else if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
        e.preventDefault();
        go(j + (e.key === "ArrowLeft" ? -1 : 1));
      } else if (e.key === "Enter" && opts.onSend) {
        e.preventDefault();
        send();
      }
    });
    box.addEventListener("focus", () => box.select());
    box.addEventListener("click", () => box.select()); // a tap puts the caret somewhere: select the letter again
  });

  node.querySelectorAll(".c-hole").forEach((hole, j) => { if (boxes[j]) hole.replaceWith(boxes[j]); });
  if (opts.onSend) node.append(el("button", { type: "button", class: "btn j-send", text: "Send my guess", onclick: send }), note);
  if (opts.focus !== null && opts.focus !== undefined && boxes[opts.focus] && !boxes[opts.focus].disabled) go(opts.focus);
  return { boxes, send };
}
