// ALTCHA proof of work (docs/PROTOCOL.md §4): find n with SHA-256(salt || n) = challenge, trying
// start, start + stride, … up to max. A module worker hashing in plain JavaScript: salt || n fits one
// SHA-256 block, so each try is the padded block written in place and one compression (sha256-stream.js),
// with nothing allocated but the digits; WebCrypto's promise per digest made a median of 4.6 s for
// ALTCHA's default range in Chromium on a 2-core machine. A salt too long for one block takes the stream.
import { SHA256 } from "./sha256-stream.js";

const PROGRESS_EVERY = 16384;

self.onmessage = ({ data: { salt, challenge, start, stride, max } }) => {
  const prefix = new TextEncoder().encode(salt);
  const view = new DataView(Uint8Array.from(challenge.match(/../g) ?? [], (pair) => parseInt(pair, 16)).buffer);
  const target = view.byteLength === 32 ? Array.from({ length: 8 }, (_, i) => view.getInt32(i * 4)) : null;
  const sha = new SHA256();
  const block = new Uint8Array(64);
  block.set(prefix.subarray(0, 64));
  /** SHA-256(salt || n) into sha.h. */
  const hash = (n) => {
    const digits = String(n);
    let length = prefix.length;
    if (length + digits.length > 55) {
      const digest = new DataView(sha.reset().update(new TextEncoder().encode(salt + digits)).digest().buffer);
      for (let i = 0; i < 8; i++) sha.h[i] = digest.getInt32(i * 4);
      return;
    }
    for (let i = 0; i < digits.length; i++) block[length++] = digits.charCodeAt(i);
    block[length] = 0x80;
    block.fill(0, length + 1, 62);
    block[62] = (length * 8) >>> 8;
    block[63] = (length * 8) & 0xff;
    sha.reset().block(block, 0);
  };
  let tried = 0;
  for (let n = start; n <= max; n += stride) {
    hash(n);
    tried += 1;
    if (target && target.every((word, i) => word === sha.h[i])) {
      self.postMessage({ found: n, tried });
      return;
    }
    if (tried % PROGRESS_EVERY === 0) self.postMessage({ tried });
  }
  self.postMessage({ found: null, tried });
};
