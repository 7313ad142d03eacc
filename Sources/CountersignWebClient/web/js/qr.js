// QR Code encoder (ISO/IEC 18004:2015): byte mode (the text's UTF-8), one error-correction level, the
// smallest version 1–40 that holds the text, and the mask with the lowest penalty score (§7.8.3). What
// people scan here is short (an otpauth URI, a pairing or sign-in URI, a safety number), but any text up
// to the version 40 capacity works. Drawn as SVG from elements, never markup, so nothing in the text can
// become part of the page.

// Per level: the format-information bits (§7.9, Table C.1), then per version (index 0 unused) the error-
// correction codewords per block and the number of blocks (§7.5, Table 9), versions 0–20 on one line and
// 21–40 on the next.
const LEVELS = {
  L: {
    format: 1,
    ecc: [
      0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
      28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    ],
    blocks: [
      0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
      8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25,
    ],
  },
  M: {
    format: 0,
    ecc: [
      0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26,
      26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    ],
    blocks: [
      0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16,
      17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49,
    ],
  },
  Q: {
    format: 3,
    ecc: [
      0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30,
      28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    ],
    blocks: [
      0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20,
      23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68,
    ],
  },
  H: {
    format: 2,
    ecc: [
      0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28,
      30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    ],
    blocks: [
      0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25,
      25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81,
    ],
  },
};

const sizeOf = (version) => version * 4 + 17;

/** Modules left for codewords once the function patterns are placed (§7.7.1: finders, separators,
 *  timing, alignment, format and version information, dark module). */
function rawDataModules(version) {
  let n = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    n -= (25 * align - 10) * align - 55;
    if (version >= 7) n -= 36;
  }
  return n;
}

const dataCodewords = (version, level) =>
  Math.floor(rawDataModules(version) / 8) - LEVELS[level].ecc[version] * LEVELS[level].blocks[version];

/** Centres of the alignment patterns on each axis (§6.3.6, Annex E). */
function alignmentCentres(version) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = Math.floor((version * 8 + count * 3 + 5) / (count * 4 - 4)) * 2;
  const centres = [6];
  for (let at = sizeOf(version) - 7; centres.length < count; at -= step) centres.splice(1, 0, at);
  return centres;
}

// Reed–Solomon over GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D), §7.5.2.
function gfMultiply(a, b) {
  let product = 0;
  for (let bit = 7; bit >= 0; bit--) {
    product = (product << 1) ^ ((product >>> 7) * 0x11d);
    product ^= ((b >>> bit) & 1) * a;
  }
  return product;
}

/** The generator polynomial of the given degree, leading 1 left out, highest power first. */
function generator(degree) {
  const g = new Uint8Array(degree);
  g[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      g[j] = gfMultiply(g[j], root);
      if (j + 1 < degree) g[j] ^= g[j + 1];
    }
    root = gfMultiply(root, 2);
  }
  return g;
}

function remainder(data, g) {
  const r = new Uint8Array(g.length);
  for (const byte of data) {
    const factor = byte ^ r[0];
    r.copyWithin(0, 1);
    r[r.length - 1] = 0;
    for (let i = 0; i < g.length; i++) r[i] ^= gfMultiply(g[i], factor);
  }
  return r;
}

/** The data codewords: mode, count, bytes, terminator, padding (§7.4). */
function dataBits(bytes, version, level) {
  const bits = [];
  const put = (value, length) => {
    for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  put(0b0100, 4); // byte mode
  put(bytes.length, version <= 9 ? 8 : 16);
  for (const b of bytes) put(b, 8);
  const capacity = dataCodewords(version, level) * 8;
  put(0, Math.min(4, capacity - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) put(pad, 8);
  const out = new Uint8Array(capacity / 8);
  for (let i = 0; i < bits.length; i++) out[i >>> 3] |= bits[i] << (7 - (i & 7));
  return out;
}

/** Split into blocks, add each block's error correction, interleave (§7.6). */
function codewords(data, version, level) {
  const blockCount = LEVELS[level].blocks[version];
  const eccLength = LEVELS[level].ecc[version];
  const total = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blockCount - (total % blockCount);
  const shortLength = Math.floor(total / blockCount) - eccLength;
  const g = generator(eccLength);
  const blocks = [];
  for (let i = 0, at = 0; i < blockCount; i++) {
    const length = shortLength + (i < shortBlocks ? 0 : 1);
    const block = data.subarray(at, at + length);
    at += length;
    blocks.push({ data: block, ecc: remainder(block, g) });
  }
  const out = [];
  for (let i = 0; i <= shortLength; i++) for (const b of blocks) if (i < b.data.length) out.push(b.data[i]);
  for (let i = 0; i < eccLength; i++) for (const b of blocks) out.push(b.ecc[i]);
  return out;
}

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

/** BCH-coded format information (§7.9.1): level and mask, masked with 101010000010010. */
function formatBits(level, mask) {
  const data = (LEVELS[level].format << 3) | mask;
  let r = data;
  for (let i = 0; i < 10; i++) r = (r << 1) ^ ((r >>> 9) * 0x537);
  return ((data << 10) | (r & 0x3ff)) ^ 0x5412;
}

/** BCH-coded version information (§7.10), versions 7 and up. */
function versionBits(version) {
  let r = version;
  for (let i = 0; i < 12; i++) r = (r << 1) ^ ((r >>> 11) * 0x1f25);
  return (version << 12) | (r & 0xfff);
}

class Matrix {
  constructor(version) {
    this.version = version;
    this.size = sizeOf(version);
    this.dark = new Uint8Array(this.size * this.size);
    this.reserved = new Uint8Array(this.size * this.size);
  }
  get(x, y) {
    return this.dark[y * this.size + x] === 1;
  }
  fixed(x, y, dark) {
    this.dark[y * this.size + x] = dark ? 1 : 0;
    this.reserved[y * this.size + x] = 1;
  }

  drawFunctionPatterns() {
    const n = this.size;
    for (let i = 0; i < n; i++) {
      this.fixed(6, i, i % 2 === 0);
      this.fixed(i, 6, i % 2 === 0);
    }
    // Finders with their light separators.
    for (const [cx, cy] of [[3, 3], [n - 4, 3], [3, n - 4]]) {
      for (let dy = -4; dy <= 4; dy++) {
        for (let dx = -4; dx <= 4; dx++) {
          const x = cx + dx, y = cy + dy;
          const ring = Math.max(Math.abs(dx), Math.abs(dy));
          if (x >= 0 && x < n && y >= 0 && y < n) this.fixed(x, y, ring !== 2 && ring !== 4);
        }
      }
    }
    const centres = alignmentCentres(this.version);
    const last = centres.length - 1;
    for (let i = 0; i <= last; i++) {
      for (let j = 0; j <= last; j++) {
        // Not where a finder is.
        if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) continue;
        for (let dy = -2; dy <= 2; dy++) {
          for (let dx = -2; dx <= 2; dx++) {
            this.fixed(centres[i] + dx, centres[j] + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
          }
        }
      }
    }
    this.drawFormat(0); // reserves the area; drawn for real once the mask is chosen
    if (this.version >= 7) {
      const bits = versionBits(this.version);
      for (let i = 0; i < 18; i++) {
        const dark = ((bits >>> i) & 1) === 1;
        const a = n - 11 + (i % 3), b = Math.floor(i / 3);
        this.fixed(a, b, dark);
        this.fixed(b, a, dark);
      }
    }
  }

  drawFormat(bits) {
    const n = this.size;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    for (let i = 0; i <= 5; i++) this.fixed(8, i, bit(i));
    this.fixed(8, 7, bit(6));
    this.fixed(8, 8, bit(7));
    this.fixed(7, 8, bit(8));
    for (let i = 9; i < 15; i++) this.fixed(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) this.fixed(n - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i++) this.fixed(8, n - 15 + i, bit(i));
    this.fixed(8, n - 8, true); // the dark module
  }

  /** Codewords in the two-column zigzag from the bottom right (§7.7.3); remainder bits stay light. */
  drawCodewords(words) {
    const n = this.size;
    let i = 0;
    for (let right = n - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5; // the vertical timing pattern's column is skipped
      const upward = ((right + 1) & 2) === 0;
      for (let step = 0; step < n; step++) {
        const y = upward ? n - 1 - step : step;
        for (let x = right; x >= right - 1; x--) {
          if (this.reserved[y * n + x] || i >= words.length * 8) continue;
          this.dark[y * n + x] = (words[i >>> 3] >>> (7 - (i & 7))) & 1;
          i++;
        }
      }
    }
  }

  applyMask(mask) {
    const n = this.size;
    const test = MASKS[mask];
    for (let y = 0; y < n; y++) {
      for (let x = 0; x < n; x++) if (!this.reserved[y * n + x] && test(x, y)) this.dark[y * n + x] ^= 1;
    }
  }

  /** The penalty score of §7.8.3: runs, 2×2 blocks, finder-like patterns, dark/light balance. */
  penalty() {
    const n = this.size;
    let score = 0;
    const line = (at) => {
      const modules = Array.from({ length: n }, (_, i) => at(i));
      let run = 1;
      for (let i = 1; i <= n; i++) {
        if (i < n && modules[i] === modules[i - 1]) run++;
        else {
          if (run >= 5) score += 3 + (run - 5);
          run = 1;
        }
      }
      // 1:1:3:1:1 with four light modules on one side; outside the symbol counts as light (quiet zone).
      const padded = [0, 0, 0, 0, ...modules.map(Number), 0, 0, 0, 0];
      const pattern = [1, 0, 1, 1, 1, 0, 1];
      for (let i = 0; i + 7 <= padded.length; i++) {
        if (!pattern.every((v, k) => padded[i + k] === v)) continue;
        const before = i >= 4 && padded.slice(i - 4, i).every((v) => v === 0);
        const after = i + 11 <= padded.length && padded.slice(i + 7, i + 11).every((v) => v === 0);
        if (before || after) score += 40;
      }
    };
    for (let y = 0; y < n; y++) line((x) => this.get(x, y));
    for (let x = 0; x < n; x++) line((y) => this.get(x, y));
    for (let y = 0; y + 1 < n; y++) {
      for (let x = 0; x + 1 < n; x++) {
        const c = this.get(x, y);
        if (c === this.get(x + 1, y) && c === this.get(x, y + 1) && c === this.get(x + 1, y + 1)) score += 3;
      }
    }
    const dark = this.dark.reduce((sum, d) => sum + d, 0);
    const total = n * n;
    score += (Math.ceil(Math.abs(dark * 20 - total * 10) / total) - 1) * 10;
    return score;
  }
}

/**
 * The QR symbol for `text`: { version, size, level, mask, dark(x, y) }. `mask` forces one (for tests);
 * otherwise the one with the lowest penalty. Throws a RangeError when the text does not fit version 40.
 */
export function encode(text, { level = "M", mask } = {}) {
  if (!Object.hasOwn(LEVELS, level)) throw new RangeError(`no error-correction level ${level}`);
  const bytes = new TextEncoder().encode(text);
  let version = 1;
  while (version <= 40 && 4 + (version <= 9 ? 8 : 16) + bytes.length * 8 > dataCodewords(version, level) * 8) version++;
  if (version > 40) throw new RangeError(`${bytes.length} bytes do not fit in a QR code at level ${level}`);
  const matrix = new Matrix(version);
  matrix.drawFunctionPatterns();
  matrix.drawCodewords(codewords(dataBits(bytes, version, level), version, level));
  let chosen = mask;
  if (chosen === undefined) {
    let best = Infinity;
    for (let m = 0; m < 8; m++) {
      matrix.applyMask(m);
      matrix.drawFormat(formatBits(level, m));
      const score = matrix.penalty();
      if (score < best) [best, chosen] = [score, m];
      matrix.applyMask(m); // a mask is its own inverse
    }
  }
  matrix.applyMask(chosen);
  matrix.drawFormat(formatBits(level, chosen));
  return { version, size: matrix.size, level, mask: chosen, dark: (x, y) => matrix.get(x, y) };
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * An accessible image of the QR code of `text`: an <svg role="img"> named by `label` (what it encodes,
 * in words, e.g. "QR code of the pairing key"), dark on light whatever the page's colours (scanners
 * need that), with the 4-module quiet zone. Sized by CSS (class "qr"). `mask` as for encode().
 */
export function qrCode(text, { label, level = "M", mask } = {}) {
  if (!label) throw new TypeError("a QR code needs a label saying what it encodes");
  const symbol = encode(text, { level, mask });
  const side = symbol.size + 8;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${side} ${side}`);
  svg.setAttribute("class", "qr");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("shape-rendering", "crispEdges");
  svg.dataset.version = String(symbol.version);
  const background = document.createElementNS(SVG, "rect");
  background.setAttribute("width", String(side));
  background.setAttribute("height", String(side));
  background.setAttribute("fill", "#fff");
  // One path: a unit square per dark module, merged along each row's runs.
  let d = "";
  for (let y = 0; y < symbol.size; y++) {
    for (let x = 0; x < symbol.size; x++) {
      if (!symbol.dark(x, y)) continue;
      let run = 1;
      while (x + run < symbol.size && symbol.dark(x + run, y)) run++;
      d += `M${x + 4} ${y + 4}h${run}v1h-${run}z`;
      x += run - 1;
    }
  }
  const modules = document.createElementNS(SVG, "path");
  modules.setAttribute("d", d);
  modules.setAttribute("fill", "#000");
  svg.append(background, modules);
  return svg;
}
