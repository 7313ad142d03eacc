// Staying signed in (docs/PROTOCOL.md §1.1): the browser binds a key it holds to its account session and,
// after a reload, in a new tab or after a restart, resumes a session by signing the server's nonce with it
// (the one the last binding or resumption gave, kept for that: one request).
// IndexedDB keeps the binding's ID and, before this browser has a device, a non-extractable key of its own;
// never a token. Once the device exists the binding is its signing key, which the key gate guards: a copy
// of a gated profile resumes nothing without the passkey or password.
import { ApiError } from "./api.js";
import { base64url, fromBase64url } from "./bytes.js";
import { bindingMessage, resumptionMessage, signLowS, spki } from "./device-keys.js";
import { LockedError } from "./gate-keys.js";
import { keystore, run } from "./keystore.js";
import { bindSession, resumeSession, sessionResumptionChallenge } from "./server/sessions.js";
import { session } from "./session.js";

const SLOT = "current";
const ECDSA = { name: "ECDSA", namedCurve: "P-256" };

/** The binding this browser resumes with: { id, accountId, username, deviceId, privateKey? }, or undefined. */
export const savedBinding = () => run("bindings", "readonly", (store) => store.get(SLOT));

/** Forgets the binding here (signed out, or the server says it ended): only `id`'s when given, so that a
 *  binding another tab wrote meanwhile (another account's, say) stays. */
export const forgetBinding = (id) =>
  run("bindings", "readwrite", (store) => {
    const request = store.get(SLOT);
    request.onsuccess = () => {
      if (request.result && (id === undefined || request.result.id === id)) store.delete(SLOT);
    };
  });

/** The server no longer resumes this binding: signed out elsewhere, idle too long, a password change, a lock. */
export const bindingEnded = (error) => error instanceof ApiError && error.code === "sign-in-ended";

/** The account's registered device here, when its signing key can sign now (the gate open, or off). */
async function usableDevice(accountId) {
  const record = await keystore.device(accountId).catch(() => null);
  return {
    device: record?.deviceId && record.signing?.privateKey && !record.pending ? record : null,
    gated: Boolean(record?.gate),
  };
}

// A sign-in whose binding waits for the key gate to open (the token it was for).
let deferred = null;

// One binding change at a time in this page (a sign-in's and its device's, say).
let queue = Promise.resolve();

/**
 * Keeps this page's session signed in: binds the device's signing key when the browser has a usable device
 * for the account, else a new key of its own. Resolves with whether it is bound to the device now. `fresh`:
 * a session just signed in, always bound (its own binding); otherwise a session already bound to this
 * device is left as it is. A refusal (too late, turned off) rejects and keeps nothing.
 */
export function keepSignedIn(account, token, { fresh = false } = {}) {
  const run = queue.then(() => bind(account, token, fresh || deferred === token));
  queue = run.catch(() => {});
  return run;
}

async function bind(account, token, fresh) {
  const saved = fresh ? null : await savedBinding();
  const { device, gated } = await usableDevice(account.id);
  if (saved?.accountId === account.id && saved.deviceId && saved.deviceId === device?.deviceId) return true;
  // The key gate guards this browser: only its device key may be bound, once the gate opens (onDevice). A key of
  // the browser's own would let a copy of the profile sign in without the passkey or password.
  if (!device && gated) {
    if (fresh) deferred = token;
    return false;
  }
  let privateKey;
  let publicKey;
  if (device) {
    privateKey = device.signing.privateKey;
    publicKey = device.signing.publicKey;
  } else {
    if (saved?.accountId === account.id && !saved.deviceId) return false;
    ({ privateKey, publicKey } = await crypto.subtle.generateKey(ECDSA, false, ["sign", "verify"]));
  }
  deferred = null;
  // The binding moves from this browser's own key to the device's: said in storage first, so a page left
  // (a reload, a navigation) after the server moved it and before the answer was stored still resumes.
  const moving = device && saved?.accountId === account.id && !saved.deviceId;
  if (moving) await markRebinding(saved.id, device.deviceId);
  const der = await spki(publicKey);
  const binding = await bindSession(
    {
      publicKey: base64url(der),
      deviceId: device?.deviceId,
      signature: base64url(await signLowS(privateKey, await bindingMessage(account.id, der))),
    },
    token,
  ).catch(async (error) => {
    // Refused (4xx) on a first try: nothing moved. A network failure, a server error (it may have failed after
    // moving it) and a retry's refusal (an earlier try may have moved it) leave the note: resume() sorts it out.
    const refused = error instanceof ApiError && error.status >= 400 && error.status < 500;
    if (moving && refused && !saved.rebinding) await keepRebound(saved.id, null).catch(() => {});
    throw error;
  });
  // Signed out (or in as someone else) meanwhile: nothing is kept for a session that ended.
  if (session.token !== token) return false;
  await run("bindings", "readwrite", (store) =>
    store.put({
      slot: SLOT,
      id: binding.id,
      accountId: account.id,
      username: account.username,
      deviceId: binding.deviceId ?? null,
      // A device binding signs with the device's key (the gate keeps it wrapped): nothing else is stored.
      privateKey: device ? null : privateKey,
      nextNonce: binding.nextNonce ?? null,
    }),
  );
  return Boolean(device);
}

/** Notes on the binding `id` that it is being moved to `deviceId`'s key (its own key kept until it is). */
const markRebinding = (id, deviceId) =>
  run("bindings", "readwrite", (store) => {
    const request = store.get(SLOT);
    request.onsuccess = () => {
      if (request.result?.id === id) store.put({ ...request.result, rebinding: deviceId });
    };
  });

/** Stores where the move of the binding `id` ended: on the device `deviceId`'s key, or (null) on its own. */
const keepRebound = (id, deviceId) =>
  run("bindings", "readwrite", (store) => {
    const request = store.get(SLOT);
    request.onsuccess = () => {
      const record = request.result;
      if (record?.id !== id) return;
      store.put(deviceId ? { ...record, deviceId, privateKey: null, rebinding: null, nextNonce: null }
        : { ...record, rebinding: null });
    };
  });

/** Keeps the nonce the binding's next resumption may sign (PROTOCOL §1.1), if the binding is still `id`. */
const keepNextNonce = (id, nextNonce) =>
  run("bindings", "readwrite", (store) => {
    const request = store.get(SLOT);
    request.onsuccess = () => {
      if (request.result?.id === id) store.put({ ...request.result, nextNonce: nextNonce ?? null });
    };
  });

/** A kept nonce still worth signing: not expired, with a margin for the clocks. */
const usable = (nonce, now = Date.now()) =>
  typeof nonce?.challenge === "string" && Date.parse(nonce.expiresAt) - 60_000 > now;

/** Whether resuming `saved` needs the key gate opened first (its device key is locked). */
export async function needsUnlock(saved) {
  // A move to the device's key whose answer was never stored is tried with the device's key first.
  const deviceId = saved.deviceId ?? saved.rebinding;
  if (!deviceId) return false;
  const record = await keystore.device(saved.accountId).catch(() => null);
  return Boolean(record?.deviceId === deviceId && record.gate && !record.signing?.privateKey);
}

/**
 * A new session from the saved binding: the server's nonce signed with the bound key. Throws LockedError
 * when the device's key is locked (the gate asks first), and the server's ApiError (`bindingEnded`). `sent` is
 * called once a resumption request is on its way.
 */
export async function resume(saved, { sent } = {}) {
  // A move to the device's key whose answer was never stored: the server has one of the two keys. The
  // device's first (the request had been sent); the binding's own key if the server says it ended.
  if (!saved.deviceId && saved.rebinding) {
    try {
      const body = await resume({ ...saved, deviceId: saved.rebinding, rebinding: null, nextNonce: null }, { sent });
      await keepRebound(saved.id, saved.rebinding).catch(() => {});
      if (body.nextNonce) await keepNextNonce(saved.id, body.nextNonce).catch(() => {});
      return body;
    } catch (error) {
      if (!bindingEnded(error)) throw error;
    }
    // The server kept the binding's own key: tried first from now on, without the device's.
    await keepRebound(saved.id, null).catch(() => {});
    return resume({ ...saved, rebinding: null, nextNonce: null }, { sent });
  }
  let key = saved.privateKey;
  if (saved.deviceId) {
    const record = await keystore.device(saved.accountId);
    // Gone, or wiped (only the note its self-revocation needs is left): nothing can sign.
    if (record?.deviceId !== saved.deviceId || record.wiped || (!record.gate && !record.signing?.privateKey)) {
      throw new ApiError(401, { code: "sign-in-ended", detail: "This browser's device keys are gone. Sign in again." });
    }
    key = record.signing?.privateKey;
  }
  if (!key) throw new LockedError();
  const signed = async (challenge) => {
    const signature = await signLowS(key, await resumptionMessage(fromBase64url(challenge), saved.id));
    const answer = resumeSession({ bindingId: saved.id, nonce: challenge, signature: base64url(signature) });
    sent?.(); // the request is on its way
    return answer;
  };
  let body = null;
  // The nonce the last binding or resumption gave: one request, where asking for a nonce first costs two.
  // Spent meanwhile (another tab resumed with it) or expired: a fresh one is asked for.
  if (usable(saved.nextNonce)) {
    await keepNextNonce(saved.id, null).catch(() => {}); // single use: never signed twice from here
    body = await signed(saved.nextNonce.challenge).catch((error) => {
      if (error instanceof ApiError && error.code === "challenge-invalid") return null;
      throw error;
    });
  }
  body ??= await signed((await sessionResumptionChallenge(saved.id)).challenge);
  if (body.nextNonce) await keepNextNonce(saved.id, body.nextNonce).catch(() => {});
  return body;
}
