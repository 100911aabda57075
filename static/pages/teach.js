/* /teach: where the instructor login lands. The lessons to give (one click starts a class with one),
   a class without a lesson, and the classes still open (to go back to one, its projector link included). */
import { api } from "../lib/api.js";
import { $, clear, el } from "../lib/dom.js";

async function give(lesson, button) {
  button.disabled = true;
  try {
    const made = await api("/api/sessions", { model: false, body: { lesson: lesson.id } });
    location.href = "/class?code=" + encodeURIComponent(made.code);
  } finally {
    button.disabled = false;
  }
}

function minutes(lesson) {
  return (lesson.minutes ? "about " + lesson.minutes + " minutes · " : "") + lesson.stages + " stages";
}

async function start() {
  let lessons, listing;
  try {
    [lessons, listing] = await Promise.all([api("/api/lessons", { model: false, quiet: true }),
      api("/api/sessions", { model: false, quiet: true })]);
  } catch (err) {
    if (err.status === 401 || err.status === 403) { $("#t-login").hidden = false; return; }
    throw err;
  }
  $("#t-main").hidden = false;
  const list = clear($("#t-lesson-list"));
  for (const lesson of lessons) {
    const go = el("button", { type: "button", class: "btn", text: "Give this lesson", "aria-label": "Give " + lesson.title });
    go.addEventListener("click", () => give(lesson, go).catch(() => {}));
    list.append(el("li", { class: "t-lesson" }, [
      el("div", {}, [el("strong", { text: lesson.title }), el("span", { class: "note", text: " · " + minutes(lesson) +
        (lesson.shipped ? " · ships with the app" : "") }), lesson.summary ? el("p", { class: "t-summary", text: lesson.summary }) : null]),
      go,
    ]));
  }
  if (!lessons.length) list.append(el("li", { class: "note", text: "No lesson yet: prepare one." }));
  const open = clear($("#t-sessions"));
  for (const s of listing.sessions.slice(0, 8)) {
    open.append(el("li", {}, el("a", { href: "/class?code=" + s.code,
      text: s.display_code + " · " + s.joined + " joined" + (s.ended ? " · ended" : "") + " · started " +
        new Date(s.created_at).toLocaleString([], { weekday: "short", hour: "2-digit", minute: "2-digit" }) })));
  }
  if (!listing.sessions.length) open.append(el("li", { class: "note", text: "none" }));
  $("#t-reach").textContent = listing.reachable ? "Students will open " + listing.student_urls[0] + "/join"
    : "Students cannot reach this server yet: it listens on this computer only. Restart it with " + listing.fix +
      " so that phones on the same network can join.";
}

start();
