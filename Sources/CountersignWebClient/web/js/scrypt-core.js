// scrypt (RFC 7914) for reading `countersign keygen` key files (docs/SPEC.md §2.2): WebCrypto has PBKDF2
// but no scrypt. PBKDF2-HMAC-SHA-256 comes from WebCrypto; ROMix and Salsa20/8 are here, on 32-bit words.
// Seconds of work: it runs in scrypt-worker.js, never on the page's thread (scrypt.js starts the worker).

// The most memory one derivation may take (128·r·N bytes): well above what key files use (the readers'
// bound is 256 MiB), well below what makes a typed array fail or a tab die.
const MAX_MEMORY = 1 << 30;

async function pbkdf2(password, salt, length) {
  const key = await crypto.subtle.importKey("raw", password, "PBKDF2", false, ["deriveBits"]);
  return new Uint8Array(
    await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations: 1 }, key, length * 8),
  );
}

const rotl = (a, b) => (a << b) | (a >>> (32 - b));

/** Salsa20/8 core on the 16 words of `b` at `bi`, in place. */
function salsa8(b, bi, x) {
  for (let i = 0; i < 16; i++) x[i] = b[bi + i];
  for (let i = 0; i < 8; i += 2) {
    x[4] ^= rotl(x[0] + x[12], 7); x[8] ^= rotl(x[4] + x[0], 9);
    x[12] ^= rotl(x[8] + x[4], 13); x[0] ^= rotl(x[12] + x[8], 18);
    x[9] ^= rotl(x[5] + x[1], 7); x[13] ^= rotl(x[9] + x[5], 9);
    x[1] ^= rotl(x[13] + x[9], 13); x[5] ^= rotl(x[1] + x[13], 18);
    x[14] ^= rotl(x[10] + x[6], 7); x[2] ^= rotl(x[14] + x[10], 9);
    x[6] ^= rotl(x[2] + x[14], 13); x[10] ^= rotl(x[6] + x[2], 18);
    x[3] ^= rotl(x[15] + x[11], 7); x[7] ^= rotl(x[3] + x[15], 9);
    x[11] ^= rotl(x[7] + x[3], 13); x[15] ^= rotl(x[11] + x[7], 18);
    x[1] ^= rotl(x[0] + x[3], 7); x[2] ^= rotl(x[1] + x[0], 9);
    x[3] ^= rotl(x[2] + x[1], 13); x[0] ^= rotl(x[3] + x[2], 18);
    x[6] ^= rotl(x[5] + x[4], 7); x[7] ^= rotl(x[6] + x[5], 9);
    x[4] ^= rotl(x[7] + x[6], 13); x[5] ^= rotl(x[4] + x[7], 18);
    x[11] ^= rotl(x[10] + x[9], 7); x[8] ^= rotl(x[11] + x[10], 9);
    x[9] ^= rotl(x[8] + x[11], 13); x[10] ^= rotl(x[9] + x[8], 18);
    x[12] ^= rotl(x[15] + x[14], 7); x[13] ^= rotl(x[12] + x[15], 9);
    x[14] ^= rotl(x[13] + x[12], 13); x[15] ^= rotl(x[14] + x[13], 18);
  }
  for (let i = 0; i < 16; i++) b[bi + i] = (b[bi + i] + x[i]) | 0;
}

/** BlockMix: `b` (2r blocks of 16 words) → `y`, shuffled (even blocks first, then odd). */
function blockMix(b, y, r, t, x) {
  const last = (2 * r - 1) * 16;
  for (let i = 0; i < 16; i++) t[i] = b[last + i];
  for (let i = 0; i < 2 * r; i++) {
    for (let k = 0; k < 16; k++) t[k] ^= b[i * 16 + k];
    salsa8(t, 0, x);
    const to = ((i & 1) * r + (i >> 1)) * 16;
    for (let k = 0; k < 16; k++) y[to + k] = t[k];
  }
}

function roMix(block, n, r) {
  const words = 32 * r;
  const v = new Int32Array(words * n);
  let xb = new Int32Array(words);
  let yb = new Int32Array(words);
  const t = new Int32Array(16);
  const x = new Int32Array(16);
  for (let i = 0; i < words; i++) {
    const o = i * 4;
    xb[i] = block[o] | (block[o + 1] << 8) | (block[o + 2] << 16) | (block[o + 3] << 24);
  }
  for (let i = 0; i < n; i++) {
    v.set(xb, i * words);
    blockMix(xb, yb, r, t, x);
    [xb, yb] = [yb, xb];
  }
  const last = (2 * r - 1) * 16;
  for (let i = 0; i < n; i++) {
    const j = xb[last] & (n - 1);
    for (let k = 0; k < words; k++) xb[k] ^= v[j * words + k];
    blockMix(xb, yb, r, t, x);
    [xb, yb] = [yb, xb];
  }
  for (let i = 0; i < words; i++) {
    const o = i * 4;
    block[o] = xb[i];
    block[o + 1] = xb[i] >>> 8;
    block[o + 2] = xb[i] >>> 16;
    block[o + 3] = xb[i] >>> 24;
  }
}

const positive = (v) => Number.isSafeInteger(v) && v > 0;

/** Refuses what RFC 7914 does not define or this page cannot hold, before any work. */
function check(password, salt, n, r, p, length) {
  const bytes = (v) => ArrayBuffer.isView(v) || v instanceof ArrayBuffer;
  if (!bytes(password) || !bytes(salt)) throw new Error("the password and salt must be bytes");
  if (!positive(n) || n < 2 || !Number.isInteger(Math.log2(n))) throw new Error("N must be a power of two above 1");
  if (!positive(r) || !positive(p) || r * p >= 2 ** 30) throw new Error("r and p must be positive integers");
  if (!positive(length) || length > 1 << 20) throw new Error("the key length must be a positive integer");
  if (128 * r * n > MAX_MEMORY || 128 * r * p > MAX_MEMORY)
    throw new Error("N and r ask for more memory than this page may use");
}

/** scrypt(password, salt, N, r, p, length) → bytes, on the calling thread. The caller bounds N, r and p
 *  for untrusted files; what is not scrypt at all is refused here. */
export async function scryptHere(password, salt, n, r, p, length) {
  check(password, salt, n, r, p, length);
  const b = await pbkdf2(password, salt, p * 128 * r);
  for (let i = 0; i < p; i++) roMix(b.subarray(i * 128 * r, (i + 1) * 128 * r), n, r);
  return pbkdf2(password, b, length);
}
