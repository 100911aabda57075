/* A lesson's applet stage on each screen of a class (app/lessons/presenter.py keeps its state):
   the applet runs in a same-origin frame with the stage's settings in its address (every applet keeps
   its settings there, lib/state.js), so one address is the whole applet, wherever it is loaded.

   drawApplet(node, applet, role, onQuery)
     role "teacher":   the applet with its controls; whenever its address changes (a step, a new
                       temperature), opts.onQuery(query) sends its settings to the session. The frame
                       is made once per stage and never reloaded under the teacher's hands
                       (opts.projector: in projector mode, when the teacher's own tab is on the wall).
     role "projector": the applet in projector mode (large type, no chrome), reloaded to the
                       teacher's settings whenever they change.
     role "phone":     the same applet, following the teacher, or a card asking to look at the
                       projector when the teacher chose that for the stage (applet.phones).
   Keys the presenter owns (projector, embed, hide, model, code, key) are never the stage's. */
import { clear, el } from "./dom.js";

const OWN = ["projector", "embed", "hide", "code", "key"];
const WATCH_MS = 500; // the teacher's frame's address is read at least this often (each write is heard at once)

/* The stage's settings only: what the teacher's applet put in its address, less the presenter's keys. */
export function stageQuery(search) {
  const p = new URLSearchParams(search);
  for (const k of OWN) p.delete(k);
  p.delete("model");
  return p.toString();
}

function address(applet, extra, model) {
  const p = new URLSearchParams(applet.query);
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  if (model) p.set("model", model);
  return applet.page + "?" + p.toString();
}

let watcher = null;

function stopWatching() {
  if (watcher) clearInterval(watcher);
  watcher = null;
}

export function drawApplet(node, applet, role, opts) {
  const o = opts || {};
  const stageKey = applet.page + "#" + (o.stage === undefined ? "" : o.stage) + "#" + role;
  let frame = node.querySelector("iframe.c-applet-frame");
  if (role === "phone" && applet.phones === "projector") {
    stopWatching();
    clear(node).append(el("div", { class: "c-look-up" }, [
      el("p", { class: "c-look-up-big", text: "Look at the projector" }),
      el("p", { text: applet.title }),
    ]));
    return;
  }
  // in projector mode (the wall, or the teacher's own tab made the projector): large type
  const extra = role === "projector" || o.projector ? { projector: "1", embed: "1" } : { embed: "1" };
  const src = address(applet, extra, o.model);
  if (frame && frame.dataset.stage === stageKey) {
    // the teacher's frame is the source of its settings: never reloaded under the teacher's hands
    if (role !== "teacher" && frame.dataset.src !== src) swap(node, frame, src, stageKey, applet.title);
    return;
  }
  stopWatching();
  frame = el("iframe", { class: "c-applet-frame", title: applet.title + " (the applet)", src,
    dataset: { stage: stageKey, src, role } });
  clear(node).append(frame);
  if (role === "projector" || o.projector) fitToScreen(node);
  if (role === "teacher" && o.onQuery) {
    let last = applet.query;
    const check = () => {
      let search;
      try {
        search = frame.contentWindow.location.search; // same origin: readable
      } catch (err) {
        return;
      }
      if (!frame.isConnected) { stopWatching(); return; }
      const query = stageQuery(search);
      if (query !== last && frame.contentWindow.location.pathname === applet.page) {
        last = query;
        o.onQuery(query);
      }
    };
    // every applet writes its settings with history.replaceState (lib/state.js): hearing each write at
    // once saves the class up to one poll; the poll stays for anything that writes the address otherwise
    frame.addEventListener("load", () => {
      try {
        // Esc hands the keyboard back to the class page (← → move the class; the applet keeps its own keys)
        frame.contentWindow.addEventListener("keydown", (e) => {
          if (e.key === "Escape") { frame.blur(); window.focus(); }
        });
        const h = frame.contentWindow.history;
        const write = h.replaceState.bind(h);
        h.replaceState = (...args) => { write(...args); check(); };
      } catch (err) { /* another origin: the poll alone */ }
    });
    watcher = setInterval(check, WATCH_MS);
  }
}

/* On a projector the applet takes the screen below the strip and the stage's title, to the last pixel:
   the frame's height follows the space left (a slide never scrolls), measured again on a resize. */
let fitted = null;
function fitToScreen(node) {
  const fit = () => {
    // what the page leaves free below its last line (negative: it scrolls), given to the frame or taken from it
    const body = document.body.getBoundingClientRect().bottom + parseFloat(getComputedStyle(document.body).marginBottom || "0");
    const slack = innerHeight - body - 2;
    if (Math.abs(slack) < 1) return;
    for (const frame of node.querySelectorAll("iframe.c-applet-frame")) {
      frame.style.height = Math.max(200, Math.floor(frame.getBoundingClientRect().height + slack)) + "px";
    }
  };
  if (fitted) fitted.disconnect();
  // the page's own size changes with the window and with the type fit.js chooses: the frame follows both
  fitted = new ResizeObserver(() => requestAnimationFrame(fit));
  fitted.observe(document.body);
  requestAnimationFrame(fit);
}

/* A follower's new settings: the new page loads in a second frame under the first, which goes once
   the new one has loaded, so the projector never shows a blank frame between two steps. */
function swap(node, old, src, stageKey, title) {
  for (const pending of node.querySelectorAll("iframe.c-applet-next")) pending.remove(); // a newer step wins
  const next = el("iframe", { class: "c-applet-frame c-applet-next", title: title + " (the applet)", src,
    dataset: { stage: stageKey, src, role: old.dataset.role }, "aria-hidden": "true", tabindex: "-1" });
  old.dataset.src = src; // asked for: the same settings again load nothing more
  next.style.height = old.style.height;
  next.addEventListener("load", () => {
    next.classList.remove("c-applet-next");
    next.removeAttribute("aria-hidden");
    next.removeAttribute("tabindex");
    for (const frame of node.querySelectorAll("iframe.c-applet-frame")) if (frame !== next) frame.remove();
  });
  node.append(next);
}

export function leaveApplet() {
  stopWatching();
}
