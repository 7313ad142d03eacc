// This browser as a running authenticator of its account (docs/PROTOCOL.md §3, PingOne's MFA SDK): while
// the account is signed in here, the paired authenticator holds a device session of its own and the push
// channel, takes the challenges that verify (challenge.js), lists them for the screens and sends the
// answers; it unpairs, and claims and answers QR sign-in codes. What happens is told as the signal
// "authenticator" (events.js): { kind: "requests" | "state" | "ignored" (with why) | "paired" | "removed" (the
// server revoked this authenticator; its record is gone) }, and a click on a request's notification as
// "approval-requested".
import { ApiError } from "../api.js";
import { openSession } from "../device.js";
import { emit } from "../events.js";
import { openPushChannel } from "../push.js";
import { keepRegistered, pushOn } from "../web-push.js";
import { requireAccountSession } from "../server/accounts.js";
import {
  answerChallenge,
  approveAuthCode,
  authenticatorChallenges,
  claimAuthCode as claimOnServer,
  denyAuthCode,
  unpairAuthenticator,
} from "../server/authenticator.js";
import { answerToken, numberAllowed, verifyChallenge } from "./challenge.js";
import { deleteIfStill, deleteRecord, pairedRecord } from "./store.js";

const tell = (event) => emit("authenticator", event);

let current = null;
// The account whose authenticator the server said was revoked (or unpaired) while it ran here.
let removedFor = null;

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

/** `request(token)` with the account's authenticator's device session (this browser's push subscription is
 *  registered so): the running one's, or one opened for this; nothing when this browser is not paired. */
export async function withAuthenticatorSession(accountId, request) {
  const me = current;
  if (me && me.accountId === accountId && me.token) return withSession(me, request);
  const record = await pairedRecord(accountId);
  if (!record) return undefined;
  return request((await openSession(record)).token);
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
    keepRegistered(me.accountId, me.token).catch(() => {});
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
    tell({ kind: "removed" });
  }
}

function notify(request) {
  const shown = document.visibilityState === "visible";
  // Hidden, with pushes reaching this browser: the service worker shows it (one request, one notification).
  if (!("Notification" in window) || Notification.permission !== "granted" || shown || pushOn()) return;
  // PingOne's words, as the service worker's: where a sign-in comes from is shown in Approvals, not here.
  const notification = new Notification("New Authentication", {
    body: "You have a new authentication request.",
    tag: request.txn,
  });
  notification.onclick = () => {
    window.focus();
    notification.close();
    emit("approval-requested");
  };
}

async function receive(me, jwt) {
  const checked = await verifyChallenge(me.record, jwt);
  if (current !== me) return null;
  if (checked.refused) {
    tell({ kind: "ignored", why: checked.refused });
    return null;
  }
  const { request } = checked;
  if (!me.requests.has(request.txn) && !me.answered.has(request.txn)) {
    me.requests.set(request.txn, { ...request, receivedAt: Date.now() });
    tell({ kind: "requests" });
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
    if (dropped) tell({ kind: "requests" });
  } catch (error) {
    const gone = error instanceof ApiError && [401, 403, 404].includes(error.status);
    if (gone) setState(me, "revoked", error.message);
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
  tell({ kind: "state" });
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

/** Opens the authenticator's device session. Refused (revoked, keys gone) ends it; anything else
 *  (offline, a busy or restarting server) is tried again, with backoff, while this tab holds it. */
async function connect(me) {
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
}

/** The push channel for `mfaChallenge` frames, the poll of the pending list and the pruning of expired
 *  requests. */
function listen(me) {
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
  const due = () => me.state !== "locked" && (me.state !== "live" || ++me.ticks % 3 === 0);
  me.poll = setInterval(() => due() && refresh(me), 5_000);
  me.ticks = 0;
  me.prune = setInterval(() => {
    let expired = false;
    for (const [txn, request] of me.requests) if (request.expiresAt <= Date.now()) expired = me.requests.delete(txn);
    if (expired) tell({ kind: "requests" });
  }, 1_000);
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
  const me = {
    accountId,
    record: fresh?.record ?? null,
    token: fresh?.token ?? null,
    requests: new Map(),
    answered: new Set(),
    state: "connecting",
    detail: "",
  };
  current = me;
  if (!me.record) me.record = (await pairedRecord(accountId)) ?? null;
  if (current !== me) return;
  if (!me.record) {
    current = null;
    return;
  }
  removedFor = null;
  tell({ kind: "paired" });
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
    tell({ kind: "removed" });
    return;
  }
  if (stored.deviceId !== me.record.deviceId) Object.assign(me, { record: stored, token: null });
  setState(me, "connecting");
  await connect(me);
  if (current !== me || !me.token) return;
  listen(me);
}

export function stopAuthenticator() {
  if (!current) return;
  const me = current;
  current = null;
  stopTimers(me);
  tell({ kind: "state" });
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
    tell({ kind: "requests" });
    throw new Error("This sign-in request expired before the answer; nothing was sent.");
  }
  if (choice.approve && !numberAllowed(request, String(choice.number ?? ""))) {
    throw new Error("Pick or type the number shown where you are signing in before approving.");
  }
  const done = () => {
    me.answered.add(txn);
    me.requests.delete(txn);
    tell({ kind: "requests" });
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
      const gone =
        error instanceof ApiError && [401, 403, 404].includes(error.status) && error.code !== "not-an-authenticator";
      if (!gone) {
        me.unpairing = false;
        throw error;
      }
    }
  }
  // Forgotten before the screens hear of it, so that what they read back is the unpaired state.
  await deleteRecord(accountId);
  if (current?.accountId === accountId) stopAuthenticator();
  tell({ kind: "paired" });
}

/** Forgets this browser's authenticator for the account (the key gate's wipe): unpaired on the server when
 *  it answers, deleted here whatever it says. */
export async function forgetAuthenticator(accountId) {
  try {
    await unpair(accountId);
  } catch {
    stopAuthenticator();
    await deleteRecord(accountId);
  }
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
