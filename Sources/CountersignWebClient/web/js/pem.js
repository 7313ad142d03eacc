// PEM armor (RFC 7468) and public key files in both forms (docs/SPEC.md §2.3): SPKI, and FileLock's raw
// point under a PUBLIC KEY label. Read leniently about line endings, strictly about everything else;
// refusals carry the spec's error class in `kind`.
import { concat, groupedKeyId, hex, sha256 } from "./bytes.js";
import { DERError, keyName, OID, Reader, TAG } from "./der.js";

export class KeyError extends Error {
  constructor(kind, detail) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
  }
}

const b64 = (bytes) => {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};

/** The first PEM block of `text`: {label, der}. Text before it is ignored (OpenSSL's "Bag Attributes"). */
export function parsePEM(text) {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  const begin = lines.findIndex((l) => l.startsWith("-----BEGIN ") && l.endsWith("-----"));
  if (begin < 0) throw new KeyError("malformed PEM", "no -----BEGIN …----- line");
  const label = lines[begin].slice(11, -5);
  const end = lines.findIndex((l, i) => i > begin && l.startsWith("-----END"));
  if (end < 0) throw new KeyError("malformed PEM", `no -----END ${label}----- line (truncated file?)`);
  if (lines[end] !== `-----END ${label}-----`)
    throw new KeyError("malformed PEM", `BEGIN ${label} does not match ${lines[end]}`);
  if (lines.slice(end + 1).some((l) => l !== "")) throw new KeyError("malformed PEM", "data after the END line");
  const body = lines.slice(begin + 1, end).join("");
  if (body.includes(":"))
    throw new KeyError("malformed PEM", "legacy PEM headers (Proc-Type/DEK-Info) are not supported");
  let der;
  try {
    der = Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
  } catch {
    der = null;
  }
  // Canonical base64 only: what decodes must encode back to the same text.
  if (!der || der.length === 0 || b64(der) !== body)
    throw new KeyError("malformed PEM", "the base64 between the armor lines is invalid");
  return { label, der };
}

/** PEM text: 64-character lines ending in `eol` (FileLock's form uses CRLF). */
export function armor(label, der, eol = "\n") {
  const body = b64(der).match(/.{1,64}/g) ?? [];
  return [`-----BEGIN ${label}-----`, ...body, `-----END ${label}-----`, ""].join(eol);
}

// P-256: y² = x³ − 3x + b over p, with p ≡ 3 (mod 4) so a square root is one exponentiation.
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;
const big = (bytes) => BigInt("0x" + (hex(bytes) || "0"));
const bytes32 = (n) => Uint8Array.from(n.toString(16).padStart(64, "0").match(/../g), (h) => parseInt(h, 16));
function pow(base, exp) {
  let r = 1n;
  base %= P;
  for (; exp > 0n; exp >>= 1n, base = (base * base) % P) if (exp & 1n) r = (r * base) % P;
  return r;
}

/** WebCrypto accepts only uncompressed points everywhere; readers accept compressed ones too. */
function uncompress(point) {
  const x = big(point.subarray(1));
  if (x >= P) throw new KeyError("invalid point", "the point is not on the P-256 curve");
  const rhs = (((x * x * x - 3n * x + B) % P) + P) % P;
  let y = pow(rhs, (P + 1n) / 4n);
  if ((y * y) % P !== rhs) throw new KeyError("invalid point", "the point is not on the P-256 curve");
  if (Number(y & 1n) !== (point[0] & 1)) y = P - y;
  return concat(Uint8Array.of(4), bytes32(x), bytes32(y));
}

/** The 65-byte uncompressed point, checked on the curve (WebCrypto refuses points that are not). */
export async function validPoint(point) {
  let p = point;
  if (p.length === 33 && (p[0] === 2 || p[0] === 3)) p = uncompress(p);
  if (p.length !== 65 || p[0] !== 4) throw new KeyError("invalid point", "not a P-256 point");
  try {
    await crypto.subtle.importKey("raw", p, { name: "ECDH", namedCurve: "P-256" }, true, []);
  } catch {
    throw new KeyError("invalid point", "the point is not on the P-256 curve (the file is corrupt or hostile)");
  }
  return p;
}

const SPKI_PREFIX = Uint8Array.from(
  "3059301306072a8648ce3d020106082a8648ce3d030107034200".match(/../g),
  (h) => parseInt(h, 16),
);

/** The SubjectPublicKeyInfo DER of an uncompressed point. */
export const spkiOf = (point) => concat(SPKI_PREFIX, point);

/** docs/SPEC.md §2.4: the key ID (16 bytes) of a point. */
export const keyIdOf = async (point) => (await sha256(spkiOf(point))).subarray(0, 16);

/** The key ID as shown: four groups of 8 hex digits. */
export const fingerprintText = (keyId) => groupedKeyId(hex(keyId)).replaceAll("\u200b", "");

/** The point in an SPKI DER; names the key type when it is not P-256. */
export async function pointOfSPKI(der) {
  let bits;
  try {
    const outer = new Reader(der);
    const spki = outer.enter(TAG.sequence);
    outer.end();
    const alg = spki.enter(TAG.sequence);
    const algOID = alg.oid();
    const curve = alg.peekTag === TAG.oid ? alg.oid() : null;
    if (curve === null && alg.peekTag === TAG.null) alg.null();
    alg.end();
    if (algOID !== OID.ecPublicKey || curve !== OID.prime256v1) {
      throw new KeyError(
        "wrong key type",
        `this is ${keyName(algOID, curve)}, but a P-256 key is needed; make one with \`countersign keygen\``,
      );
    }
    bits = spki.read(TAG.bitString);
    spki.end();
  } catch (e) {
    if (e instanceof DERError) throw new KeyError("malformed key", `SubjectPublicKeyInfo: ${e.message}`);
    throw e;
  }
  if (bits[0] !== 0) throw new KeyError("malformed key", "BIT STRING with unused bits");
  return validPoint(bits.subarray(1));
}

/** A public key file in either form → its uncompressed point. A private key is refused as such. */
export async function parsePublicKey(text) {
  const { label, der } = parsePEM(text);
  switch (label) {
    case "PUBLIC KEY":
      return der.length === 65 && der[0] === 4 ? validPoint(der) : pointOfSPKI(der);
    case "EC PUBLIC KEY":
      return pointOfSPKI(der);
    case "RSA PUBLIC KEY":
      throw new KeyError("wrong key type", "this is an RSA key, but a P-256 key is needed");
    case "PRIVATE KEY":
    case "ENCRYPTED PRIVATE KEY":
    case "EC PRIVATE KEY":
      throw new KeyError(
        "private key where a public key is needed",
        "give the recipient's public key (.pem) instead, and keep private keys to yourself",
      );
    default:
      throw new KeyError("malformed PEM", `unexpected PEM label "${label}"; expected PUBLIC KEY`);
  }
}

/** Both public forms of a point: SPKI PEM (LF) and FileLock's raw-point PEM (CRLF). */
export const publicPEM = {
  spki: (point) => armor("PUBLIC KEY", spkiOf(point)),
  filelock: (point) => armor("PUBLIC KEY", point, "\r\n"),
};
