/* Errors in plain words, next to the control that caused them.
   showError(message) / clearError()   the page's error box (#error-box)
   fieldMessage(control, message, kind, place)
                     a message under `control` (kind "error": role=alert, aria-invalid; "notice":
                     role=status, something was adjusted); id <control id>-error / -notice; placed
                     at the end of the control's [data-control]/.control block, or right after the
                     control with place "after"; scrolled into view; an empty message removes it
   clearFieldErrors(root)
   sentence(err, own) what went wrong as a sentence: the network, the model set, a busy server
                     and a too-large body first, then `own` (the page's sentence), then the detail
   report(err, fields) an API error beside the control its `parameter` names: fields maps a
                     parameter to {control, say(err) -> sentence}; the rest goes to the error box */
import { el, $ } from "./dom.js";

export function showError(message) {
  const box = $("#error-box");
  if (box) box.textContent = message ? "Error: " + message : "";
}

export function clearError() {
  showError("");
}

function intoView(node) {
  const r = node.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) node.scrollIntoView({ block: "center", behavior: "auto" });
}

export function fieldMessage(control, message, kind, place) {
  if (!control) return null;
  const notice = kind === "notice";
  const cls = notice ? "field-notice" : "field-error";
  const id = (control.id || "field") + (notice ? "-notice" : "-error");
  let node = document.getElementById(id);
  if (!message) {
    if (node) node.remove();
    if (!notice) control.removeAttribute("aria-invalid");
    return null;
  }
  if (!node) {
    node = el("p", { class: cls, id, role: notice ? "status" : "alert" });
    if (place === "after") control.insertAdjacentElement("afterend", node);
    else ((control.closest && control.closest("[data-control], .control")) || control.parentNode).appendChild(node);
  }
  node.textContent = message;
  if (!notice) {
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", id);
  }
  intoView(node);
  return node;
}

export function clearFieldErrors(root) {
  for (const node of (root || document).querySelectorAll(".field-error")) node.remove();
  for (const node of (root || document).querySelectorAll("[aria-invalid='true']")) node.removeAttribute("aria-invalid");
}

/* The sentence for what any page can meet, or null. */
function generic(err) {
  if (err.status === 0) return "The server could not be reached. Check the network connection and try again.";
  if (err.parameter === "model") {
    if (err.status === 409) return "The chosen model set does not include the model this page needs. Pick another one.";
    if (err.status === 503) return "The chosen model set could not be loaded on this server. Pick another one.";
    return "The chosen model set is not on this server any more. Pick another one.";
  }
  if (err.status === 503) return "The server is busy with the whole class right now. Try again in a moment.";
  if (err.status === 413) return "That is too much text to send at once.";
  return null;
}

export function sentence(err, own) {
  const known = generic(err);
  if (known) return known;
  if (own) return own;
  const detail = err.detail || String(err.message || "").replace(/ \(HTTP \d+\)$/, "");
  return detail.charAt(0).toUpperCase() + detail.slice(1) + (/[.!?]$/.test(detail) ? "" : ".");
}

export function report(err, fields) {
  if (!err || err.name === "AbortError") return;
  const entry = (fields || {})[err.parameter] || null;
  const text = sentence(err, entry && entry.say ? entry.say(err) : null);
  if (entry && entry.control && !generic(err)) {
    clearError();
    fieldMessage(entry.control, text, "error");
  } else {
    showError(text);
    const box = $("#error-box");
    if (box) intoView(box);
  }
}
