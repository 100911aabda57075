/* A page as slides on the projector: slides(nodes) shows one of `nodes` at a time (the others get
   the class slide-off, which static/projector.css hides); ← and → (or PageUp and PageDown) move
   between them when the keyboard is not in a text box, and a small counter with ← → buttons says
   where the class is ("2 / 6"). Off the projector nothing changes: every node stays on the page. */
import { el, typingTarget } from "./dom.js";

export function slides(nodes) {
  const list = [...nodes];
  if (list.length < 2) return;
  let at = 0;
  const where = el("span", { class: "slide-where", "aria-live": "polite" });
  const go = (k) => {
    at = Math.max(0, Math.min(list.length - 1, k));
    list.forEach((node, j) => node.classList.toggle("slide-off", j !== at));
    where.textContent = (at + 1) + " / " + list.length;
  };
  const nav = el("div", { class: "slide-nav", role: "group", "aria-label": "Parts of this page" }, [
    el("button", { type: "button", class: "btn btn-small", "aria-label": "Previous part", text: "←", onclick: () => go(at - 1) }),
    where,
    el("button", { type: "button", class: "btn btn-small", "aria-label": "Next part", text: "→", onclick: () => go(at + 1) }),
  ]);
  document.body.append(nav);
  document.addEventListener("keydown", (e) => {
    if (typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
    const step = { ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1 }[e.key];
    if (step) { e.preventDefault(); go(at + step); }
  });
  go(0);
}
