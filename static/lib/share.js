/* Share this setup: a "Copy link" button and a panel that shows the page's link (to type on another
   device), with check boxes that build the link's hide= list and projector=1. The page's own URL
   holds its settings (state.js); the boxes change only the link being built, not this page.
   The projector box starts unticked even in projector mode: a link or QR code shared with a class
   opens on phones, so it carries projector=1 only when asked. On localhost no QR code is drawn
   (no student's phone can open 127.0.0.1); the panel says how to make the server reachable.
   drawSharePanel()  builds the panel inside #share-panel (chrome.js calls it once). */
import { el, $, clear } from "./dom.js";
import { qrImage } from "./qr.js";
import { hiddenControls, onUrlChange } from "./state.js";

const LOCAL = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);
/* An address that opens on this computer only (loopback): no one else's device can use it. */
const localOnly = (host) => LOCAL.has(host) || host.endsWith(".localhost") || /^127\./.test(host);

function controlNames() {
  const seen = new Set();
  const names = [];
  for (const node of document.querySelectorAll("[data-control]")) {
    const name = node.dataset.control;
    if (!seen.has(name)) {
      seen.add(name);
      names.push({ name, label: node.dataset.controlLabel || name.replace(/_/g, " ") });
    }
  }
  return names;
}

/* The link: this page's URL with hide= and projector= taken from the boxes. */
function link() {
  const url = new URL(location.href);
  const hide = [...document.querySelectorAll("#share-hide input:checked")].map((box) => box.value);
  if (hide.length) url.searchParams.set("hide", hide.join(","));
  else url.searchParams.delete("hide");
  const projector = $("#share-projector");
  if (projector && projector.checked) url.searchParams.set("projector", "1");
  else url.searchParams.delete("projector");
  url.hash = "";
  return url.toString();
}

/* The QR code is asked for only while the panel is open. */
function refresh() {
  const box = $("#share-url");
  if (box) box.value = link();
  const qr = $("#share-qr");
  const panel = $("#share-panel");
  if (!qr || !panel || !panel.open) return;
  if (localOnly(location.hostname)) {
    clear(qr).appendChild(el("p", { class: "note", id: "share-no-qr" }, ["No QR code: " + location.hostname +
      " opens only on this computer, so a phone could not open it. For a class, start the server with ",
      el("code", { class: "nowrap", text: "--host 0.0.0.0" }), " (docs/serving.md: “In a classroom on a LAN”) and open " +
      "this page by the address it prints for students; the QR code then shows that address."]));
    return;
  }
  clear(qr).appendChild(qrImage(link(), "QR code of this link: point a phone's camera at it"));
}

/* navigator.clipboard needs a secure context (https or localhost); on a school LAN over plain
   http it is missing, so fall back to selecting the text and the old copy command. */
async function copy(status) {
  const text = link();
  let ok = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      ok = true;
    }
  } catch (err) {
    ok = false;
  }
  if (!ok) {
    const box = $("#share-url");
    if (box) {
      box.focus();
      box.select();
      try {
        ok = document.execCommand("copy");
      } catch (err) {
        ok = false;
      }
    }
  }
  status.textContent = ok ? "Link copied." : "Copy the selected link by hand (Ctrl+C).";
  return ok;
}

export function drawSharePanel() {
  const panel = $("#share-panel");
  if (!panel) return;
  const hidden = new Set(hiddenControls());
  const names = controlNames();
  const status = el("span", { id: "share-status", class: "status", role: "status" });
  // a wrapping box: the whole link stays readable, to type it on a device that cannot paste
  const url = el("textarea", { id: "share-url", readonly: true, class: "share-url", rows: "2", spellcheck: "false" });
  const copyButton = el("button", { type: "button", id: "share-copy", class: "btn", text: "Copy link" });
  copyButton.addEventListener("click", () => copy(status));
  url.addEventListener("focus", () => url.select());
  const projector = el("input", { type: "checkbox", id: "share-projector" }); // unticked: phones get the normal layout
  projector.addEventListener("change", refresh);
  const boxes = names.map(({ name, label }) => {
    const id = "share-hide-" + name;
    const box = el("input", { type: "checkbox", id, value: name, checked: hidden.has(name) ? true : null });
    box.addEventListener("change", refresh);
    return el("span", { class: "check" }, [box, el("label", { for: id, text: label })]);
  });
  // The body is [hidden] while the panel is closed: Chromium lays out a closed <details>'s content
  // (content-visibility), so without this its controls would count as on the page.
  const body = el("div", { id: "share-body", hidden: true });
  panel.addEventListener("toggle", () => {
    body.hidden = !panel.open;
    if (panel.open) refresh();
  });
  body.appendChild(el("div", { class: "share-row share-link" }, [
    el("div", { class: "share-text" }, [
      el("label", { for: "share-url", text: "Link to this exact setup (open it on any device on this network):" }),
      url,
      el("div", { class: "row" }, [copyButton, status]),
      localOnly(location.hostname) ? el("p", { class: "note" }, "This address works on this computer only.") : null,
    ]),
    el("div", { id: "share-qr", class: "share-qr" }),
  ]));
  body.appendChild(el("div", { class: "share-row" }, [
    el("span", { class: "check" }, [projector, el("label", { for: "share-projector", text: "open in projector mode (large type)" })]),
  ]));
  if (boxes.length) {
    body.appendChild(el("fieldset", { id: "share-hide", class: "share-hide" }, [
      el("legend", { text: "Hide these controls in the link (for a focused lesson):" }),
    ].concat(boxes)));
  }
  panel.appendChild(body);
  refresh();
  onUrlChange(refresh);
  const quick = $("#share-quick");
  if (quick) {
    quick.addEventListener("click", async () => {
      panel.open = true; // the link stays on screen, to type on a device that cannot paste
      body.hidden = false;
      const ok = await copy(status);
      quick.textContent = ok ? "Copied ✓" : "Copy link";
      setTimeout(() => { quick.textContent = "Copy link"; }, 2000);
    });
  }
}
