// The vector files the Swift tests read (Tests/CountersignCryptoTests/Vectors), read the way
// scripts/vectors/CountersignVectors/TestVector.swift and Tests/Web/support.py read them, and the small
// helpers every WebUnit test shares. Not a test file itself (no `.test.mjs`), so `node --test` skips it.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { importIdentity } from "../../../Sources/CountersignWebClient/web/js/file-keys.js";

export const VECTORS = fileURLToPath(new URL("../../CountersignCryptoTests/Vectors/", import.meta.url));

export const fromHex = (text) => Uint8Array.from(text.match(/../g) ?? [], (b) => parseInt(b, 16));
export const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
export const fromBase64 = (text) => new Uint8Array(Buffer.from(text, "base64"));

export const text = (name) => readFileSync(VECTORS + name, "utf8");
export const json = (name) => JSON.parse(text(name));

/** One scenario file: `key: value` lines, a blank line, then the bytes in hex. */
export function readVector(name) {
  const [head, body = ""] = text(name).split("\n\n");
  const fields = {};
  for (const line of head.split("\n")) {
    const at = line.indexOf(":");
    fields[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return {
    name: name.replace(/\.txt$/, ""),
    expect: fields.expect,
    identityPEM: Buffer.from(fields.identity, "base64").toString("utf8"),
    from: fields.from ? fromBase64(fields.from) : null,
    payload: fields.payload ?? null,
    comment: fields.comment ?? "",
    bytes: fromHex(body.replace(/\s+/g, "")),
  };
}

/** Every `.txt` vector whose name starts with one of `prefixes`, in name order. */
export const vectorNames = (...prefixes) =>
  readdirSync(VECTORS)
    .filter((n) => n.endsWith(".txt") && prefixes.some((p) => n.startsWith(p)))
    .sort();

const identities = new Map();
/** The vector's identity as the web client imports a key file: {agreement, signing, point, keyId}. */
export function identityOf(vector) {
  if (!identities.has(vector.identityPEM)) {
    const noPassphrase = async () => {
      throw new Error("a vector identity is not encrypted");
    };
    identities.set(vector.identityPEM, importIdentity(vector.identityPEM, noPassphrase));
  }
  return identities.get(vector.identityPEM);
}

/** The `expect:` word of what happened: "success <sha256 hex>" or the refusal's class (`kind`). */
export async function outcome(open) {
  try {
    const plaintext = await open();
    return `success ${toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", plaintext)))}`;
  } catch (error) {
    if (error?.kind) return error.kind;
    return `unexpected ${error?.name}: ${error?.message}`;
  }
}

export const expected = (vector) => (vector.expect === "success" ? `success ${vector.payload}` : vector.expect);

/** A fresh P-256 key pair for ECDH (or ECDSA) with its uncompressed point. */
export async function keyPair(name = "ECDH", extractable = false) {
  const usages = name === "ECDH" ? ["deriveBits"] : ["sign", "verify"];
  const pair = await crypto.subtle.generateKey({ name, namedCurve: "P-256" }, extractable, usages);
  const point = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  return { ...pair, point, spki };
}

/** `bytes` with bit `bit` flipped (a copy). */
export function flip(bytes, bit) {
  const out = bytes.slice();
  out[bit >> 3] ^= 1 << (bit & 7);
  return out;
}

/** A deterministic byte pattern of `n` bytes (not random: failures reproduce). */
export const pattern = (n, seed = 1) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 17 + (i >> 8)) & 0xff);
