/* A phone shows the page's controls first (issue 51). Below 601 px:
   - a long intro folds: the paragraphs that open a page (its p.lead, with the notes and folds right after
     them) go into one closed "About this page" fold; a short one (a few lines) stays, it is worth reading
     first and costs little room;
   - a panel that explains what the controls below it show goes below them (LATER).
   A wider window (a phone turned, a laptop) puts everything back where the page has it; the projector
   keeps the page's order. Without scripts nothing moves.
   controlsFirst()  called once by chrome.js */
import { el } from "./dom.js";

const NARROW = "(max-width: 600px)"; // the phones' width in style.css and phone.css
const LONG = 280; // characters: about seven lines at 390 px; a shorter intro stays open
// page -> [the panel to move (a node inside it), the panel it goes after (a node inside it)]
const LATER = {
  attention: ["#a-lines", "#a-text"], // the four lines of code, after the text box and the grids it draws
};

function opening(main) {
  const first = main && main.querySelector(":scope > p.lead");
  const run = [];
  const intro = (n) => n && !n.hidden && n.matches("p.lead, p.note, details:not(.share-panel)");
  for (let n = first; intro(n); n = n.nextElementSibling) run.push(n);
  return run.reduce((sum, p) => sum + p.textContent.trim().length, 0) >= LONG ? run : [];
}

/* One change of the page's order, made on a phone and undone on a wider screen. */
function fold(run) {
  const box = el("details", { class: "intro-fold" }, [el("summary", { text: "About this page" })]);
  return (on) => {
    if (on && !box.isConnected) {
      run[0].before(box);
      box.append(...run);
    } else if (!on && box.isConnected) {
      box.before(...run);
      box.remove();
    }
  };
}

function later(panel, anchor) {
  const mark = document.createComment(" its place on a wide screen ");
  return (on) => {
    if (on && !mark.isConnected) {
      panel.before(mark);
      anchor.after(panel);
    } else if (!on && mark.isConnected) {
      mark.replaceWith(panel);
    }
  };
}

export function controlsFirst() {
  const main = document.querySelector("main");
  const changes = [];
  const run = opening(main);
  if (run.length) changes.push(fold(run));
  const [what, after] = LATER[document.body.dataset.page] || [];
  const panel = what && document.querySelector(what)?.closest("main > section");
  const anchor = after && document.querySelector(after)?.closest("main > section");
  if (panel && anchor && panel !== anchor) changes.push(later(panel, anchor));
  if (!changes.length) return;
  const narrow = matchMedia(NARROW);
  const apply = () => {
    const on = narrow.matches && !document.documentElement.classList.contains("projector");
    for (const change of changes) change(on);
  };
  apply();
  narrow.addEventListener("change", apply);
}
