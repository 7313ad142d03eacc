// Passkeys (docs/PROTOCOL.md §5): the browser's WebAuthn ceremonies with the server, in WebAuthn's own
// JSON both ways (PublicKeyCredential.parse…OptionsFromJSON for the server's options, toJSON() for the
// answer, without its extension outputs), and what to tell the user when one fails. Every ceremony asks
// for user verification; the server checks each answer again, so nothing here decides whether a passkey
// is good.
import { ApiError, describe } from "./api.js";
import * as server from "./server/passkeys.js";
import { startMFAPasskey, submitMFAPasskey } from "./server/second-factor.js";

/** Whether this browser can run a ceremony from the server's JSON options. */
export function passkeysAvailable() {
  return (
    globalThis.isSecureContext === true &&
    typeof globalThis.PublicKeyCredential === "function" &&
    typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function" &&
    typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function"
  );
}

/** Whether the browser offers passkeys in the username field's autofill (conditional mediation). */
export async function autofillAvailable() {
  if (!passkeysAvailable() || typeof PublicKeyCredential.isConditionalMediationAvailable !== "function") return false;
  try {
    return (await PublicKeyCredential.isConditionalMediationAvailable()) === true;
  } catch {
    return false;
  }
}

/** A request this page gave up (an AbortController): nothing to tell the user. */
export const isAbort = (error) => error?.name === "AbortError";

const abortError = () => new DOMException("The passkey request was stopped.", "AbortError");

/**
 * A credential as it is sent to the server: its WebAuthn JSON without `clientExtensionResults`. Those may
 * hold the PRF output (`prf.results`), the key gate's secret, which never leaves this page (docs/SPEC.md
 * §14.7; the server refuses a body that carries it), and the server reads nothing else from them. Every
 * ceremony's answer goes through here: registration, sign-in, second factor, re-authentication, the gate.
 */
export function credentialForServer(credential) {
  const json = credential.toJSON();
  delete json.clientExtensionResults;
  return json;
}

/** `navigator.credentials.get` on the server's options; the answer as the server takes it. */
async function assertion(start, { signal, mediation } = {}) {
  if (signal?.aborted) throw abortError();
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(start.publicKey);
  const credential = await navigator.credentials.get(
    mediation ? { publicKey, signal, mediation } : { publicKey, signal },
  );
  // Aborted while the authenticator answered: the page moved on, so the answer is not sent.
  if (signal?.aborted) throw abortError();
  if (!credential) throw new DOMException("No passkey was chosen.", "NotAllowedError");
  return { ceremonyId: start.ceremonyId, credential: credentialForServer(credential) };
}

/** The authenticator model (AAGUID) a new credential names, as lowercase UUID text; zeros when none. */
function aaguidOf(credential) {
  const data = new Uint8Array(credential.response.getAuthenticatorData?.() ?? new ArrayBuffer(0));
  // rpIdHash (32) ‖ flags (1) ‖ signCount (4) ‖ AAGUID (16) ‖ …
  const hex = Array.from(data.subarray(37, 53), (b) => b.toString(16).padStart(2, "0")).join("").padEnd(32, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Registers a new passkey for the signed-in account. `nameFor(aaguid)` names it once the authenticator
 * has made it (the name the user typed, or the authenticator's); `onPrompt` runs as the browser asks the
 * user. Resolves to the server's summary.
 */
export async function registerPasskey(token, nameFor, onPrompt = () => {}) {
  const start = await server.startPasskeyRegistration(token);
  onPrompt();
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(start.publicKey);
  const credential = await navigator.credentials.create({ publicKey });
  if (!credential) throw new DOMException("No passkey was made.", "NotAllowedError");
  const json = {
    ceremonyId: start.ceremonyId,
    name: nameFor(aaguidOf(credential)),
    credential: credentialForServer(credential),
  };
  return server.registerPasskey(json, token);
}

/** The passkey's answer to `start` (the server's startPasskeySignIn): resolves to the session, as a sign-in
 *  with the password does. */
export async function finishPasskeySignIn(start, { signal, mediation } = {}) {
  return server.passkeySignIn(await assertion(start, { signal, mediation }));
}

export const signInWithPasskey = async () => finishPasskeySignIn(await server.startPasskeySignIn());

/** A sign-in's second factor: resolves to the transaction after the assertion (COMPLETED, or fewer attempts). */
export async function passkeySecondFactor(transactionId, binding) {
  const start = await startMFAPasskey(transactionId, binding);
  return submitMFAPasskey(transactionId, await assertion(start), binding);
}

/** Re-authenticates this session with one of the account's passkeys (in place of the password). */
export async function reauthenticateWithPasskey(token) {
  const start = await server.startPasskeyReauth(token);
  await server.passkeyReauth(await assertion(start), token);
}

// The browser's refusals (WebAuthn §5.1.3, §5.1.4): the same words whether the user cancelled or the
// authenticator could not verify them, as the browser itself does not say which.
const browserWords = {
  NotAllowedError:
    "No passkey was used: the request was cancelled or timed out, or your authenticator did not verify you (its PIN, " +
      "fingerprint or face).",
  InvalidStateError: "This authenticator already holds a passkey for your account here: use that one, or add a " +
    "passkey on another authenticator.",
  SecurityError: "This page's address cannot use passkeys: open Countersign by its domain name over HTTPS.",
  NotSupportedError: "This authenticator cannot make a passkey this server accepts (ES256 or RS256, with user " +
    "verification).",
  ConstraintError: "This authenticator cannot verify you (no PIN, fingerprint or face set up on it): set one up, or " +
    "use another authenticator.",
};

// The server's refusals (problem codes, and passkey-refused's `reason`) in sentences; the others are
// already the server's own words (describe).
const reasonWords = {
  authenticator: "Your authenticator's answer was refused: it did not verify you, or it answered for another site.",
  "client-data": "The browser's answer was refused: it was made for another request or another site.",
  "unknown-credential": "This passkey is not registered for your account here (it may have been removed).",
  "backup-eligibility": "This passkey's answer was refused: it no longer matches the passkey registered here.",
};
const problemWords = {
  "passkey-ceremony-invalid": "The passkey request expired (after 5 minutes) or was already answered.",
  "passkey-taken": "This passkey is already registered to an account here: use it to sign in, or choose another " +
    "authenticator.",
};

/**
 * What to tell the user about a failed passkey ceremony, and then `next` (what they can do now), unless
 * the words already say what to do.
 */
export function passkeyMessage(error, next = "") {
  const then = (text) => (next ? `${text} ${next}` : text);
  if (error instanceof DOMException && Object.hasOwn(browserWords, error.name)) return then(browserWords[error.name]);
  if (error instanceof ApiError) {
    const reason = String(error.problem?.reason ?? "");
    if (error.code === "passkey-refused") {
      if (Object.hasOwn(reasonWords, reason)) return then(reasonWords[reason]);
      // A copied passkey (counter) and a race (concurrent): the server's words say what to do.
      return ["counter", "concurrent"].includes(reason) ? describe(error) : then(describe(error));
    }
    if (Object.hasOwn(problemWords, error.code)) return then(problemWords[error.code]);
    return describe(error);
  }
  return then(describe(error));
}
