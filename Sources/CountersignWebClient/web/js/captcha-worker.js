// ALTCHA proof of work (docs/PROTOCOL.md §4): find n with SHA-256(salt || n) = challenge, trying
// start, start + stride, … up to max. WebCrypto does the hashing, a batch of digests in flight at once
// (one at a time spends most of its time waiting for each promise).
const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
const BATCH = 512;

self.onmessage = async ({ data: { salt, challenge, start, stride, max } }) => {
  const encoder = new TextEncoder();
  let tried = 0;
  for (let first = start; first <= max; first += stride * BATCH) {
    const numbers = [];
    for (let n = first; n <= max && numbers.length < BATCH; n += stride) numbers.push(n);
    const digests = await Promise.all(numbers.map((n) => crypto.subtle.digest("SHA-256", encoder.encode(salt + n))));
    const hit = digests.findIndex((d) => hex(d) === challenge);
    if (hit >= 0) {
      self.postMessage({ found: numbers[hit], tried: tried + hit + 1 });
      return;
    }
    tried += numbers.length;
    self.postMessage({ tried });
  }
  self.postMessage({ found: null, tried });
};
