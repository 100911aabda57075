/* A QR code of the share link, drawn here (no library, no network): byte mode, error correction
   level M (about 15 % of the code may be damaged), versions 1 to 20 (up to 666 bytes of link).
   Written from the QR Code standard (ISO/IEC 18004): data bits, Reed-Solomon error correction
   over GF(256), interleaved blocks, the function patterns, the zigzag placement and the mask with
   the lowest penalty. encode(text, {mask}) -> {version, mask, size, modules} or null when
   the text is too long; qrSvg(text, label) -> an <svg> or null. */
import { svg } from "./dom.js";
/* Per version (1..20) at level M: blocks as [count, codewords per block, data codewords per block]. */
const BLOCKS_M = [[[1, 26, 16]], [[1, 44, 28]], [[1, 70, 44]], [[2, 50, 32]], [[2, 67, 43]], [[4, 43, 27]],
  [[4, 49, 31]], [[2, 60, 38], [2, 61, 39]], [[3, 58, 36], [2, 59, 37]], [[4, 69, 43], [1, 70, 44]],
  [[1, 80, 50], [4, 81, 51]], [[6, 58, 36], [2, 59, 37]], [[8, 59, 37], [1, 60, 38]], [[4, 64, 40], [5, 65, 41]],
  [[5, 65, 41], [5, 66, 42]], [[7, 73, 45], [3, 74, 46]], [[10, 74, 46], [1, 75, 47]], [[9, 69, 43], [4, 70, 44]],
  [[3, 70, 44], [11, 71, 45]], [[3, 67, 41], [13, 68, 42]]];
/* Row/column centres of the alignment patterns, per version. */
const ALIGN = [[], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34], [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50],
  [6, 30, 54], [6, 32, 58], [6, 34, 62], [6, 26, 46, 66], [6, 26, 48, 70], [6, 26, 50, 74], [6, 30, 54, 78],
  [6, 30, 56, 82], [6, 30, 58, 86], [6, 34, 62, 90]];
const LEVEL_M = 0; // the 2 format bits of level M

/* ---------- GF(256) with x^8 + x^4 + x^3 + x^2 + 1 (0x11D), and Reed-Solomon ---------- */
const EXP = new Array(512);
const LOG = new Array(256);
(function tables() {
  let x = 1;
  for (let i = 0; i < 255; i++) {
    EXP[i] = x;
    LOG[x] = i;
    x <<= 1;
    if (x & 0x100) x ^= 0x11d;
  }
  for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255];
})();
const mul = (a, b) => (a === 0 || b === 0 ? 0 : EXP[LOG[a] + LOG[b]]);

/* Generator (x - a^0)(x - a^1)...(x - a^(n-1)), coefficients from the highest power down. */
function generator(n) {
  let poly = [1];
  for (let i = 0; i < n; i++) {
    const next = new Array(poly.length + 1).fill(0);
    for (let j = 0; j < poly.length; j++) {
      next[j] ^= poly[j];
      next[j + 1] ^= mul(poly[j], EXP[i]);
    }
    poly = next;
  }
  return poly;
}

/* The n error-correction codewords: the remainder of data * x^n divided by the generator. */
function remainder(data, n) {
  const gen = generator(n);
  const rem = new Array(n).fill(0);
  for (const byte of data) {
    const factor = byte ^ rem[0];
    rem.shift();
    rem.push(0);
    for (let i = 0; i < n; i++) rem[i] ^= mul(gen[i + 1], factor);
  }
  return rem;
}

/* ---------- data codewords ---------- */
function capacity(version) {
  return BLOCKS_M[version - 1].reduce((sum, [count, , data]) => sum + count * data, 0);
}

function chooseVersion(bytes) {
  for (let v = 1; v <= BLOCKS_M.length; v++) {
    const bits = 4 + (v < 10 ? 8 : 16) + 8 * bytes.length;
    if (bits <= capacity(v) * 8) return v;
  }
  return null;
}

function dataCodewords(bytes, version) {
  const bits = [];
  const put = (value, n) => { for (let i = n - 1; i >= 0; i--) bits.push((value >>> i) & 1); };
  put(0b0100, 4); // byte mode
  put(bytes.length, version < 10 ? 8 : 16);
  for (const b of bytes) put(b, 8);
  const total = capacity(version) * 8;
  put(0, Math.min(4, total - bits.length)); // terminator
  while (bits.length % 8) bits.push(0);
  const words = [];
  for (let i = 0; i < bits.length; i += 8) words.push(parseInt(bits.slice(i, i + 8).join(""), 2));
  for (let pad = 0xec; words.length < total / 8; pad ^= 0xec ^ 0x11) words.push(pad);
  return words;
}

/* Split into blocks, add each block's error correction, interleave column by column. */
function finalCodewords(data, version) {
  const blocks = [];
  let at = 0;
  for (const [count, total, size] of BLOCKS_M[version - 1]) {
    for (let b = 0; b < count; b++) {
      const part = data.slice(at, at + size);
      at += size;
      blocks.push({ data: part, ec: remainder(part, total - size) });
    }
  }
  const out = [];
  const longest = Math.max(...blocks.map((b) => b.data.length));
  for (let i = 0; i < longest; i++) for (const b of blocks) if (i < b.data.length) out.push(b.data[i]);
  for (let i = 0; i < blocks[0].ec.length; i++) for (const b of blocks) out.push(b.ec[i]);
  return out;
}

/* ---------- the symbol ---------- */
function bchFormat(mask) {
  const data = (LEVEL_M << 3) | mask;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  return ((data << 10) | (rem & 0x3ff)) ^ 0x5412;
}

function bchVersion(version) {
  let rem = version;
  for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
  return (version << 12) | (rem & 0xfff);
}

class Symbol {
  constructor(version) {
    this.version = version;
    this.size = 17 + 4 * version;
    this.dark = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    this.fixed = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    this.functionPatterns();
  }

  set(row, col, dark) {
    this.dark[row][col] = dark;
    this.fixed[row][col] = true;
  }

  functionPatterns() {
    const n = this.size;
    for (let i = 0; i < n; i++) { // timing patterns
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [r, c] of [[3, 3], [3, n - 4], [n - 4, 3]]) { // finders with their light separators
      for (let dr = -4; dr <= 4; dr++) {
        for (let dc = -4; dc <= 4; dc++) {
          const rr = r + dr, cc = c + dc;
          if (rr < 0 || rr >= n || cc < 0 || cc >= n) continue;
          const ring = Math.max(Math.abs(dr), Math.abs(dc));
          this.set(rr, cc, ring !== 2 && ring !== 4);
        }
      }
    }
    const centres = ALIGN[this.version - 1];
    for (const r of centres) {
      for (const c of centres) {
        if ((r === 6 && c === 6) || (r === 6 && c === n - 7) || (r === n - 7 && c === 6)) continue; // finders
        for (let dr = -2; dr <= 2; dr++) {
          for (let dc = -2; dc <= 2; dc++) this.set(r + dr, c + dc, Math.max(Math.abs(dr), Math.abs(dc)) !== 1);
        }
      }
    }
    this.format(0); // reserve the format areas (drawn again with the chosen mask)
    if (this.version >= 7) {
      const bits = bchVersion(this.version);
      for (let i = 0; i < 18; i++) {
        const bit = ((bits >>> i) & 1) === 1;
        const a = n - 11 + (i % 3), b = Math.floor(i / 3);
        this.set(b, a, bit);
        this.set(a, b, bit);
      }
    }
  }

  format(mask) {
    const n = this.size;
    const bits = bchFormat(mask);
    const bit = (i) => ((bits >>> i) & 1) === 1;
    for (let i = 0; i <= 5; i++) this.set(i, 8, bit(i));
    this.set(7, 8, bit(6));
    this.set(8, 8, bit(7));
    this.set(8, 7, bit(8));
    for (let i = 9; i < 15; i++) this.set(8, 14 - i, bit(i));
    for (let i = 0; i < 8; i++) this.set(8, n - 1 - i, bit(i));
    for (let i = 8; i < 15; i++) this.set(n - 15 + i, 8, bit(i));
    this.set(n - 8, 8, true); // the dark module
  }

  /* Codeword bits in the zigzag: two-column strips from the right, up then down, skipping column 6. */
  place(codewords) {
    const n = this.size;
    let i = 0;
    const total = codewords.length * 8;
    for (let right = n - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5;
      const upward = ((right + 1) & 2) === 0;
      for (let step = 0; step < n; step++) {
        const row = upward ? n - 1 - step : step;
        for (let j = 0; j < 2; j++) {
          const col = right - j;
          if (this.fixed[row][col]) continue;
          if (i < total) this.dark[row][col] = ((codewords[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
          i++; // remainder bits past the codewords stay light (0) before masking
        }
      }
    }
  }

  applyMask(mask) {
    const test = MASKS[mask];
    for (let r = 0; r < this.size; r++) {
      for (let c = 0; c < this.size; c++) if (!this.fixed[r][c] && test(r, c)) this.dark[r][c] = !this.dark[r][c];
    }
  }
}

const MASKS = [
  (r, c) => (r + c) % 2 === 0,
  (r) => r % 2 === 0,
  (r, c) => c % 3 === 0,
  (r, c) => (r + c) % 3 === 0,
  (r, c) => (Math.floor(r / 2) + Math.floor(c / 3)) % 2 === 0,
  (r, c) => ((r * c) % 2) + ((r * c) % 3) === 0,
  (r, c) => (((r * c) % 2) + ((r * c) % 3)) % 2 === 0,
  (r, c) => (((r + c) % 2) + ((r * c) % 3)) % 2 === 0,
];

/* The standard's penalty: long runs, 2x2 blocks, finder-like patterns, dark/light balance. */
function penalty(m) {
  const n = m.length;
  let score = 0;
  const lines = [];
  for (let i = 0; i < n; i++) {
    lines.push(m[i]);
    lines.push(m.map((row) => row[i]));
  }
  const finderA = [1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0].map(Boolean);
  const finderB = finderA.slice().reverse();
  for (const line of lines) {
    let run = 1;
    for (let i = 1; i <= n; i++) {
      if (i < n && line[i] === line[i - 1]) run++;
      else {
        if (run >= 5) score += 3 + (run - 5);
        run = 1;
      }
    }
    for (let i = 0; i + 11 <= n; i++) {
      const matches = (p) => p.every((v, k) => line[i + k] === v);
      if (matches(finderA)) score += 40;
      if (matches(finderB)) score += 40;
    }
  }
  let dark = 0;
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (m[r][c]) dark++;
      if (r + 1 < n && c + 1 < n && m[r][c] === m[r][c + 1] && m[r][c] === m[r + 1][c] && m[r][c] === m[r + 1][c + 1]) score += 3;
    }
  }
  const k = Math.ceil(Math.abs(dark * 20 - n * n * 10) / (n * n)) - 1;
  return score + 10 * Math.max(0, k);
}

export function encode(text, opts) {
  const bytes = [...new TextEncoder().encode(text)];
  const version = chooseVersion(bytes);
  if (version === null) return null;
  const codewords = finalCodewords(dataCodewords(bytes, version), version);
  const build = (mask) => {
    const s = new Symbol(version);
    s.place(codewords);
    s.applyMask(mask);
    s.format(mask);
    return s;
  };
  let mask = opts && Number.isInteger(opts.mask) ? opts.mask : null;
  if (mask === null) {
    let best = Infinity;
    for (let k = 0; k < 8; k++) {
      const p = penalty(build(k).dark);
      if (p < best) {
        best = p;
        mask = k;
      }
    }
  }
  const s = build(mask);
  return { version, mask, size: s.size, modules: s.dark };
}

/* An <svg> with a 4-module light margin; one path for the dark modules. */
export function qrSvg(text, label) {
  const code = encode(text);
  if (!code) return null;
  const q = 4, n = code.size + 2 * q;
  let d = "";
  code.modules.forEach((row, r) => row.forEach((dark, c) => { if (dark) d += "M" + (c + q) + " " + (r + q) + "h1v1h-1z"; }));
  return svg("svg", { class: "qr", viewBox: "0 0 " + n + " " + n, role: "img", "aria-label": label || "QR code of the link",
    "shape-rendering": "crispEdges" }, [
    svg("rect", { width: n, height: n, fill: "#fff" }),
    svg("path", { d, fill: "#000" }),
  ]);
}
