// Trust on first use, as the CLI does it (Sources/CountersignClient/KeyPins.swift): the first contact with
// a user pins their active devices as the directory lists them; later, a rotation signed by the pinned key
// is followed, and any other change blocks sending until the user compares the safety number and trusts
// it. A message verifies only under a key pinned for its sender: a current one, or a retired one for a
// message signed before it was retired. The directory is always the one asked for, by exact name, and
// every update of one user's pins runs under a lock, so two tabs or two messages cannot interleave.
import { ApiError } from "./api.js";
import { fromBase64url } from "./bytes.js";
import { keyIdOf, rotationMessage, verifyLowS } from "./device-keys.js";
import { visibleText } from "./display-name.js";
import { allFor, run } from "./keystore.js";
import * as server from "./server/devices.js";
import {
  DIRECTORY_DEVICE_LIMIT,
  fingerprint as fp,
  isUsername,
  normalisedUsername,
  PIN_HISTORY_LIMIT,
  USERNAME_RULE,
} from "./rules.js";
import { session } from "./session.js";

export { isUsername };

/** A username as the server keeps it (UsernameRule.normalised), or null when `name` breaks the rule. */
export const normalise = normalisedUsername;

/** A name in this module's words: its hidden and direction-changing characters written out. */
const shown = visibleText;


/** Why a pin check refused; `changes` lists what differs from the pins, for the warning. */
export class PinError extends Error {
  constructor(message, { username, changes = [] } = {}) {
    super(message);
    this.username = username;
    this.changes = changes;
  }
}

/** The key directory of `username`, refused unless it is that user's. */
export async function directory(username) {
  const asked = normalise(username);
  if (!asked) throw new Error(`“${shown(String(username))}” is not a username: ${USERNAME_RULE}.`);
  let body;
  try {
    body = await server.directory(asked, session.deviceToken || session.token);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404)
      throw new Error(`There is no user ${asked} on this server. Check the name.`);
    throw error;
  }
  if (body?.username !== asked) {
    throw new PinError(
      `The server answered with another user's keys when asked for ${asked}: refused. Your server may be compromised.`,
      { username: asked },
    );
  }
  if (!Array.isArray(body.devices) || !Array.isArray(body.history) || body.devices.length > DIRECTORY_DEVICE_LIMIT) {
    throw new PinError(
      `The server's key directory for ${asked} is not one this page accepts (more than ${DIRECTORY_DEVICE_LIMIT} ` +
        `devices, or malformed).`,
      { username: asked },
    );
  }
  return body;
}

/** The devices of a directory to pin (keys checked to be P-256; key IDs computed here, never taken from
 *  the server's fields), without this browser's own device, whose listed keys must be the ones it holds. */
export async function devicesOf(dir, own) {
  const out = [];
  for (const d of dir.devices) {
    const signingKey = fromBase64url(String(d.signingKey));
    const encryptionKey = fromBase64url(String(d.encryptionKey));
    const signingKeyId = await keyIdOf(signingKey);
    const encryptionKeyId = await keyIdOf(encryptionKey);
    if (!signingKeyId || !encryptionKeyId)
      throw new PinError(`The server lists a device of ${dir.username} whose key is not a P-256 public key.`, {
        username: dir.username,
      });
    if (dir.username === own.username && d.id === own.deviceId) {
      if (signingKeyId !== own.signingKeyId || encryptionKeyId !== own.encryptionKeyId) {
        throw new PinError(
          `REFUSED: the server lists this browser's device with key ${fp(signingKeyId)}, but its key ` +
            `is ${fp(own.signingKeyId)}; someone may have replaced this device's key on the server.`,
          { username: dir.username },
        );
      }
      continue;
    }
    out.push({
      id: String(d.id),
      name: String(d.name ?? ""),
      signingKeyId,
      encryptionKeyId,
      signingKey: d.signingKey,
      encryptionKey: d.encryptionKey,
    });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The signing keys of one side of a safety number: this browser's own key stands in for what the server
 *  lists for this device (refused if it differs), so the server cannot substitute it. */
export async function safetyKeys(dir, own) {
  const others = (await devicesOf(dir, own)).map((d) => fromBase64url(d.signingKey));
  return dir.username === own.username ? [own.signingSpki, ...others] : others;
}

function changes(old, now) {
  const identity = (d) => `${d.id} ${d.signingKeyId} ${d.encryptionKeyId}`;
  const out = [];
  for (const d of now)
    if (!old.some((o) => o.id === d.id)) out.push(`added device ${shown(d.name)} (${fp(d.signingKeyId)})`);
  for (const d of old)
    if (!now.some((n) => n.id === d.id)) out.push(`removed device ${shown(d.name)} (${fp(d.signingKeyId)})`);
  for (const d of now) {
    const before = old.find((o) => o.id === d.id);
    if (before && identity(before) !== identity(d))
      out.push(`device ${shown(d.name)} changed key from ${fp(before.signingKeyId)} to ${fp(d.signingKeyId)}`);
  }
  return out;
}

const pinKey = (username) => `${session.account.id}/${username}`;
const load = (username) => run("pins", "readonly", (store) => store.get(pinKey(username)));
const save = (pin) => run("pins", "readwrite", (store) => store.put(pin));

/** Runs `body` holding this browser's lock on one user's pins. */
function locked(username, body) {
  return navigator.locks ? navigator.locks.request(`countersign pins ${pinKey(username)}`, body) : body();
}

function pinned(username, devices, old, now) {
  const retired = [...(old?.retired ?? [])];
  for (const d of old?.devices ?? []) {
    if (!devices.some((n) => n.signingKeyId === d.signingKeyId))
      retired.push({ deviceId: d.id, signingKeyId: d.signingKeyId, signingKey: d.signingKey, retiredAt: now });
  }
  return {
    key: pinKey(username),
    accountId: session.account.id,
    username,
    firstSeen: old?.firstSeen ?? now,
    trustedAt: now,
    devices,
    retired,
  };
}

/** Follows each pinned device's rotations that the pinned key signed, one after another (PROTOCOL §1). */
async function followRotations(pin, dir, now) {
  let moved = false;
  for (const [i, d] of pin.devices.entries()) {
    const current = dir.devices.find((c) => c.id === d.id);
    if (!current || current.signingKey === d.signingKey) continue;
    // As KeyPins: a device's whole history is counted, and one longer than the limit is not followed.
    const ofDevice = dir.history.filter((h) => h.deviceId === d.id);
    if (ofDevice.length > PIN_HISTORY_LIMIT) continue;
    const entries = ofDevice.filter((h) => h.rotationSignature && h.encryptionKey);
    // Each entry's key ID once: the chain below tries every entry at each step.
    const history = [];
    for (const h of entries) {
      const signing = fromBase64url(String(h.signingKey));
      const id = await keyIdOf(signing);
      if (id) history.push({ h, signing, id });
    }
    let key = d;
    const seen = new Set([d.signingKeyId]);
    const retired = [];
    while (key.signingKey !== current.signingKey) {
      const old = fromBase64url(key.signingKey);
      const next = [];
      for (const entry of history) {
        if (seen.has(entry.id)) continue;
        const message = await rotationMessage(d.id, old, entry.signing, fromBase64url(String(entry.h.encryptionKey)));
        if (await verifyLowS(old, message, fromBase64url(String(entry.h.rotationSignature)))) next.push(entry);
      }
      // One successor only: a key that signed two was used by two parties; the user decides.
      if (next.length !== 1) break;
      const { h, id } = next[0];
      // Retired no later than the directory says the old key was, than its successor arrived, and than now
      // (KeyPins: min(oldEntry.retiredAt ?? now, next.addedAt, now)).
      const oldEntry = ofDevice.find((e) => e.signingKeyId === key.signingKeyId);
      const time = (iso) => (Number.isFinite(Date.parse(iso)) ? Date.parse(iso) : now);
      const retiredAt = Math.min(oldEntry?.retiredAt ? time(oldEntry.retiredAt) : now, time(h.addedAt), now);
      retired.push({ deviceId: d.id, signingKeyId: key.signingKeyId, signingKey: key.signingKey, retiredAt });
      seen.add(id);
      key = { ...d, signingKeyId: id, signingKey: h.signingKey, encryptionKey: h.encryptionKey };
    }
    if (key.signingKey !== current.signingKey || key.encryptionKey !== current.encryptionKey) continue;
    const encryptionKeyId = await keyIdOf(fromBase64url(String(current.encryptionKey)));
    if (!encryptionKeyId) continue;
    pin.devices[i] = {
      ...d,
      name: String(current.name ?? ""),
      signingKeyId: key.signingKeyId,
      encryptionKeyId,
      signingKey: current.signingKey,
      encryptionKey: current.encryptionKey,
    };
    pin.retired = [...(pin.retired ?? []), ...retired];
    moved = true;
  }
  return moved;
}

/** The pins of `dir.username` against one directory answer, once the rotations their keys signed are
 *  followed (and saved); the caller holds that user's lock. `pin` is null for a user never pinned. */
async function compared(dir, own, now) {
  const devices = await devicesOf(dir, own);
  const pin = (await load(dir.username)) ?? null;
  if (pin && (await followRotations(pin, dir, now))) await save(pin);
  return { pin, devices, changes: pin ? changes(pin.devices, devices) : [] };
}

/** What sending to `dir.username` would meet, without sending: `{ pin, devices, changes }`, where a
 *  non-empty `changes` blocks sending until the user trusts. Pins nothing new. */
export function pinState(dir, own, now = Date.now()) {
  return locked(dir.username, () => compared(dir, own, now));
}

/**
 * The devices to seal to for `username`. Throws PinError when they changed since they were pinned, other
 * than by signed rotations. A first contact is pinned by `commit`, once the message is sent, as the CLI
 * does: a send that fails pins nothing.
 */
export function checkBeforeSending(username, own, now = Date.now()) {
  return locked(normalise(username) ?? String(username), async () => {
    const dir = await directory(username);
    const { pin, devices: current, changes: differ } = await compared(dir, own, now);
    if (!pin) {
      const first = pinned(dir.username, current, null, now);
      return {
        directory: dir,
        devices: current,
        firstContact: true,
        commit: () => locked(dir.username, async () => (await load(dir.username)) || save(first)),
      };
    }
    if (differ.length) {
      const whose = dir.username === own.username ? "Your own account's other devices" : `${dir.username}'s devices`;
      throw new PinError(`${whose} changed since you pinned them: ${differ.join("; ")}. Compare the safety number ` +
        `before you trust them.`, {
        username: dir.username,
        changes: differ,
      });
    }
    return { directory: dir, devices: current, firstContact: false, commit: async () => {} };
  });
}

/** Pins exactly the devices of `dir`, the directory answer whose safety number the user compared. */
export async function trust(dir, own, now = Date.now()) {
  const devices = await devicesOf(dir, own);
  await locked(dir.username, async () => save(pinned(dir.username, devices, await load(dir.username), now)));
}

/**
 * The SPKI a message from `sender`, signed by key `keyIdHex` at `signedAt` (ms), verifies under: a key
 * pinned for the sender, current or retired after `signedAt`. A first contact takes the sender's devices
 * from the directory (asked by the sender's name); they are pinned by `commit`, which the caller runs
 * only once the signature holds. Returns `{ spki, firstContact, commit }`.
 */
export function signerKey(sender, keyIdHex, signedAt, own, now = Date.now()) {
  const name = normalise(sender) ?? String(sender);
  const none = async () => {};
  if (name === own.username && keyIdHex === own.signingKeyId)
    return { spki: own.signingSpki, firstContact: false, commit: none };
  const ownRetired = name === own.username ? own.previous?.find((p) => p.keyId === keyIdHex) : null;
  if (ownRetired) {
    if (signedAt >= ownRetired.retiredAt)
      throw new PinError(
        `It is signed by this browser's key ${fp(keyIdHex)}, which was replaced before the message was signed.`,
        { username: name },
      );
    return { spki: ownRetired.spki, firstContact: false, commit: none };
  }
  return locked(name, async () => {
    let pin = await load(name);
    let dir = null;
    try {
      dir = await directory(name);
    } catch (error) {
      if (error instanceof PinError) throw error;
      // Offline: only what is pinned counts.
    }
    let firstContact = false;
    if (dir) {
      if (!pin) {
        pin = pinned(name, await devicesOf(dir, own), null, now);
        firstContact = true;
      } else if (await followRotations(pin, dir, now)) {
        await save(pin);
      }
    }
    if (!pin)
      throw new PinError(`Nothing is pinned for ${name} in this browser and the server could not be asked.`, {
        username: name,
      });
    const retiredWord = `It is signed by ${name}'s key ${fp(keyIdHex)}, which was retired before the message was ` +
      `signed.`;
    const device = pin.devices.find((d) => d.signingKeyId === keyIdHex);
    const commit = firstContact ? () => locked(name, async () => (await load(name)) || save(pin)) : none;
    if (device) {
      const retiredAt = Date.parse(
        dir?.history.find((h) => h.deviceId === device.id && h.signingKeyId === keyIdHex)?.retiredAt ?? "",
      );
      if (Number.isFinite(retiredAt) && retiredAt <= signedAt) throw new PinError(retiredWord, { username: name });
      return { spki: fromBase64url(device.signingKey), firstContact, commit };
    }
    const retired = (pin.retired ?? []).findLast((r) => r.signingKeyId === keyIdHex);
    if (retired) {
      if (signedAt >= retired.retiredAt) throw new PinError(retiredWord, { username: name });
      return { spki: fromBase64url(retired.signingKey), firstContact, commit };
    }
    const known = pin.devices.map((d) => fp(d.signingKeyId)).join(", ") || "none";
    throw new PinError(
      `It claims to be from ${name}, but it is signed by key ${fp(keyIdHex)}, which is not a key you pinned ` +
        `for ${name} (pinned: ${known}).`,
      { username: name },
    );
  });
}

/** Every contact pinned in this browser for the signed-in account. */
export const contacts = () => allFor("pins", session.account.id);
