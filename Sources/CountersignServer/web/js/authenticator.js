// This browser as an authenticator of its account (docs/PROTOCOL.md §3, PingOne's MFA SDK): a device of
// its own beside the messaging device, with its own non-extractable P-256 keys, paired with a pairing key.
// It takes push challenges only when they verify under the server's challenge key (from the pairing
// answer), answers them with JWTs signed by its own key, and computes passcodes (RFC 6238) with a TOTP
// secret that exists here only as a non-extractable HMAC key.
import { ApiError } from "./api.js";
import { base64url, concat, fromBase64url, hex, lv, sha256, utf8 } from "./bytes.js";
import { openSession } from "./device.js";
import { printable } from "./dom.js";
import { makeDeviceKeys, signLowS, spki } from "./device-keys.js";
import { open as openEnvelope } from "./envelope.js";
import { rawPoint } from "./hpke.js";
import { run } from "./keystore.js";
import { openPushChannel } from "./push.js";
import { requireAccountSession } from "./server/accounts.js";
import {
  answerChallenge,
  approveAuthCode,
  authenticatorChallenges,
  claimAuthCode as claimOnServer,
  denyAuthCode,
  pairAuthenticator,
  unpairAuthenticator,
} from "./server/authenticator.js";
import { revokeDevice } from "./server/devices.js";
import { createPairingKey, mfaStatus } from "./server/mfa.js";

const TOTP_CONTENT_TYPE = "application/x-countersign-totp-secret";
const NUMBER = /^[0-9]{2}([0-9]{4})?$/;
const ECDSA = { name: "ECDSA", namedCurve: "P-256" };
const text = (bytes) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);
const b64json = (value) => base64url(utf8(JSON.stringify(value)));

// ---- Stored record: one per account, in IndexedDB beside the messaging device.

const SKEW_MS = 60_000;

export const pairedRecord = (accountId) => run("authenticators", "readonly", (store) => store.get(accountId));
const saveRecord = (record) => run("authenticators", "readwrite", (store) => store.put(record));
const deleteRecord = (accountId) => run("authenticators", "readwrite", (store) => store.delete(accountId));
/** Deletes the account's record only while it is still authenticator `deviceId`: a pairing made since,
 *  in another tab, is kept. */
const deleteIfStill = (accountId, deviceId) =>
  run("authenticators", "readwrite", (store) => {
    const get = store.get(accountId);
    get.onsuccess = () => get.result?.deviceId === deviceId && store.delete(accountId);
    return null;
  });

// ---- Pairing (§3.2)

export async function pairingMessage(pairingKey, signingSpki, encryptionSpki) {
  return concat(
    utf8("countersign/v1 authenticator pairing"),
    new Uint8Array([0]),
    await sha256(concat(lv(utf8(pairingKey)), lv(signingSpki), lv(encryptionSpki))),
  );
}

function authenticatorName() {
  const ua = navigator.userAgent;
  const brand = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  return `Approvals in ${brand} on ${navigator.platform || "the web"}`.slice(0, 64);
}

/** The server's challenge key from the pairing answer's JWKS, checked: its `kid` must be its own key ID
 *  (SPEC §2.4), so a key and a name that disagree are refused. */
async function challengeKey(jwks) {
  const jwk = jwks?.keys?.find((k) => k.kty === "EC" && k.crv === "P-256" && k.alg === "ES256" && k.use === "sig");
  if (!jwk || typeof jwk.x !== "string" || typeof jwk.y !== "string") throw new Error("The server sent no challenge key (ES256, P-256): pairing refused.");
  let key;
  try {
    key = await crypto.subtle.importKey("jwk", { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y }, ECDSA, true, ["verify"]);
  } catch {
    throw new Error("The server's challenge key is not a P-256 point: pairing refused.");
  }
  const keySpki = await spki(key);
  const kid = hex((await sha256(keySpki)).subarray(0, 16));
  if (jwk.kid !== kid) throw new Error("The server's challenge key does not match its key ID: pairing refused.");
  return { kid, spki: keySpki, issuer: `countersign:${kid}` };
}

/** The TOTP secret: opened only if the server's challenge key signed it, then kept as an HMAC key the
 *  page can use and never read; the bytes are wiped. */
async function totpKey(sealed, encryption, signer) {
  if (sealed?.algorithm !== "SHA1" || sealed.digits !== 6 || !Number.isInteger(sealed.period) || sealed.period < 1) {
    throw new Error("The server's passcode settings are not SHA1, 6 digits: pairing refused.");
  }
  const encryptionSpki = await spki(encryption.publicKey);
  const opened = await openEnvelope(fromBase64url(sealed.envelope), {
    senderSpki: signer.spki,
    keyId: (await sha256(encryptionSpki)).subarray(0, 16),
    privateKey: encryption.privateKey,
    point: await rawPoint(encryption.publicKey),
  });
  try {
    if (opened.contentType !== TOTP_CONTENT_TYPE || opened.plaintext.length !== 20) throw new Error("The server's passcode secret is malformed: pairing refused.");
    const key = await crypto.subtle.importKey("raw", opened.plaintext, { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
    return { key, period: sealed.period, digits: sealed.digits };
  } finally {
    opened.plaintext.fill(0);
  }
}

/**
 * Pairs this browser for the signed-in account: a pairing key from the server (needs a recent sign-in:
 * the caller wraps this in withReauth), new keys, the signed pairing request, then the answer checked.
 * Starts the authenticator and returns its record.
 */
export async function pair(accountToken, account) {
  // This browser answers only while one of its tabs is signed in: as the account's only second factor it
  // could lock its owner out after a sign-out. Another way back in must exist first.
  const mfa = await mfaStatus(accountToken);
  if (!mfa.authenticators?.length && !mfa.totpApp && !mfa.recoveryCodesLeft) {
    throw new Error(
      "This browser can approve sign-ins only while you are signed in here, so it cannot be your only second factor. Create recovery codes (or set up an authenticator app) under Two-factor sign-in first.",
    );
  }
  const issued = await createPairingKey(accountToken);
  const keys = await makeDeviceKeys();
  const signingSpki = await spki(keys.signing.publicKey);
  const encryptionSpki = await spki(keys.encryption.publicKey);
  const signature = await signLowS(keys.signing.privateKey, await pairingMessage(issued.key, signingSpki, encryptionSpki));
  const info = await pairAuthenticator({
    pairingKey: issued.key,
    name: authenticatorName(),
    signingKey: base64url(signingSpki),
    encryptionKey: base64url(encryptionSpki),
    signature: base64url(signature),
  });
  let record;
  try {
    const failed = (info.authenticators ?? []).filter((a) => a.status !== "COMPLETED");
    if (failed.length) throw new Error(`Pairing ${failed.map((a) => `${a.type}: ${a.status} ${a.errorMessage ?? ""}`.trim()).join(", ")}.`);
    if (info.username !== account.username) throw new Error(`The server paired this browser for ${info.username}, not ${account.username}.`);
    if (info.session?.device?.id !== undefined && info.session.device.id !== info.deviceId) throw new Error("The server's pairing answer names two devices.");
    const signer = await challengeKey(info.jwks);
    record = {
      accountId: account.id,
      deviceId: info.deviceId,
      username: info.username,
      name: info.session?.device?.name ?? authenticatorName(),
      signing: keys.signing,
      encryption: keys.encryption,
      challengeKey: signer,
      totp: await totpKey(info.totp, keys.encryption, signer),
      pairedAt: Date.now(),
    };
    await saveRecord(record);
    removedFor = null;
  } catch (error) {
    // Paired on the server but not usable here: that authenticator is revoked at once, so the account
    // is never left with a second factor nobody holds.
    if (typeof info?.deviceId === "string") {
      await revokeDevice(info.deviceId, accountToken).catch(() => {});
    }
    throw error;
  }
  startAuthenticator(account.id, { record, token: info.session.token });
  return record;
}

// ---- Passcodes (§3.8; SPEC §5)

/** PingOne's OneTimePasscodeInfo for `now` (ms): RFC 6238 over the non-extractable HMAC key. */
export async function passcode(record, now = Date.now()) {
  const { key, period, digits } = record.totp;
  const step = Math.floor(now / 1000 / period);
  const counter = new Uint8Array(8);
  new DataView(counter.buffer).setBigUint64(0, BigInt(step));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, counter));
  const at = mac[mac.length - 1] & 0x0f;
  const binary = ((mac[at] & 0x7f) << 24) | (mac[at + 1] << 16) | (mac[at + 2] << 8) | mac[at + 3];
  return {
    passcode: String(binary % 10 ** digits).padStart(digits, "0"),
    validFrom: step * period,
    validUntil: (step + 1) * period,
    timeWindowSize: period,
  };
}

// ---- Push challenges (§3.5) and answers (§3.6)

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
  if (Object.hasOwn(header, "typ") && !(typeof header.typ === "string" && header.typ.toUpperCase() === "JWT")) return "not a JWT";
  return null;
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
  if (header.alg !== "ES256" || header.kid !== record.challengeKey.kid || signature.length !== 64) return refuse("not signed by the server's challenge key");
  const key = await crypto.subtle.importKey("spki", record.challengeKey.spki, ECDSA, false, ["verify"]);
  const valid = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature, utf8(`${parts[0]}.${parts[1]}`));
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
  if (nonce.length !== 32 || !Number.isInteger(c.iat) || !Number.isInteger(c.exp) || c.iat > c.exp) return refuse("malformed");
  // A minute of clock skew: a clock a little fast must not turn every request into a refusal (the
  // server refuses an answer to an expired challenge itself).
  if (c.exp * 1000 + SKEW_MS <= now) return refuse("expired");
  const ctx = c.ctx;
  if (typeof ctx?.address !== "string" || typeof ctx.userAgent !== "string" || !Number.isInteger(ctx.time)) return refuse("malformed");
  if (c.purpose !== undefined && c.purpose !== "reauthentication") return refuse("unknown purpose");
  const nm = c.nm;
  if (nm?.type === "SELECT_NUMBER") {
    const options = nm.options;
    const shaped = Array.isArray(options) && options.length === 3 && options.every((o) => typeof o === "string" && NUMBER.test(o) && o.length === options[0].length);
    if (!shaped || new Set(options).size !== 3) return refuse("bad number matching");
  } else if (nm?.type !== "ENTER_MANUALLY" || (nm.options !== undefined && nm.options !== null)) {
    return refuse("bad number matching");
  }
  return {
    request: {
      txn: c.txn,
      issuer: c.iss,
      nonce: c.nonce,
      username: c.sub,
      expiresAt: c.exp * 1000,
      // Chosen by whoever signs in (a phisher, maybe): shown without control or bidi characters.
      context: { address: printable(ctx.address).slice(0, 64), userAgent: printable(ctx.userAgent).slice(0, 160), time: ctx.time * 1000 },
      matching: nm.type === "SELECT_NUMBER" ? { type: nm.type, options: [...nm.options] } : { type: nm.type },
      reauthentication: c.purpose === "reauthentication",
    },
  };
}

/** The answer's JWS (§3.6): ES256 by this authenticator's signing key, low S like every signature here. */
export async function answerToken(record, request, { approve, number, report }, now = Date.now()) {
  const claims = { iss: record.deviceId, aud: request.issuer, txn: request.txn, nonce: request.nonce, iat: Math.floor(now / 1000), decision: approve ? "APPROVE" : "DENY" };
  if (approve) claims.number = number;
  else claims.report = Boolean(report);
  const input = `${b64json({ alg: "ES256", typ: "JWT" })}.${b64json(claims)}`;
  return `${input}.${base64url(await signLowS(record.signing.privateKey, utf8(input)))}`;
}

// ---- The running authenticator: its device session, push channel and pending requests.

const listeners = new Set();
let current = null;
let openRequest = () => {};
// The account whose authenticator the server said was revoked (or unpaired) while it ran here.
let removedFor = null;

/** `listener(event)`: `{kind: "requests"}`, `{kind: "state"}`, `{kind: "ignored", why}`, `{kind: "paired"}`,
 *  `{kind: "removed"}` (the server revoked this authenticator; its record is gone). */
export function subscribe(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
const emit = (event) => listeners.forEach((listener) => listener(event));

/** Where a click on a sign-in request's notification goes. */
export function onApprovalRequest(open) {
  openRequest = open;
}

/** What the screens show: the record (null when not paired), the channel's state, the live requests,
 *  and `removedFor`, the account whose authenticator the server removed while it ran here. */
export function authenticatorStatus() {
  return {
    removedFor,
    record: current?.record ?? null,
    state: current?.state ?? "closed",
    detail: current?.detail ?? "",
    requests: current ? [...current.requests.values()].sort((a, b) => a.context.time - b.context.time) : [],
  };
}

/** `request(token)` with the authenticator's device session, opening a new one once if it ended. */
async function withSession(me, request) {
  try {
    return await request(me.token);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error;
  }
  await renew(me);
  return request(me.token);
}

/** A new device session. The server's "device revoked" means this authenticator was revoked or unpaired
 *  from the account (another tab, the CLI, Settings elsewhere): its record is forgotten before this throws.
 *  It answers only while a tab is signed in: the account session is asked for first, and one ended
 *  elsewhere throws SignedOutError (main.js signs the page out and stops this authenticator). */
async function renew(me) {
  await requireAccountSession();
  try {
    me.token = (await openSession(me.record)).token;
    return me.token;
  } catch (error) {
    if (error instanceof ApiError && error.code === "device-revoked") await removed(me);
    throw error;
  }
}

/**
 * Stops the running authenticator `me` for good and deletes its keys and TOTP secret from this browser:
 * a secret whose device the server revoked must not keep showing passcodes. The lock is released only
 * once the record is gone, so a waiting tab that takes over reads the unpaired state.
 */
async function removed(me) {
  if (current !== me || me.state === "removed" || me.unpairing) return;
  me.state = "removed";
  me.channel?.close();
  try {
    await deleteIfStill(me.accountId, me.record.deviceId);
  } finally {
    removedFor = me.accountId;
    if (current === me) current = null;
    stopTimers(me);
    emit({ kind: "removed" });
  }
}

function notify(request) {
  if (!("Notification" in window) || Notification.permission !== "granted" || document.visibilityState === "visible") return;
  const notification = new Notification("Sign-in request", {
    body: `${request.username} from ${request.context.address}: open Countersign to approve or deny.`,
    tag: request.txn,
  });
  notification.onclick = () => {
    window.focus();
    notification.close();
    openRequest();
  };
}

async function receive(me, jwt) {
  const checked = await verifyChallenge(me.record, jwt);
  if (current !== me) return null;
  if (checked.refused) {
    emit({ kind: "ignored", why: checked.refused });
    return null;
  }
  const { request } = checked;
  if (!me.requests.has(request.txn) && !me.answered.has(request.txn)) {
    me.requests.set(request.txn, { ...request, receivedAt: Date.now() });
    emit({ kind: "requests" });
    notify(request);
  }
  return request.txn;
}

/** The server's list of pending challenges: adds those the channel missed, drops those finished elsewhere
 *  (answered on another authenticator, a passcode used instead). */
async function refresh(me) {
  if (current !== me || me.refreshing) return;
  me.refreshing = true;
  const asked = Date.now();
  try {
    const body = await withSession(me, authenticatorChallenges);
    const pending = new Set();
    for (const c of body.challenges ?? []) {
      const txn = await receive(me, c.jwt);
      if (txn) pending.add(txn);
    }
    let dropped = false;
    // One that arrived on the channel after the list was read is not in it, and stays.
    for (const [txn, request] of me.requests) {
      if (!pending.has(txn) && request.receivedAt < asked) dropped = me.requests.delete(txn);
    }
    if (dropped) emit({ kind: "requests" });
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403 || error.status === 404)) setState(me, "revoked", error.message);
  } finally {
    me.refreshing = false;
  }
}

function setState(me, state, detail = "") {
  // "revoked" and "removed" are final: the channel's own "closed", which follows, does not hide why.
  if (current !== me || me.state === "revoked" || me.state === "removed") return;
  me.state = state;
  me.detail = detail;
  if (state === "revoked" || state === "closed") stopTimers(me);
  emit({ kind: "state" });
}

function stopTimers(me) {
  clearInterval(me.poll);
  clearInterval(me.prune);
  me.channel?.close();
  me.waiting?.abort();
  me.release?.();
}

/**
 * Resolves once this tab holds the account's authenticator (a Web Lock): one tab of the profile runs it,
 * since a second push connection would close the first (4409). Another tab that holds it makes this
 * one wait, saying so, and take over when that tab closes.
 */
function holdLock(me) {
  if (!navigator.locks) return Promise.resolve();
  const name = `countersign authenticator ${me.accountId}`;
  const hold = () => new Promise((release) => (me.release = release));
  return new Promise((resolve, reject) => {
    navigator.locks.request(name, { ifAvailable: true }, (lock) => {
      if (lock) {
        resolve();
        return hold();
      }
      setState(me, "elsewhere");
      me.waiting = new AbortController();
      navigator.locks.request(name, { signal: me.waiting.signal }, () => (resolve(), hold())).catch(reject);
      return undefined;
    });
  });
}

/**
 * Runs the account's authenticator (when this browser is paired for it) while the account is signed in
 * here: a device session, the push channel for `mfaChallenge` frames, and a poll of the pending list
 * that catches what the channel missed and drops what finished elsewhere. `fresh` passes the record and
 * session of a pairing just made.
 */
export async function startAuthenticator(accountId, fresh) {
  if (current?.accountId === accountId && current.state !== "revoked" && !fresh) return;
  stopAuthenticator();
  const me = { accountId, record: fresh?.record ?? null, token: fresh?.token ?? null, requests: new Map(), answered: new Set(), state: "connecting", detail: "" };
  current = me;
  if (!me.record) me.record = (await pairedRecord(accountId)) ?? null;
  if (current !== me) return;
  if (!me.record) {
    current = null;
    return;
  }
  removedFor = null;
  emit({ kind: "paired" });
  try {
    await holdLock(me);
  } catch {
    return; // stopped while another tab held it
  }
  if (current !== me) return me.release?.();
  // While this tab waited, the tab that held the lock may have unpaired, found the authenticator removed,
  // or paired anew: what is stored now is what runs.
  const stored = await pairedRecord(accountId).catch(() => me.record);
  if (current !== me) return me.release?.();
  if (!stored) {
    current = null;
    removedFor = accountId;
    me.release?.();
    emit({ kind: "removed" });
    return;
  }
  if (stored.deviceId !== me.record.deviceId) Object.assign(me, { record: stored, token: null });
  setState(me, "connecting");
  // A device session: refused (revoked, keys gone) ends it; anything else (offline, a busy or restarting
  // server) is tried again, with backoff, while this tab holds the authenticator.
  for (let attempt = 0; !me.token; attempt++) {
    try {
      await renew(me);
    } catch (error) {
      if (current !== me) return;
      if (error?.name === "SignedOutError") return setState(me, "closed");
      if (error instanceof ApiError && [400, 401, 403, 404].includes(error.status)) {
        setState(me, "revoked", error.message);
        return;
      }
      if (error instanceof ApiError && error.status === 423) setState(me, "locked", error.message);
      else setState(me, "connecting", "The server cannot be reached; trying again.");
      await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 1000 * 2 ** attempt)));
      if (current !== me) return;
    }
  }
  if (current !== me) return;
  me.channel = openPushChannel({
    deviceToken: () => me.token,
    renewSession: () => renew(me),
    onEvent: (frame) => frame.type === "mfaChallenge" && receive(me, frame.jwt),
    onState: (state, detail) => {
      // Another connection of this authenticator took its place: it stops here, as when closed.
      setState(me, state === "elsewhere" ? "closed" : state, detail);
      if (state === "live") refresh(me);
    },
  });
  // The channel carries challenges only while live; the list catches the rest, more often without it.
  // While locked only the channel tries again (with its backoff): a refresh would renew every 5 s.
  me.poll = setInterval(() => me.state !== "locked" && (me.state !== "live" || ++me.ticks % 3 === 0) && refresh(me), 5_000);
  me.ticks = 0;
  me.prune = setInterval(() => {
    let expired = false;
    for (const [txn, request] of me.requests) if (request.expiresAt <= Date.now()) expired = me.requests.delete(txn);
    if (expired) emit({ kind: "requests" });
  }, 1_000);
}

export function stopAuthenticator() {
  if (!current) return;
  const me = current;
  current = null;
  stopTimers(me);
  emit({ kind: "state" });
}

/**
 * Approves (with the number picked or typed) or denies (`report`: "this wasn't me") a request. Returns the
 * transaction's status after the answer; the request leaves the list once the server has it.
 */
export async function answer(txn, choice) {
  const me = current;
  const request = me?.requests.get(txn);
  if (!request) throw new Error("This sign-in request is no longer waiting (answered, finished or expired).");
  if (request.expiresAt <= Date.now()) {
    me.requests.delete(txn);
    emit({ kind: "requests" });
    throw new Error("This sign-in request expired before the answer; nothing was sent.");
  }
  if (choice.approve) {
    const number = String(choice.number ?? "");
    const ok = request.matching.type === "SELECT_NUMBER" ? request.matching.options.includes(number) : NUMBER.test(number);
    if (!ok) throw new Error("Pick or type the number shown where you are signing in before approving.");
  }
  const done = () => {
    me.answered.add(txn);
    me.requests.delete(txn);
    emit({ kind: "requests" });
  };
  try {
    const jwt = await answerToken(me.record, request, choice);
    const body = await withSession(me, (token) => answerChallenge({ jwt }, token));
    done();
    return body.status;
  } catch (error) {
    // Refused (finished, expired, not this account's): it cannot be answered again. Anything else (no
    // connection) leaves it waiting, to answer again.
    if (error instanceof ApiError && [404, 409, 422].includes(error.status)) done();
    throw error;
  }
}

/** Unpairs this browser (DELETE /v1/authenticator, PingOne's unpair) and forgets its keys and secret. A
 *  device the server already revoked is forgotten here too. */
export async function unpair(accountId) {
  const record = await pairedRecord(accountId);
  if (record) {
    const me = current?.accountId === accountId ? current : { record, token: null };
    // The server ends this authenticator's sessions as it unpairs it: that is this unpairing, not a removal.
    me.unpairing = true;
    try {
      await withSession(me, unpairAuthenticator);
    } catch (error) {
      const gone = error instanceof ApiError && [401, 403, 404].includes(error.status) && error.code !== "not-an-authenticator";
      if (!gone) {
        me.unpairing = false;
        throw error;
      }
    }
  }
  // Forgotten before the screens hear of it, so that what they read back is the unpaired state.
  await deleteRecord(accountId);
  if (current?.accountId === accountId) stopAuthenticator();
  emit({ kind: "paired" });
}

// ---- Authentication codes (§3.9): a QR sign-in answered from here

// The code alphabet of PROTOCOL §3.1 (no 0/O, 1/I/L), 8 symbols.
const AUTH_CODE = /^[2-9A-HJKMNP-Z]{8}$/;

/**
 * The 8 characters of a QR sign-in code from what was typed or scanned: the code bare (any case, spaces
 * and dashes ignored) or the QR code's URI (`countersign://auth?authentication_code=…&server=…`). Throws
 * with words when it is neither, or when the URI names another server than this page's.
 */
export function authCodeFrom(input) {
  const given = String(input).trim();
  let bare = given;
  if (/^[a-z][a-z0-9+.-]*:/i.test(given)) {
    let url;
    try {
      url = new URL(given);
    } catch {
      throw new Error("This is not a sign-in code: type the 8 characters under the QR code.");
    }
    const server = url.searchParams.get("server");
    const origin = (() => {
      try {
        return new URL(server).origin;
      } catch {
        return server;
      }
    })();
    if (server && origin !== location.origin) {
      throw new Error(`This code is for another server (${printable(server)}), not this one: sign in there with its own authenticator.`);
    }
    bare = url.searchParams.get("authentication_code") ?? "";
  }
  const code = bare.replace(/[\s-]/g, "").toUpperCase();
  if (!AUTH_CODE.test(code)) throw new Error("A sign-in code is 8 letters and digits, as the sign-in page shows them (like ABCD-2345).");
  return code;
}

/** The authenticator to call the server with: the one running in this tab, or the paired record's. */
async function authenticatorFor(accountId) {
  if (current?.accountId === accountId && current.record) return current;
  const record = await pairedRecord(accountId);
  if (!record) throw new Error("This browser is not an authenticator for your account: pair it in Settings first.");
  return { accountId, record, token: null };
}

/**
 * PingOne's `authenticate(authCode)`: claims a QR sign-in's code for this authenticator, so that no other
 * can take it. Answers PingOne's AuthenticationObject: `status` (CLAIMED to approve or deny; COMPLETED when
 * the code asked for no approval), the `users` it may sign in, and `clientContext` (who asked, from where).
 */
export async function claimAuthCode(accountId, code) {
  const me = await authenticatorFor(accountId);
  return withSession(me, (token) => claimOnServer({ code }, token));
}

/** Approves (for `userId`, one of the claim's users) or denies a claimed code; the code's status after. */
export async function answerAuthCode(accountId, code, { approve, userId }) {
  const me = await authenticatorFor(accountId);
  const request = approve
    ? (token) => approveAuthCode({ code, userId }, token)
    : (token) => denyAuthCode({ code }, token);
  return (await withSession(me, request)).status;
}
