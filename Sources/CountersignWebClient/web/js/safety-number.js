// The safety number (docs/SPEC.md §9): Signal's numeric fingerprint over each account's set of active
// device signing keys, 60 digits shown as 12 groups of 5.
import { concat, lv, utf8 } from "./bytes.js";

function compare(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** keys(A): lv of each distinct SPKI, in ascending byte order. */
export function keyBytes(spkis) {
  const distinct = [];
  for (const k of [...spkis].sort(compare))
    if (!distinct.length || compare(distinct[distinct.length - 1], k) !== 0) distinct.push(k);
  return concat(...distinct.map(lv));
}

/** digits(A): 30 digits from `iterations` rounds of SHA-512 over `version || keys || id`. */
export async function digits(keys, id, iterations = 5200) {
  let h = concat(Uint8Array.of(0, 0), keys, id);
  for (let i = 0; i < iterations; i++) h = new Uint8Array(await crypto.subtle.digest("SHA-512", concat(h, keys)));
  let out = "";
  for (let i = 0; i < 30; i += 5) {
    let n = 0;
    for (const b of h.subarray(i, i + 5)) n = n * 256 + b;
    out += String(n % 100000).padStart(5, "0");
  }
  return out;
}

/** The 60-digit safety number of two accounts, each `{ username, signingKeys: [SPKI bytes] }`. */
export async function safetyNumber(a, b) {
  for (const side of [a, b]) {
    if (!side.signingKeys.length)
      throw new Error(`${side.username} has no active device key, so there is no safety number to compare.`);
  }
  const [da, db] = await Promise.all([
    digits(keyBytes(a.signingKeys), utf8(a.username)),
    digits(keyBytes(b.signingKeys), utf8(b.username)),
  ]);
  return da < db ? da + db : db + da;
}

/** 12 groups of 5 digits. */
export const display = (number) => number.match(/.{5}/g).join(" ");
