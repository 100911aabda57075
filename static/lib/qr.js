/* The QR code of a link, drawn by the server (GET /api/qr.svg: segno, a maintained QR library;
   error correction level M, the smallest version that holds the link, up to 666 bytes).
   qrImage(text, label) -> an <img class="qr"> of the code, or a <p class="note"> that says why
   there is none: the link is too long, or this is the static copy, which has no server to draw it. */
import { el } from "./dom.js";
import { siteUrl } from "./site.js";

export const MAX_BYTES = 666; // version 20 at level M; the server refuses more (422)

const staticCopy = () => document.querySelector('meta[name="playground-build"]')?.content === "static";

export function qrImage(text, label) {
  if (staticCopy()) {
    return el("p", { class: "note", text: "No QR code in this copy of the playground (it has no server to draw one): " +
      "type or paste the link instead." });
  }
  if (new TextEncoder().encode(text).length > MAX_BYTES) {
    return el("p", { class: "note", text: `This link is too long for a QR code (more than ${MAX_BYTES} bytes): ` +
      "type or paste it instead." });
  }
  return el("img", { class: "qr", src: siteUrl("/api/qr.svg?text=") + encodeURIComponent(text), alt: label, width: 200, height: 200 });
}
