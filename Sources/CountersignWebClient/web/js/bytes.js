// Byte helpers for the formats (docs/SPEC.md §1): concatenation, lv(), base64url and hex.
import { fingerprint } from "./rules.js";

export const utf8 = (text) => new TextEncoder().encode(text);

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** lv(x) = u16(byte length of x) || x */
export function lv(bytes) {
  if (bytes.length > 0xffff) throw new RangeError("a field longer than 65535 bytes");
  return concat(new Uint8Array([bytes.length >> 8, bytes.length & 0xff]), bytes);
}

export function base64url(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The bytes of canonical unpadded base64url, as Swift's Base64URL(text:) reads it: no padding, no other
 *  characters, and zero spare bits (atob() would drop them, so "AB" would read as "AA" does). */
export function fromBase64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new Error("not base64url");
  // The last character's low 4 bits (2 left over) or 2 bits (3 left over) are spare: they must be zero.
  const spare = [0, 0, 0x0f, 0x03][text.length % 4];
  if (spare && ALPHABET.indexOf(text[text.length - 1]) & spare) throw new Error("not canonical base64url");
  const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

export const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** A key ID (docs/SPEC.md §2.4) as shown: four groups of 8 hex digits, a line break allowed only
 *  between groups (a zero-width space after each colon). */
export const groupedKeyId = (keyIdHex) => fingerprint(keyIdHex).replaceAll(":", ":\u200b");

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}
