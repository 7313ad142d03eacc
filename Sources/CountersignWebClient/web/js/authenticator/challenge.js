// An authenticator's push challenges (docs/PROTOCOL.md §3.5) and its answers (§3.6): a challenge is shown
// only once it verifies under the server's challenge key pinned at pairing, and an answer is a JWS signed
// by the authenticator's own key. Pure: WebCrypto, no DOM, no storage, no network.
import { base64url, fromBase64url, utf8 } from "../bytes.js";
import { signLowS } from "../device-keys.js";
import { printable } from "../display-name.js";

/** A number to match: 2 digits, or 6. */
const NUMBER = /^[0-9]{2}([0-9]{4})?$/;
const ECDSA = { name: "ECDSA", namedCurve: "P-256" };
// A minute of clock skew: a clock a little fast must not turn every request into a refusal (the server
// refuses an answer to an expired challenge itself).
const SKEW_MS = 60_000;
const text = (bytes) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);
const b64json = (value) => base64url(utf8(JSON.stringify(value)));

// Header parameters that would name the verifying key, or where to fetch it, from the token itself:
// the key is the one pairing stored, always.
const KEY_PARAMETERS = ["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256"];

/** Why a JWS header (RFC 7515 §4.1) is refused, or null. This verifier implements no extension, so
 *  `crit` (§4.1.11: "MUST be understood") is refused whatever it lists, and so is `b64` (RFC 7797). */
function headerProblem(header) {
  if (typeof header !== "object" || header === null || Array.isArray(header)) return "malformed";
  if (Object.hasOwn(header, "crit")) return "a critical header extension";
  if (Object.hasOwn(header, "b64")) return "an unencoded payload";
  if (KEY_PARAMETERS.some((name) => Object.hasOwn(header, name))) return "a key named by the token itself";
  // The server's tokens say "JWT" (RFC 7519 §5.1; media types compare without case) or nothing.
  const jwt = typeof header.typ === "string" && header.typ.toUpperCase() === "JWT";
  if (Object.hasOwn(header, "typ") && !jwt) return "not a JWT";
  return null;
}

/** Why a challenge's number matching is refused, or null: three distinct numbers of one shape to pick
 *  from, or none (typed where the sign-in shows it). */
function matchingProblem(nm) {
  if (nm?.type === "SELECT_NUMBER") {
    const options = nm.options;
    const shaped =
      Array.isArray(options) &&
      options.length === 3 &&
      options.every((o) => typeof o === "string" && NUMBER.test(o) && o.length === options[0].length);
    return !shaped || new Set(options).size !== 3 ? "bad number matching" : null;
  }
  return nm?.type !== "ENTER_MANUALLY" || (nm.options !== undefined && nm.options !== null)
    ? "bad number matching"
    : null;
}

/**
 * A challenge checked as the CLI checks it, and more: ES256 by the server's challenge key (named by `kid`),
 * its issuer, for this authenticator and this account, not expired, and number matching of the allowed
 * shapes. Returns `{ request }` or `{ refused: why }`; nothing unchecked is shown.
 */
export async function verifyChallenge(record, jwt, now = Date.now()) {
  const refuse = (why) => ({ refused: why });
  if (typeof jwt !== "string" || jwt.length > 8192) return refuse("malformed");
  const parts = jwt.split(".");
  if (parts.length !== 3) return refuse("malformed");
  let header, claims, signature;
  try {
    header = JSON.parse(text(fromBase64url(parts[0])));
    claims = JSON.parse(text(fromBase64url(parts[1])));
    signature = fromBase64url(parts[2]);
  } catch {
    return refuse("malformed");
  }
  const problem = headerProblem(header);
  if (problem) return refuse(problem);
  if (header.alg !== "ES256" || header.kid !== record.challengeKey.kid || signature.length !== 64) {
    return refuse("not signed by the server's challenge key");
  }
  const key = await crypto.subtle.importKey("spki", record.challengeKey.spki, ECDSA, false, ["verify"]);
  const signed = utf8(`${parts[0]}.${parts[1]}`);
  const valid = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature, signed);
  if (!valid) return refuse("bad signature");
  const c = claims ?? {};
  if (c.iss !== record.challengeKey.issuer) return refuse("another issuer");
  if (c.aud !== record.deviceId) return refuse("not for this authenticator");
  if (c.sub !== record.username) return refuse("another account");
  if (typeof c.txn !== "string" || !c.txn || c.txn.length > 64) return refuse("malformed");
  let nonce;
  try {
    nonce = fromBase64url(String(c.nonce));
  } catch {
    return refuse("malformed");
  }
  if (nonce.length !== 32 || !Number.isInteger(c.iat) || !Number.isInteger(c.exp) || c.iat > c.exp) {
    return refuse("malformed");
  }
  if (c.exp * 1000 + SKEW_MS <= now) return refuse("expired");
  const ctx = c.ctx;
  if (typeof ctx?.address !== "string" || typeof ctx.userAgent !== "string" || !Number.isInteger(ctx.time)) {
    return refuse("malformed");
  }
  if (c.purpose !== undefined && c.purpose !== "reauthentication") return refuse("unknown purpose");
  const nm = c.nm;
  const matching = matchingProblem(nm);
  if (matching) return refuse(matching);
  return {
    request: {
      txn: c.txn,
      issuer: c.iss,
      nonce: c.nonce,
      username: c.sub,
      expiresAt: c.exp * 1000,
      // Chosen by whoever signs in (a phisher, maybe): shown without control or bidi characters.
      context: {
        address: printable(ctx.address).slice(0, 64),
        userAgent: printable(ctx.userAgent).slice(0, 160),
        time: ctx.time * 1000,
      },
      matching: nm.type === "SELECT_NUMBER" ? { type: nm.type, options: [...nm.options] } : { type: nm.type },
      reauthentication: c.purpose === "reauthentication",
    },
  };
}

/** Whether `number` (picked or typed) is one the request allows: one of its options, or of a number's shape. */
export const numberAllowed = (request, number) =>
  request.matching.type === "SELECT_NUMBER" ? request.matching.options.includes(number) : NUMBER.test(number);

/** The answer's JWS (§3.6): ES256 by this authenticator's signing key, low S like every signature here. */
export async function answerToken(record, request, { approve, number, report }, now = Date.now()) {
  const claims = {
    iss: record.deviceId,
    aud: request.issuer,
    txn: request.txn,
    nonce: request.nonce,
    iat: Math.floor(now / 1000),
    decision: approve ? "APPROVE" : "DENY",
  };
  if (approve) claims.number = number;
  else claims.report = Boolean(report);
  const input = `${b64json({ alg: "ES256", typ: "JWT" })}.${b64json(claims)}`;
  return `${input}.${base64url(await signLowS(record.signing.privateKey, utf8(input)))}`;
}
