// Byte helpers for the formats (docs/SPEC.md §1): concatenation, lv(), base64url and hex.

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

export function fromBase64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("not base64url");
  const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

export const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** A key ID (docs/SPEC.md §2.4) as shown: four groups of 8 hex digits, a line break allowed only
 *  between groups (a zero-width space after each colon). */
export const groupedKeyId = (keyIdHex) => keyIdHex.match(/.{8}/g).join(":\u200b");

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}
