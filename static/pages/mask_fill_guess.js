/* Guess first (the Mask-Fill Explorer's class mode): one box per hidden character; Reveal turns on
   once every box holds a guess. v: the page's URL state (pos, guess); guesses: position -> the
   character typed (this module fills it as the student types); revealed: whether Reveal was pressed.
   drawGuesses(v, guesses, revealed)   the boxes;   revealState(...)  the Reveal button and its line */
import { el, clear, $ } from "../lib/dom.js";
import { chars as textChars } from "../lib/text.js";

export function drawGuesses(v, guesses, revealed) {
  const box = clear($("#mf-guess-inputs"));
  if (!v.guess) return;
  if (!v.pos.length) {
    box.appendChild(el("p", { class: "note", text: "Mask some characters first (or ask your instructor for a link)." }));
    return;
  }
  for (const p of v.pos) {
    const id = "mf-guess-" + p;
    const input = el("input", { type: "text", id, class: "guess-input", maxlength: "2", autocomplete: "off",
      autocapitalize: "off", spellcheck: "false", value: guesses[p] || "", dataset: { position: String(p) } });
    input.addEventListener("input", () => {
      const typed = textChars(input.value);
      guesses[p] = typed.length ? typed[typed.length - 1] : "";
      if (typed.length > 1) input.value = guesses[p];
      revealState(v, guesses, revealed);
    });
    box.appendChild(el("div", { class: "guess-field" }, [el("label", { for: id, text: "Position " + p }), input]));
  }
  revealState(v, guesses, revealed);
}

export function revealState(v, guesses, revealed) {
  const missing = v.pos.filter((p) => !guesses[p]).length;
  const button = $("#mf-reveal");
  button.disabled = revealed || !v.pos.length || missing > 0;
  $("#mf-guess-status").textContent = revealed ? "" : missing ? missing + " guess" + (missing === 1 ? "" : "es") +
    " to go, then Reveal." : "All guessed: press Reveal.";
}
