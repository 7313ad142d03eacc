// Trust on first use, as the CLI does it (Sources/CountersignClient/KeyPins.swift): the first contact with
// a user pins their active devices as the directory lists them; later, a rotation signed by the pinned key
// is followed, and any other change blocks sending until the user compares the safety number and trusts
// it. A message verifies only under a key pinned for its sender: a current one, or a retired one for a
// message signed before it was retired. The directory is always the one asked for, by exact name.
import { ApiError, call } from "./api.js";
import { fromBase64url } from "./bytes.js";
import { keyIdOf, rotationMessage, verifyLowS } from "./device-keys.js";
import { allFor, run } from "./keystore.js";
import { session } from "./session.js";

/** Usernames as the server keeps them. */
export const normalise = (name) => name.trim().toLowerCase();

const fp = (hexId) => hexId.match(/.{8}/g).join(":");

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
  let body;
  try {
    ({ body } = await call("GET", `/v1/users/${encodeURIComponent(asked)}/devices`, { token: session.deviceToken || session.token }));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw new Error(`There is no user ${asked} on this server. Check the name.`);
    throw error;
  }
  if (body?.username !== asked) {
    throw new PinError(`The server answered with another user's keys when asked for ${asked}: refused. Your server may be compromised.`, { username: asked });
  }
  return body;
}

/** The devices of a directory to pin (keys checked to be P-256; key IDs computed here, never taken from
 *  the server's fields), without this browser's own device. */
async function devicesOf(dir, own) {
  const out = [];
  for (const d of dir.devices) {
    const signingKey = fromBase64url(d.signingKey);
    const encryptionKey = fromBase64url(d.encryptionKey);
    const signingKeyId = await keyIdOf(signingKey);
    const encryptionKeyId = await keyIdOf(encryptionKey);
    if (!signingKeyId || !encryptionKeyId) throw new PinError(`The server lists a device of ${dir.username} whose key is not a P-256 public key.`, { username: dir.username });
    if (dir.username === own.username && d.id === own.deviceId) {
      if (signingKeyId !== own.signingKeyId) {
        throw new PinError(
          `REFUSED: the server lists this browser's device with key ${fp(signingKeyId)}, but its key is ${fp(own.signingKeyId)}; someone may have replaced this device's key on the server.`,
          { username: dir.username },
        );
      }
      continue;
    }
    out.push({ id: d.id, name: d.name, signingKeyId, encryptionKeyId, signingKey: d.signingKey, encryptionKey: d.encryptionKey });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function changes(old, now) {
  const identity = (d) => `${d.id} ${d.signingKeyId} ${d.encryptionKeyId}`;
  const out = [];
  for (const d of now) if (!old.some((o) => o.id === d.id)) out.push(`added device ${d.name} (${fp(d.signingKeyId)})`);
  for (const d of old) if (!now.some((n) => n.id === d.id)) out.push(`removed device ${d.name} (${fp(d.signingKeyId)})`);
  for (const d of now) {
    const before = old.find((o) => o.id === d.id);
    if (before && identity(before) !== identity(d)) out.push(`device ${d.name} changed key from ${fp(before.signingKeyId)} to ${fp(d.signingKeyId)}`);
  }
  return out;
}

const pinKey = (username) => `${session.account.id}/${username}`;
const load = (username) => run("pins", "readonly", (store) => store.get(pinKey(username)));
const save = (pin) => run("pins", "readwrite", (store) => store.put(pin));

function pinned(username, devices, old, now) {
  const retired = [...(old?.retired ?? [])];
  for (const d of old?.devices ?? []) {
    if (!devices.some((n) => n.signingKeyId === d.signingKeyId)) retired.push({ deviceId: d.id, signingKeyId: d.signingKeyId, signingKey: d.signingKey, retiredAt: now });
  }
  return { key: pinKey(username), accountId: session.account.id, username, firstSeen: old?.firstSeen ?? now, trustedAt: now, devices, retired };
}

/** Follows each pinned device's rotations that the pinned key signed, one after another (PROTOCOL §1). */
async function followRotations(pin, dir, now) {
  let moved = false;
  for (const [i, d] of pin.devices.entries()) {
    const current = dir.devices.find((c) => c.id === d.id);
    if (!current || current.signingKey === d.signingKey) continue;
    const history = dir.history.filter((h) => h.deviceId === d.id && h.rotationSignature && h.encryptionKey);
    if (history.length > 1000) continue;
    let key = d;
    const seen = new Set([d.signingKeyId]);
    const retired = [];
    while (key.signingKey !== current.signingKey) {
      const old = fromBase64url(key.signingKey);
      const next = [];
      for (const h of history) {
        const newSigning = fromBase64url(h.signingKey);
        const newId = await keyIdOf(newSigning);
        if (!newId || seen.has(newId)) continue;
        const message = await rotationMessage(d.id, old, newSigning, fromBase64url(h.encryptionKey));
        if (await verifyLowS(old, message, fromBase64url(h.rotationSignature))) next.push({ h, newId });
      }
      // One successor only: a key that signed two was used by two parties; the user decides.
      if (next.length !== 1) break;
      const { h, newId } = next[0];
      const addedAt = Date.parse(h.addedAt);
      retired.push({ deviceId: d.id, signingKeyId: key.signingKeyId, signingKey: key.signingKey, retiredAt: Math.min(now, Number.isFinite(addedAt) ? addedAt : now) });
      seen.add(newId);
      key = { ...d, signingKeyId: newId, signingKey: h.signingKey, encryptionKey: h.encryptionKey };
    }
    if (key.signingKey !== current.signingKey || key.encryptionKey !== current.encryptionKey) continue;
    pin.devices[i] = { ...d, name: current.name, signingKeyId: key.signingKeyId, encryptionKeyId: await keyIdOf(fromBase64url(current.encryptionKey)), signingKey: current.signingKey, encryptionKey: current.encryptionKey };
    pin.retired = [...(pin.retired ?? []), ...retired];
    moved = true;
  }
  return moved;
}

/**
 * The devices to seal to for `username` (a first contact pins them). Throws PinError when they changed
 * since they were pinned, other than by signed rotations.
 */
export async function checkBeforeSending(username, own, now = Date.now()) {
  const dir = await directory(username);
  const current = await devicesOf(dir, own);
  const pin = await load(dir.username);
  if (!pin) {
    // Pinned once the message is sent (`commit`), as the CLI does: a send that fails pins nothing.
    const first = pinned(dir.username, current, null, now);
    return { directory: dir, devices: current, firstContact: true, commit: () => save(first) };
  }
  if (await followRotations(pin, dir, now)) await save(pin);
  const differ = changes(pin.devices, current);
  if (differ.length) {
    const whose = dir.username === own.username ? "Your own account's other devices" : `${dir.username}'s devices`;
    throw new PinError(`${whose} changed since you pinned them: ${differ.join("; ")}. Compare the safety number before you trust them.`, {
      username: dir.username,
      changes: differ,
    });
  }
  return { directory: dir, devices: current, firstContact: false, commit: async () => {} };
}

/** Pins the user's devices as the directory lists them now (the user compared the safety number). */
export async function trust(username, own, now = Date.now()) {
  const dir = await directory(username);
  await save(pinned(dir.username, await devicesOf(dir, own), await load(dir.username), now));
}

/**
 * The SPKI a message from `sender`, signed by key `keyIdHex` at `signedAt` (ms), verifies under: a key
 * pinned for the sender, current or retired after `signedAt`. A first contact pins the sender's devices
 * (from the directory asked by the sender's name) before the check.
 */
export async function signerKey(sender, keyIdHex, signedAt, own, now = Date.now()) {
  const name = normalise(sender);
  if (name === own.username && keyIdHex === own.signingKeyId) return own.signingSpki;
  const ownRetired = name === own.username ? own.previous?.find((p) => p.keyId === keyIdHex) : null;
  if (ownRetired) {
    if (signedAt >= ownRetired.retiredAt) throw new PinError(`It is signed by this browser's key ${fp(keyIdHex)}, which was replaced before the message was signed.`, { username: name });
    return ownRetired.spki;
  }
  let pin = await load(name);
  let dir = null;
  try {
    dir = await directory(name);
  } catch (error) {
    if (error instanceof PinError) throw error;
    // Offline: only what is pinned counts.
  }
  // A first contact is kept only once its key is found: a refused message pins nothing.
  let firstContact = false;
  if (dir) {
    if (!pin) {
      pin = pinned(name, await devicesOf(dir, own), null, now);
      firstContact = true;
    } else if (await followRotations(pin, dir, now)) {
      await save(pin);
    }
  }
  if (!pin) throw new PinError(`Nothing is pinned for ${name} in this browser and the server could not be asked.`, { username: name });
  const device = pin.devices.find((d) => d.signingKeyId === keyIdHex);
  if (device) {
    const retiredAt = Date.parse(dir?.history.find((h) => h.deviceId === device.id && h.signingKeyId === keyIdHex)?.retiredAt ?? "");
    if (Number.isFinite(retiredAt) && retiredAt <= signedAt) {
      throw new PinError(`It is signed by ${name}'s key ${fp(keyIdHex)}, which was retired before the message was signed.`, { username: name });
    }
    if (firstContact) await save(pin);
    return fromBase64url(device.signingKey);
  }
  const retired = (pin.retired ?? []).findLast((r) => r.signingKeyId === keyIdHex);
  if (retired) {
    if (signedAt >= retired.retiredAt) throw new PinError(`It is signed by ${name}'s key ${fp(keyIdHex)}, which was retired before the message was signed.`, { username: name });
    return fromBase64url(retired.signingKey);
  }
  const known = pin.devices.map((d) => fp(d.signingKeyId)).join(", ") || "none";
  throw new PinError(`It claims to be from ${name}, but it is signed by key ${fp(keyIdHex)}, which is not a key you pinned for ${name} (pinned: ${known}).`, { username: name });
}

/** Every contact pinned in this browser for the signed-in account. */
export const contacts = () => allFor("pins", session.account.id);
