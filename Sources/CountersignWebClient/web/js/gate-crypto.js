// The key gate's cryptography (docs/SPEC.md §14): the browser's private keys at rest only wrapped, under a
// gate key of which each unlocking method (a passkey's PRF output, or the password) wraps its own copy.
// Pure functions over WebCrypto: no DOM, no storage, no network; the screens and the keystore call them.
//
// Unlocking, as §14.5 orders it (the caller stores between the steps):
//   gate = countAttempt(gate); store it;                     a closed tab counts as a failure
//   gateKey = await openGate(await prfWrappingKey(prfOutput), method, context);   or passwordWrappingKey
//   on success: store resetAttempts(gate); unwrapPrivateKey(gateKey, …) for each key
//   on GateError "unlock failed": attemptsLeft(gate) <= 0 → wipe this browser's keys, revoke the device
//
// Every key made here is non-extractable, except the two moments §14.4 names: a gate key while it is
// wrapped for a method, and a private key between its generation and its wrap (both the caller's or a
// local's, dropped at once). Nonces are drawn here, never taken from a caller, so no caller can repeat one.
import { concat, lv, utf8 } from "./bytes.js";

export const GATE_VERSION = 1;
/** OWASP's PBKDF2-HMAC-SHA-256 work factor (Password Storage Cheat Sheet); what writers use. */
export const PBKDF2_ITERATIONS = 600_000;
/** The most a stored record may ask for: caps the work a planted record can cause (as SPEC §2.2). */
export const MAX_PBKDF2_ITERATIONS = 10_000_000;
export const DEFAULT_LIMIT = 5;
export const MIN_LIMIT = 3;
export const MAX_LIMIT = 10;
/** Up to 10 passkeys (an account's limit, PROTOCOL §5.2) and one password. */
export const MAX_METHODS = 11;

const PRF_INFO = "countersign/v1 gate prf";
const GATE_KEY_LABEL = "countersign/v1 gate key";
const PRIVATE_KEY_LABEL = "countersign/v1 gate private key";

const AES = { name: "AES-GCM", length: 256 };
/** What a wrapping key and the gate key may do: wrap and unwrap keys, nothing else. */
const WRAPPING = ["wrapKey", "unwrapKey"];
const ROLES = {
  signing: [{ name: "ECDSA", namedCurve: "P-256" }, ["sign"]],
  encryption: [{ name: "ECDH", namedCurve: "P-256" }, ["deriveBits"]],
};

/**
 * Why the gate refused: `kind` is one of
 * - "malformed": a record, an input or a key is not of SPEC §14's form; nothing was decrypted and no
 *   attempt is counted;
 * - "unknown version": a gate written by a newer Countersign;
 * - "unlock failed": a tag did not verify: a wrong passkey or password, or a record moved to other IDs or
 *   altered. AES-GCM cannot tell these apart, so neither can this error; it is the one that counts.
 */
export class GateError extends Error {
  constructor(kind, detail) {
    super(detail ? `${kind}: ${detail}` : kind);
    this.name = "GateError";
    this.kind = kind;
  }
}

export const MESSAGES = {
  "unlock failed": "this passkey or password does not unlock the keys kept here",
  malformed: "the keys kept here are damaged; sign in again to set this browser up anew",
  "unknown version": "the keys here were locked by a newer Countersign; upgrade to unlock them",
};

const malformed = (detail) => new GateError("malformed", detail);
const random = (n) => crypto.getRandomValues(new Uint8Array(n));

function bytes(name, value, min, max = min) {
  if (!(value instanceof Uint8Array) || value.length < min || value.length > max) {
    throw malformed(`${name} must be ${min === max ? min : `${min} to ${max}`} bytes`);
  }
  return value;
}

function identifier(name, text) {
  const encoded = typeof text === "string" ? utf8(text) : null;
  if (!encoded || encoded.length < 1 || encoded.length > 255)
    throw malformed(`the ${name} must be 1 to 255 bytes of UTF-8`);
  return encoded;
}

/** A method's own fields (kind, and what derives its wrapping key), checked; without nonce or wrap. */
function methodFields(method) {
  if (method?.kind === "prf") {
    return {
      kind: "prf",
      credentialId: bytes("credential ID", method.credentialId, 16, 1023),
      prfSalt: bytes("PRF salt", method.prfSalt, 32),
    };
  }
  if (method?.kind === "password") {
    const { iterations } = method;
    if (!Number.isInteger(iterations) || iterations < PBKDF2_ITERATIONS || iterations > MAX_PBKDF2_ITERATIONS) {
      throw malformed(`PBKDF2 iterations must be ${PBKDF2_ITERATIONS} to ${MAX_PBKDF2_ITERATIONS}`);
    }
    return { kind: "password", salt: bytes("password salt", method.salt, 16), iterations };
  }
  throw malformed("a method is a passkey (prf) or the password");
}

/** A stored method (SPEC §14.3), checked: its fields, its nonce and its wrapped gate key. */
export function checkMethod(method) {
  return {
    ...methodFields(method),
    nonce: bytes("nonce", method.nonce, 12),
    wrappedKey: bytes("wrapped gate key", method.wrappedKey, 48),
  };
}

/** A stored gate (SPEC §14.3), checked as a reader must before anything is decrypted. */
export function checkGate(gate) {
  if (!gate || typeof gate !== "object") throw malformed("no gate");
  if (gate.version !== GATE_VERSION) {
    if (Number.isInteger(gate.version) && gate.version > GATE_VERSION)
      throw new GateError("unknown version", `version ${gate.version}`);
    throw malformed("the gate's version is not 1");
  }
  if (!Number.isInteger(gate.limit) || gate.limit < MIN_LIMIT || gate.limit > MAX_LIMIT) {
    throw malformed(`the failed attempts limit must be ${MIN_LIMIT} to ${MAX_LIMIT}`);
  }
  if (!Number.isInteger(gate.failures) || gate.failures < 0 || gate.failures > gate.limit) {
    throw malformed("the failed attempts must be 0 to the limit");
  }
  bytes("revocation token", gate.revocationToken, 32);
  if (!Array.isArray(gate.methods) || gate.methods.length < 1 || gate.methods.length > MAX_METHODS) {
    throw malformed(`a gate has 1 to ${MAX_METHODS} methods`);
  }
  const seen = new Set();
  let passwords = 0;
  for (const method of gate.methods) {
    const checked = checkMethod(method);
    if (checked.kind === "password") passwords += 1;
    else {
      const id = checked.credentialId.join(",");
      if (seen.has(id)) throw malformed("two methods for one passkey");
      seen.add(id);
    }
  }
  if (passwords > 1) throw malformed("two password methods");
  return gate;
}

// ---- Wrapping keys (SPEC §14.1)

/** W_prf = HKDF-SHA-256(ikm = the 32-byte PRF output, salt = empty, info = "countersign/v1 gate prf"). */
export async function prfWrappingKey(prfOutput) {
  bytes("PRF output", prfOutput, 32);
  if (prfOutput.every((b) => b === 0)) throw malformed("the PRF output is all zeros");
  const ikm = await crypto.subtle.importKey("raw", prfOutput, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: utf8(PRF_INFO) },
    ikm,
    AES,
    false,
    WRAPPING,
  );
}

/**
 * W_password = PBKDF2-HMAC-SHA-256(the password's UTF-8 bytes as typed, salt, iterations, 32 bytes). The
 * count is checked against a stored method's bounds by `checkMethod`; here only that it is a count.
 */
export async function passwordWrappingKey(password, salt, iterations) {
  if (typeof password !== "string" || password === "") throw malformed("the password is empty");
  bytes("password salt", salt, 16);
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) {
    throw malformed(`PBKDF2 iterations must be 1 to ${MAX_PBKDF2_ITERATIONS}`);
  }
  const base = await crypto.subtle.importKey("raw", utf8(password), "PBKDF2", false, ["deriveKey"]);
  return crypto.subtle.deriveKey({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, base, AES, false, WRAPPING);
}

/** A passkey method, before its wrap: the credential and the PRF salt the server keeps for it. */
export const prfMethod = (credentialId, prfSalt) => methodFields({ kind: "prf", credentialId, prfSalt });

/** A password method, before its wrap: a fresh 16-byte salt and OWASP's count. */
export const passwordMethod = () => ({ kind: "password", salt: random(16), iterations: PBKDF2_ITERATIONS });

// ---- Associated data (SPEC §14.2)

/** "countersign/v1 gate key" || 0x00 || lv(account ID) || lv(device ID) || lv(kind) || lv(credential ID or empty) */
export function gateKeyAad({ accountId, deviceId }, method) {
  const { kind, credentialId } = methodFields(method);
  return concat(
    utf8(GATE_KEY_LABEL),
    Uint8Array.of(0),
    lv(identifier("account ID", accountId)),
    lv(identifier("device ID", deviceId)),
    lv(utf8(kind)),
    lv(kind === "prf" ? credentialId : new Uint8Array(0)),
  );
}

/** "countersign/v1 gate private key" || 0x00 || lv(account ID) || lv(device ID) || lv(key ID of the public half) */
export async function privateKeyAad({ accountId, deviceId }, publicKey) {
  let spki;
  try {
    spki = new Uint8Array(await crypto.subtle.exportKey("spki", publicKey));
  } catch {
    throw malformed("the public key cannot be read");
  }
  // The one form keys travel in (SPEC §2.3): a P-256 SPKI of 91 bytes, the point uncompressed.
  if (publicKey.algorithm?.namedCurve !== "P-256" || spki.length !== 91)
    throw malformed("the public key is not a P-256 key");
  const keyId = new Uint8Array(await crypto.subtle.digest("SHA-256", spki)).subarray(0, 16);
  return concat(
    utf8(PRIVATE_KEY_LABEL),
    Uint8Array.of(0),
    lv(identifier("account ID", accountId)),
    lv(identifier("device ID", deviceId)),
    lv(keyId),
  );
}

/** A failed unwrap as the closed set says: a tag failure is "unlock failed", anything else "malformed". */
function refusal(error) {
  if (error instanceof GateError) return error;
  if (error?.name === "OperationError") return new GateError("unlock failed");
  return malformed(error?.name ?? "the key could not be used");
}

// ---- The gate key: made once, one wrapped copy per method

async function wrapGateKey(wrappingKey, gateKey, method, context) {
  const fields = methodFields(method);
  const nonce = random(12);
  try {
    const wrapped = await crypto.subtle.wrapKey("raw", gateKey, wrappingKey, {
      name: "AES-GCM",
      iv: nonce,
      additionalData: gateKeyAad(context, fields),
    });
    return { ...fields, nonce, wrappedKey: new Uint8Array(wrapped) };
  } catch (error) {
    throw refusal(error);
  }
}

async function unwrapGateKey(wrappingKey, method, context, extractable) {
  const checked = checkMethod(method);
  const aad = gateKeyAad(context, checked);
  try {
    return await crypto.subtle.unwrapKey(
      "raw",
      checked.wrappedKey,
      wrappingKey,
      { name: "AES-GCM", iv: checked.nonce, additionalData: aad },
      AES,
      extractable,
      WRAPPING,
    );
  } catch (error) {
    throw refusal(error);
  }
}

/**
 * A new gate with its first method: { gate, gateKey }. The gate key is made here, wrapped for the method
 * and kept only as the non-extractable copy unwrapped from that wrap (which also proves the wrap opens).
 */
export async function createGate(wrappingKey, method, context, limit = DEFAULT_LIMIT) {
  const fresh = await crypto.subtle.generateKey(AES, true, WRAPPING);
  const wrapped = await wrapGateKey(wrappingKey, fresh, method, context);
  const gate = checkGate({
    version: GATE_VERSION,
    limit,
    failures: 0,
    revocationToken: random(32),
    methods: [wrapped],
  });
  return { gate, gateKey: await unwrapGateKey(wrappingKey, wrapped, context, false) };
}

/** The gate key, non-extractable, usable only to wrap and unwrap keys; "unlock failed" on a wrong key. */
export const openGate = (wrappingKey, method, context) => unwrapGateKey(wrappingKey, method, context, false);

/**
 * The gate key wrapped for another method (`to`), unwrapped from one that opens (`from`): adding a passkey,
 * or a new password replacing the old one. Returns the new method entry; the caller puts it in the gate
 * and stores `checkGate` of the result. The extractable gate key lives only inside this call.
 */
export async function rewrapMethod(fromKey, fromMethod, toKey, toMethod, context) {
  const gateKey = await unwrapGateKey(fromKey, fromMethod, context, true);
  return wrapGateKey(toKey, gateKey, toMethod, context);
}

// ---- Private keys under the gate key

/**
 * { nonce, ciphertext }: AES-256-GCM under the gate key of the private key's PKCS#8 PrivateKeyInfo, bound
 * to the account, the device and the key ID of `keyPair.publicKey`. The private key must be extractable
 * (made for the gate); one made non-extractable cannot be wrapped and is refused.
 */
export async function wrapPrivateKey(gateKey, keyPair, context) {
  const { privateKey, publicKey } = keyPair ?? {};
  if (!(privateKey instanceof CryptoKey) || privateKey.type !== "private") throw malformed("no private key");
  if (!privateKey.extractable)
    throw malformed("a non-extractable key cannot be wrapped: rotate to keys made for the gate");
  const additionalData = await privateKeyAad(context, publicKey);
  const nonce = random(12);
  try {
    const ciphertext = await crypto.subtle.wrapKey("pkcs8", privateKey, gateKey, {
      name: "AES-GCM",
      iv: nonce,
      additionalData,
    });
    return { nonce, ciphertext: new Uint8Array(ciphertext) };
  } catch (error) {
    throw refusal(error);
  }
}

/**
 * The private key, non-extractable: ECDSA P-256 for signing ("signing") or ECDH P-256 deriving bits
 * ("encryption"). `publicKey` is the stored public half, whose key ID the wrap must be bound to.
 */
export async function unwrapPrivateKey(gateKey, wrapped, context, publicKey, role) {
  if (!Object.hasOwn(ROLES, role)) throw malformed("a private key is for signing or encryption");
  const [algorithm, usages] = ROLES[role];
  const nonce = bytes("nonce", wrapped?.nonce, 12);
  const ciphertext = bytes("wrapped private key", wrapped?.ciphertext, 17, 4112);
  const additionalData = await privateKeyAad(context, publicKey);
  try {
    return await crypto.subtle.unwrapKey(
      "pkcs8",
      ciphertext,
      gateKey,
      { name: "AES-GCM", iv: nonce, additionalData },
      algorithm,
      false,
      usages,
    );
  } catch (error) {
    throw refusal(error);
  }
}

// ---- Failed attempts (SPEC §14.5): counted ahead, per browser, every method together

/** How many unlocks may still fail; 0 or less: wipe and revoke now, try nothing. */
export const attemptsLeft = (gate) => checkGate(gate).limit - gate.failures;

/**
 * The gate to store before an attempt is checked: one more failure, so a closed tab is not a free try.
 * Call it only while `attemptsLeft` is above 0; at the limit the count stays at the limit.
 */
export function countAttempt(gate) {
  const { limit, failures } = checkGate(gate);
  return { ...gate, failures: Math.min(limit, failures + 1) };
}

/** The gate to store after a successful unlock. */
export const resetAttempts = (gate) => ({ ...checkGate(gate), failures: 0 });
