// Trust on first use, as the CLI does it (Sources/CountersignClient/KeyPins.swift): the first contact with
// a user pins their active devices as the directory lists them; later, what a contact's devices may do without
// the user is followed (PROTOCOL §1.2): a rotation signed by the pinned key, a new device vouched for (linked)
// by a pinned device of the same account (or, on the own account, by this browser), and a device no longer
// listed. Any other change blocks sending until the user compares the safety number and trusts it; a contact
// marked verified follows nothing. A message verifies only under a key pinned for its sender: a current one,
// or a retired one for a message signed before it was retired; one signed by the current key of a listed
// device that no pinned device approved is from an "unverified device", never from the sender. The directory
// is always the one asked for, by exact name, and every update of one user's pins runs under a lock, so two
// tabs or two messages cannot interleave. Every change followed is kept as a notice until it is seen.
import { ApiError } from "./api.js";
import { base64url, fromBase64url } from "./bytes.js";
import {
  endorsementMessage,
  keyIdOf,
  registrationMessage,
  rotationMessage,
  verifyLowS,
  vouchMessage,
} from "./device-keys.js";
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


/** Why a pin check refused. `changes` lists what differs from the pins, for the warning; `reason` says which
 *  rule refused: "changed" (sending blocked), "unpinned" (a signer pinned for nobody), "retired" (a key
 *  retired before the message was signed), "unverified" (UnverifiedDevice), "unproven" (a listed device whose
 *  encryption key its signing key never chose, PROTOCOL §1.3), or "refused" (anything else). */
export class PinError extends Error {
  constructor(message, { username, changes = [], reason = "refused" } = {}) {
    super(message);
    this.username = username;
    this.changes = changes;
    this.reason = reason;
  }
}

/**
 * A message signed by the current key of a device the directory lists for its sender, which no device pinned
 * for the sender approved (KeyPins' PinError.unverifiedDevice). Its signature may be checked with `spki` and
 * the message shown as from the sender's new, unverified device `device` ({id, name, signingKeyId}), with
 * "Verify" beside it, never as from the sender: `signer` is what signerKey would have returned for it, with
 * `unverified` set to the device and nothing to commit.
 */
export class UnverifiedDevice extends PinError {
  constructor(username, device, spki) {
    super(
      `It is from ${username}'s new, unverified device “${shown(device.name)}” (${fp(device.signingKeyId)}), ` +
        `which no device you pinned for ${username} approved. Compare the safety number with ${username} before ` +
        `you trust it.`,
      { username, reason: "unverified" },
    );
    this.device = device;
    this.spki = spki;
    this.signer = { spki, firstContact: false, commit: async () => {}, unverified: device, followed: none() };
  }
}

/** The words for a message from an unverified device: "from bob's new, unverified device “Laptop”". */
export const unverifiedWords = (username, device) =>
  `from ${username}'s new, unverified device “${shown(device.name)}”`;

/** Nothing followed. */
const none = () => ({ rotations: [], links: [], removals: [] });

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
  // IDs the server makes are short (KeyPins.maxIDBytes): a longer one is refused before any statement is built.
  const ids = Array.isArray(body.devices) && Array.isArray(body.history)
    ? [
      ...body.devices.map((d) => d?.id),
      ...body.history.flatMap((e) => [e?.deviceId, e?.vouch?.deviceId]),
      ...(Array.isArray(body.approvers) ? body.approvers.flatMap((a) => [a?.id, a?.endorsement?.deviceId]) : []),
    ]
    : [];
  const longId = ids.some((id) => id != null && utf8Length(String(id)) > MAX_ID_BYTES);
  // Approvers as the SDK decodes them (UserDirectory): any malformed one refuses the whole answer.
  const approversMalformed = body.approvers !== undefined && (!Array.isArray(body.approvers) ||
    body.approvers.length > DIRECTORY_DEVICE_LIMIT || !body.approvers.every(wellFormedApprover));
  if (!Array.isArray(body.devices) || !Array.isArray(body.history) || body.devices.length > DIRECTORY_DEVICE_LIMIT ||
    longId || approversMalformed) {
    throw new PinError(
      `The server's key directory for ${asked} is not one this page accepts (more than ${DIRECTORY_DEVICE_LIMIT} ` +
        `devices, a device ID longer than ${MAX_ID_BYTES} bytes, or malformed).`,
      { username: asked },
    );
  }
  return body;
}

/** An approver entry with every field the API declares, of its type (DirectoryApprover). */
const wellFormedApprover = (a) =>
  typeof a?.id === "string" && typeof a.name === "string" && typeof a.signingKey === "string" &&
  typeof a.signingKeyId === "string" && typeof a.createdAt === "string" && typeof a.endorsement === "object" &&
  a.endorsement !== null && typeof a.endorsement.deviceId === "string" &&
  Number.isSafeInteger(a.endorsement.endorsedAt) && typeof a.endorsement.signature === "string";

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
      // Without a key of its own to compare (a test's identity), as KeyPins without ownKeyID: not checked.
      const differs =
        (own.signingKeyId && signingKeyId !== own.signingKeyId) ||
        (own.encryptionKeyId && encryptionKeyId !== own.encryptionKeyId);
      if (differs) {
        throw new PinError(
          `REFUSED: the server lists this browser's device with key ${fp(signingKeyId)}, but its key ` +
            `is ${fp(own.signingKeyId)}; someone may have replaced this device's key on the server.`,
          { username: dir.username },
        );
      }
      continue;
    }
    if (!(await keysProven(d, dir, signingKey, encryptionKey))) {
      throw new PinError(
        `REFUSED: the server lists ${shown(dir.username)}'s device ${shown(String(d.id))} (key ${fp(signingKeyId)}) ` +
          "with an encryption key that device's signing key never signed; the server may be substituting keys. " +
          `Nothing is sent to ${shown(dir.username)} until it is fixed: a device registered before key proofs ` +
          "were kept gives its proof the next time it is opened (or when it changes its key).",
        { username: dir.username, reason: "unproven" },
      );
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

/** Whether a listed device's signing key chose its encryption key (PROTOCOL §1.3, KeyPins.keysProven): the
 *  same key for both, or its current key's history entry carries the key's own valid signature over its
 *  registration (challenge and account as signed) or its rotation (the key replaced as signed). */
export async function keysProven(device, dir, signingKey, encryptionKey) {
  if (utf8Length(String(device.id)) > MAX_ID_BYTES) return false;
  let entry;
  try {
    entry = (dir.history ?? []).find(
      (e) => String(e.deviceId) === String(device.id) && equalBytes(fromBase64url(String(e.signingKey)), signingKey),
    );
    // The history names the key's encryption key too: listed otherwise, it is refused.
    if (entry?.encryptionKey != null && !equalBytes(fromBase64url(String(entry.encryptionKey)), encryptionKey)) {
      return false;
    }
  } catch {
    return false;
  }
  const proof = entry?.keyProof;
  // One key for both (a CLI device) binds itself; a proof, when listed, must still verify.
  if (equalBytes(signingKey, encryptionKey) && proof == null) return true;
  if (!proof || typeof proof.signature !== "string") return false;
  let message;
  try {
    const registration = typeof proof.challenge === "string" && typeof proof.accountId === "string" &&
      utf8Length(proof.accountId) <= MAX_ID_BYTES;
    const challenge = registration ? fromBase64url(proof.challenge) : null;
    if (proof.statement === "registration" && challenge?.length === 32) {
      message = await registrationMessage(challenge, proof.accountId, signingKey, encryptionKey);
    } else if (proof.statement === "rotation" && typeof proof.previousSigningKey === "string") {
      const previous = fromBase64url(proof.previousSigningKey);
      if (!(await keyIdOf(previous))) return false;
      message = await rotationMessage(String(device.id), previous, signingKey, encryptionKey);
    } else {
      return false;
    }
    return await verifyLowS(signingKey, message, fromBase64url(proof.signature));
  } catch {
    return false;
  }
}

const equalBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const utf8Length = (text) => new TextEncoder().encode(text).length;
/** The longest device or account ID a statement is built over (KeyPins.maxIDBytes). */
const MAX_ID_BYTES = 256;

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


/** A time the server wrote (ISO 8601) in ms, or `fallback` when it wrote none or nothing readable. */
const time = (iso, fallback) => (Number.isFinite(Date.parse(iso)) ? Date.parse(iso) : fallback);

/** The bytes of a key the server sent, or null when they are not base64url. */
function bytesOf(text) {
  try {
    return fromBase64url(String(text));
  } catch {
    return null;
  }
}

/** A key the server sent, with its key ID computed here: null unless it is a P-256 SPKI. */
async function keyOf(text) {
  const spki = bytesOf(text);
  const id = spki && (await keyIdOf(spki));
  return id ? { spki, id } : null;
}

/** How many notices a contact keeps: the newest. */
const NOTICES_KEPT = 20;

/** What is kept of a device's pin: the keys as the directory gave them, their IDs computed here. */
const pinOf = (id, name, signing, encryption) => ({
  id: String(id),
  name: String(name ?? ""),
  signingKeyId: signing.id,
  encryptionKeyId: encryption.id,
  signingKey: base64url(signing.spki),
  encryptionKey: base64url(encryption.spki),
});

const sameDevices = (a, b) => {
  const form = (list) => JSON.stringify(list.map((d) => [d.id, d.name, d.signingKeyId, d.encryptionKeyId]));
  return form(a) === form(b);
};

/** Pins `devices` as confirmed now (KeyPins.pin): keys replaced by this move to `retired` (retired now); the
 *  safety number changed now when the devices did, and a contact marked verified is verified no more. */
function pinned(username, devices, old, now) {
  const retired = [...(old?.retired ?? [])];
  for (const d of old?.devices ?? []) {
    if (!devices.some((n) => n.signingKeyId === d.signingKeyId))
      retired.push({ deviceId: d.id, signingKeyId: d.signingKeyId, signingKey: d.signingKey, retiredAt: now });
  }
  const same = old && sameDevices(old.devices, devices);
  return {
    key: pinKey(username),
    accountId: session.account.id,
    username,
    firstSeen: old?.firstSeen ?? now,
    trustedAt: now,
    devices,
    retired,
    changedAt: !old ? null : same ? (old.changedAt ?? null) : now,
    verifiedAt: same ? (old.verifiedAt ?? null) : null,
    notices: old?.notices ?? [],
    seenAt: old?.seenAt ?? null,
  };
}

/**
 * The rotations from `from`'s key ({signingKeyId, signingKey}) to the key ID `target`, each signed by the key
 * before (KeyPins.rotationChain): `{ retired, newKeys }`, or null when the chain breaks (a missing or bad
 * signature, a key that signed two successors, a history longer than PIN_HISTORY_LIMIT).
 */
async function rotationChain(deviceId, from, target, fullHistory, now) {
  const history = fullHistory.filter((h) => h.deviceId === deviceId);
  // As KeyPins: a device's whole history is counted, and one longer than the limit is not followed.
  if (history.length > PIN_HISTORY_LIMIT) return null;
  const start = await keyOf(from.signingKey);
  if (!start || start.id !== from.signingKeyId) return null;
  // Each signed entry's keys once: the chain below tries every entry at each step.
  const candidates = [];
  for (const h of history) {
    if (!h.rotationSignature || !h.encryptionKey) continue;
    const signing = await keyOf(h.signingKey);
    const encryption = await keyOf(h.encryptionKey);
    const signature = bytesOf(h.rotationSignature);
    if (signing && encryption && signature) candidates.push({ h, signing, encryption, signature });
  }
  let key = start;
  const seen = new Set([key.id]);
  const retired = [];
  const newKeys = [];
  // Every step moves to a key not seen yet, so the chain ends.
  while (key.id !== target) {
    const next = [];
    for (const c of candidates) {
      if (seen.has(c.signing.id)) continue;
      const message = await rotationMessage(deviceId, key.spki, c.signing.spki, c.encryption.spki);
      if (await verifyLowS(key.spki, message, c.signature)) next.push(c);
    }
    // One successor only: a key that signed two was used by two parties; the user decides.
    if (next.length !== 1) return null;
    const [c] = next;
    // Retired no later than the directory says the old key was, than its successor arrived, and than now
    // (KeyPins: min(oldEntry.retiredAt ?? now, next.addedAt, now)).
    const oldEntry = history.find((e) => e.signingKeyId === key.id);
    const retiredAt = Math.min(time(oldEntry?.retiredAt, now), time(c.h.addedAt, now), now);
    retired.push({ deviceId, signingKeyId: key.id, signingKey: base64url(key.spki), retiredAt });
    key = c.signing;
    seen.add(key.id);
    newKeys.push({ signing: c.signing, encryption: c.encryption });
  }
  return { retired, newKeys };
}

/** Follows each pinned device's rotations that the pinned key signed, one after another (PROTOCOL §1):
 *  KeyPins.followRotations. Returns the rotations followed, `{deviceId, name, from, to}`. */
async function followRotations(pin, dir, now) {
  const followed = [];
  for (const [i, d] of pin.devices.entries()) {
    const current = dir.devices.find((c) => c.id === d.id);
    if (!current) continue;
    const signing = await keyOf(current.signingKey);
    const encryption = await keyOf(current.encryptionKey);
    if (!signing || !encryption || signing.id === d.signingKeyId) continue;
    const chain = await rotationChain(d.id, d, signing.id, dir.history, now);
    if (!chain || chain.newKeys.at(-1).encryption.id !== encryption.id) continue;
    pin.devices[i] = pinOf(d.id, current.name, signing, encryption);
    pin.retired = [...(pin.retired ?? []), ...chain.retired];
    followed.push({ deviceId: d.id, name: pin.devices[i].name, from: d.signingKeyId, to: signing.id });
  }
  return followed;
}

/** A vouch may be signed at most this far ahead of this browser's clock (KeyPins.vouchSkew). */
export const VOUCH_SKEW_MS = 300_000;

/** The keys trusted to vouch as `deviceId` of `pin` at `at` (KeyPins.voucherKeys): its pinned key, a key of
 *  it retired by a rotation followed in this same look (`justRetired`) after `at`, and this browser's own key
 *  (`own`) when the device is this one. A key retired at an earlier look never vouches: its holder picks the
 *  vouch's time. */
function voucherKeys(pin, deviceId, at, own, justRetired) {
  const out = [];
  if (own && own.id === deviceId) out.push(own.spki);
  for (const d of pin.devices) if (d.id === deviceId && d.signingKey) out.push(d.signingKey);
  for (const r of justRetired)
    if (r.deviceId === deviceId && at < r.retiredAt && r.signingKey) out.push(r.signingKey);
  return out.map((k) => (typeof k === "string" ? bytesOf(k) : k)).filter(Boolean);
}

/** The key of the approver `deviceId` the directory lists (an authenticator, PROTOCOL §1.2), when its
 *  endorsement verifies under a key voucherKeys trusts for the endorsing device and is not more than
 *  VOUCH_SKEW_MS ahead of `now` (KeyPins.approverKeys). Approvers are never pinned: checked at every look. */
async function approverKeys(pin, dir, deviceId, now, own, justRetired) {
  // An ID that is, or was, a messaging device's is never an approver's (one name, one key).
  const taken = dir.devices.some((d) => String(d.id) === deviceId) || pin.devices.some((d) => d.id === deviceId) ||
    (pin.retired ?? []).some((r) => r.deviceId === deviceId);
  if (taken) return [];
  const approver = (dir.approvers ?? []).find((a) => String(a.id) === deviceId);
  const e = approver?.endorsement;
  const key = approver && (await keyOf(approver.signingKey));
  const signature = e && bytesOf(e.signature);
  if (!key || !signature || !Number.isSafeInteger(e.endorsedAt) || String(e.deviceId) === deviceId) return [];
  const at = e.endorsedAt * 1000;
  if (at > now + VOUCH_SKEW_MS) return [];
  for (const endorser of voucherKeys(pin, String(e.deviceId), at, own, justRetired)) {
    const message = await endorsementMessage({
      username: dir.username,
      endorserDeviceId: String(e.deviceId),
      endorserSigningSpki: endorser,
      approverDeviceId: deviceId,
      approverSigningSpki: key.spki,
      endorsedAt: e.endorsedAt,
    });
    if (await verifyLowS(endorser, message, signature)) return [key.spki];
  }
  return [];
}

/**
 * Devices the directory lists that are not pinned but were vouched for by a trusted voucher (voucherKeys), over
 * the very keys the history names, with a signed rotation chain from those keys to the listed ones
 * (KeyPins.followLinks). Repeats until nothing more follows, so a device linked by a device linked in the same
 * look is followed too. Returns the links followed, `{device, byDeviceId, byName}`.
 */
async function followLinks(pin, dir, own, now, justRetired = []) {
  if (dir.history.length > PIN_HISTORY_LIMIT) return [];
  const isOwn = dir.username === own.username;
  let ownVoucher = null;
  if (isOwn && own.deviceId && own.signingKeyId) {
    const listed = dir.devices.find((d) => d.id === own.deviceId);
    const key = listed && (await keyOf(listed.signingKey));
    if (key?.id === own.signingKeyId) ownVoucher = { id: own.deviceId, spki: key.spki };
  }
  const linked = [];
  let progress = true;
  while (progress) {
    progress = false;
    // A device (or key) once pinned and since removed comes back only when the user trusts it: its old vouch
    // would otherwise let a server put a revoked device back.
    const gone = new Set((pin.retired ?? []).map((r) => r.deviceId));
    const retiredKeys = new Set((pin.retired ?? []).map((r) => r.signingKeyId));
    for (const d of dir.devices) {
      if ((isOwn && d.id === own.deviceId) || pin.devices.some((p) => p.id === d.id) || gone.has(d.id)) continue;
      const signing = await keyOf(d.signingKey);
      const encryption = await keyOf(d.encryptionKey);
      if (!signing || !encryption || retiredKeys.has(signing.id)) continue;
      for (const entry of dir.history) {
        const v = entry.deviceId === d.id ? entry.vouch : null;
        if (!v || String(v.deviceId) === d.id || !entry.encryptionKey || !Number.isSafeInteger(v.vouchedAt)) continue;
        const vouchedSigning = await keyOf(entry.signingKey);
        const vouchedEncryption = await keyOf(entry.encryptionKey);
        const signature = bytesOf(v.signature);
        if (!vouchedSigning || !vouchedEncryption || !signature || retiredKeys.has(vouchedSigning.id)) continue;
        const at = v.vouchedAt * 1000;
        if (at > now + VOUCH_SKEW_MS) continue;
        let vouched = false;
        const vouchers = [
          ...voucherKeys(pin, String(v.deviceId), at, ownVoucher, justRetired),
          ...(await approverKeys(pin, dir, String(v.deviceId), now, ownVoucher, justRetired)),
        ];
        for (const voucher of vouchers) {
          const message = await vouchMessage({
            username: dir.username,
            voucherDeviceId: String(v.deviceId),
            voucherSigningSpki: voucher,
            deviceId: d.id,
            signingSpki: vouchedSigning.spki,
            encryptionSpki: vouchedEncryption.spki,
            vouchedAt: v.vouchedAt,
          });
          if (await verifyLowS(voucher, message, signature)) {
            vouched = true;
            break;
          }
        }
        if (!vouched) continue;
        let retired = [];
        if (vouchedSigning.id !== signing.id) {
          const start = { signingKeyId: vouchedSigning.id, signingKey: entry.signingKey };
          const chain = await rotationChain(d.id, start, signing.id, dir.history, now);
          if (!chain || chain.newKeys.at(-1).encryption.id !== encryption.id) continue;
          retired = chain.retired;
        } else if (vouchedEncryption.id !== encryption.id) {
          continue;
        }
        const device = pinOf(d.id, d.name, signing, encryption);
        pin.devices.push(device);
        pin.retired = [...(pin.retired ?? []), ...retired];
        const by = String(v.deviceId);
        const byName =
          pin.devices.find((p) => p.id === by)?.name ?? dir.devices.find((x) => x.id === by)?.name ??
          dir.approvers?.find((x) => String(x?.id) === by)?.name ?? by;
        linked.push({ device, byDeviceId: by, byName: String(byName) });
        progress = true;
        break;
      }
    }
  }
  if (linked.length) pin.devices.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return linked;
}

/** Devices the directory no longer lists (KeyPins.followRemovals): moved to `retired` and no longer sealed to;
 *  retired when the directory says, but no later than now and no earlier than a moment this browser knows it
 *  was listed (its last trust or followed change): a server cannot void what it signed before that. Returns the
 *  devices removed. */
function followRemovals(pin, dir, own, now) {
  const listed = new Set(dir.devices.map((d) => String(d.id)));
  const gone = pin.devices.filter((d) => !listed.has(d.id) && d.id !== own.deviceId);
  for (const d of gone) {
    const said = dir.history.find((h) => h.deviceId === d.id && h.signingKeyId === d.signingKeyId)?.retiredAt;
    const known = Math.max(pin.changedAt ?? -Infinity, pin.trustedAt ?? -Infinity);
    const retiredAt = Math.min(Math.max(time(said, now), known ?? -Infinity), now);
    pin.retired = [
      ...(pin.retired ?? []),
      { deviceId: d.id, signingKeyId: d.signingKeyId, signingKey: d.signingKey, retiredAt },
    ];
  }
  pin.devices = pin.devices.filter((d) => !gone.includes(d));
  return gone;
}

/**
 * Follows what a pinned contact's devices may do without the user (KeyPins.follow): rotations, links, then
 * removals; a verified contact follows nothing. When something was followed, the safety number changed now
 * (`changedAt`) and each change is kept as a notice. Returns `{ rotations, links, removals }`; the caller saves.
 */
async function follow(pin, dir, own, now) {
  if (!pin || pin.verifiedAt) return none();
  const retiredBefore = (pin.retired ?? []).length;
  const rotations = await followRotations(pin, dir, now);
  // Keys retired by the rotations just followed may still vouch for what they signed before them: an honest
  // link made before a rotation this browser only now learns of.
  const justRetired = (pin.retired ?? []).slice(retiredBefore);
  const links = await followLinks(pin, dir, own, now, justRetired);
  // As KeyPins: a change followed in this look is the latest moment the devices are known to be listed.
  if (rotations.length || links.length) pin.changedAt = now;
  const followed = { rotations, links, removals: followRemovals(pin, dir, own, now) };
  const notices = [
    ...followed.rotations.map((r) => ({ at: now, kind: "rotated", deviceId: r.deviceId, name: r.name })),
    ...followed.links.map((l) => ({
      at: now,
      kind: "linked",
      deviceId: l.device.id,
      name: l.device.name,
      by: l.byName,
    })),
    ...followed.removals.map((d) => ({ at: now, kind: "removed", deviceId: d.id, name: d.name })),
  ];
  if (notices.length) {
    pin.changedAt = now;
    pin.notices = [...(pin.notices ?? []), ...notices].slice(-NOTICES_KEPT);
  }
  return followed;
}

const anything = (followed) => followed.rotations.length + followed.links.length + followed.removals.length > 0;

/** The pins of `dir.username` against one directory answer, once what may be followed is followed (and
 *  saved); the caller holds that user's lock. `pin` is null for a user never pinned. */
async function compared(dir, own, now) {
  const devices = await devicesOf(dir, own);
  const pin = (await load(dir.username)) ?? null;
  const followed = await follow(pin, dir, own, now);
  if (anything(followed)) await save(pin);
  return { pin, devices, changes: pin ? changes(pin.devices, devices) : [], followed };
}

/** What sending to `dir.username` would meet, without sending: `{ pin, devices, changes, followed }`, where a
 *  non-empty `changes` blocks sending until the user trusts. Pins nothing new. */
export function pinState(dir, own, now = Date.now()) {
  return locked(dir.username, () => compared(dir, own, now));
}

/**
 * The devices to seal to for `username`. Throws PinError when they changed since they were pinned, other
 * than by what may be followed. A first contact is pinned by `commit`, once the message is sent, as the CLI
 * does: a send that fails pins nothing. `followed` says what was followed now ({ rotations, links, removals }).
 */
export function checkBeforeSending(username, own, now = Date.now()) {
  return locked(normalise(username) ?? String(username), async () => {
    const dir = await directory(username);
    const { pin, devices: current, changes: differ, followed } = await compared(dir, own, now);
    if (!pin) {
      const first = pinned(dir.username, current, null, now);
      return {
        directory: dir,
        devices: current,
        firstContact: true,
        followed,
        commit: () => locked(dir.username, async () => (await load(dir.username)) || save(first)),
      };
    }
    if (differ.length) {
      const whose = dir.username === own.username ? "Your own account's other devices" : `${dir.username}'s devices`;
      const verified = pin.verifiedAt
        ? ` You marked ${dir.username} verified, so every change of their devices waits for you.`
        : "";
      const error = new PinError(`${whose} changed since you pinned them: ${differ.join("; ")}. Compare the safety ` +
        `number before you trust them.${verified}`, {
        username: dir.username,
        changes: differ,
        reason: "changed",
      });
      // What was followed all the same (kept): a link followed beside a device added that waits.
      error.followed = followed;
      throw error;
    }
    return { directory: dir, devices: current, firstContact: false, followed, commit: async () => {} };
  });
}

/** Pins exactly the devices of `dir`, the directory answer whose safety number the user compared. */
export async function trust(dir, own, now = Date.now()) {
  const devices = await devicesOf(dir, own);
  await locked(dir.username, async () => save(pinned(dir.username, devices, await load(dir.username), now)));
}

/**
 * This browser approved `device` (a DirectoryDevice of its own account) after the person compared its link
 * code: its own pins for the account take it at once, so nothing this browser does later (a change of its own
 * message key) makes it ask about a device it approved itself. Nothing happens while nothing is pinned for the
 * account (the first look pins it with the rest) or when the device is pinned already.
 */
export function pinApproved(username, device, now = Date.now()) {
  return locked(username, async () => {
    const pin = await load(username);
    if (!pin || pin.devices.some((d) => d.id === String(device.id))) return false;
    const signingKeyId = await keyIdOf(fromBase64url(String(device.signingKey)));
    const encryptionKeyId = await keyIdOf(fromBase64url(String(device.encryptionKey)));
    if (!signingKeyId || !encryptionKeyId) return false;
    const added = {
      id: String(device.id),
      name: String(device.name ?? ""),
      signingKeyId,
      encryptionKeyId,
      signingKey: device.signingKey,
      encryptionKey: device.encryptionKey,
    };
    pin.devices = [...pin.devices, added].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    pin.changedAt = now;
    await save(pin);
    return true;
  });
}

/** Marks `username` verified (Signal's "Mark as verified": the user compared the safety number of the devices
 *  pinned now) or not; from then on every change of their devices waits for "Trust". False when nothing is
 *  pinned for them. `compared`: the devices whose number was shown; marking is refused if the pins moved on
 *  since (another tab or a message opening followed a change), so the mark covers only what was compared. */
export function setVerified(username, verified, now = Date.now(), { compared } = {}) {
  return locked(username, async () => {
    const pin = await load(username);
    if (!pin) return false;
    if (verified && compared && !sameDevices(pin.devices, compared)) {
      throw new PinError(
        `${username}'s devices changed since this safety number was shown. Compare the new number, then mark ` +
          `them verified.`,
        { username },
      );
    }
    pin.verifiedAt = verified ? now : null;
    await save(pin);
    return true;
  });
}

/** The notices of `pin` not seen yet, oldest first. */
export const unseenNotices = (pin) => (pin?.notices ?? []).filter((n) => !(n.at <= (pin.seenAt ?? -Infinity)));

/** Marks every notice of `username` seen (up to `now`). */
export function markNoticesSeen(username, now = Date.now()) {
  return locked(username, async () => {
    const pin = await load(username);
    if (!pin) return;
    pin.seenAt = Math.max(now, ...(pin.notices ?? []).map((n) => n.at));
    await save(pin);
  });
}

/** A notice in words: "bob linked a new device, “Laptop”, approved by “Phone”". `self` for the own account. */
export function noticeWords(username, notice, self = false) {
  const who = self ? "Your account" : username;
  const name = `“${shown(notice.name || notice.deviceId)}”`;
  if (notice.kind === "linked") return `${who} linked a new device, ${name}, approved by “${shown(notice.by)}”.`;
  if (notice.kind === "rotated")
    return `${self ? "Your device" : `${username}'s device`} ${name} changed its message key (signed by its old key).`;
  if (notice.kind === "removed") return `${self ? "Your device" : `${username}'s device`} ${name} was removed.`;
  return `${self ? "Your" : `${username}'s`} safety number changed.`;
}

/** What a message's signer lookup found in the pins, the directory given (KeyPins.signer after follow). */
async function signerIn(pin, dir, name, keyIdHex, signedAt, own) {
  const retiredWord = `It is signed by ${name}'s key ${fp(keyIdHex)}, which was retired before the message was ` +
    `signed.`;
  const device = pin.devices.find((d) => d.signingKeyId === keyIdHex);
  if (device) {
    // The server may say the key was retired (a revocation not confirmed here): a message signed after that
    // is refused; one signed before still verifies.
    const entry = dir?.history.find((h) => h.deviceId === device.id && h.signingKeyId === keyIdHex);
    const retiredAt = time(entry?.retiredAt);
    if (Number.isFinite(retiredAt) && retiredAt <= signedAt)
      throw new PinError(retiredWord, { username: name, reason: "retired" });
    return { spki: fromBase64url(device.signingKey), deviceId: device.id };
  }
  const retired = (pin.retired ?? []).findLast((r) => r.signingKeyId === keyIdHex);
  if (retired) {
    if (signedAt >= retired.retiredAt) throw new PinError(retiredWord, { username: name, reason: "retired" });
    return { spki: fromBase64url(retired.signingKey), deviceId: retired.deviceId, retiredAt: retired.retiredAt };
  }
  // A device the directory lists for the sender, current key and all, that no pinned device approved.
  for (const d of dir?.devices ?? []) {
    if (name === own.username && d.id === own.deviceId) continue;
    const signing = await keyOf(d.signingKey);
    const encryption = signing?.id === keyIdHex ? await keyOf(d.encryptionKey) : null;
    if (encryption) throw new UnverifiedDevice(name, pinOf(d.id, d.name, signing, encryption), signing.spki);
  }
  const known = pin.devices.map((d) => fp(d.signingKeyId)).join(", ") || "none";
  throw new PinError(
    `It claims to be from ${name}, but it is signed by key ${fp(keyIdHex)}, which is not a key you pinned ` +
      `for ${name} (pinned: ${known}).`,
    { username: name, reason: "unpinned" },
  );
}

/**
 * The SPKI a message from `sender`, signed by key `keyIdHex` at `signedAt` (ms), verifies under: a key
 * pinned for the sender, current or retired after `signedAt`. A first contact takes the sender's devices
 * from the directory (asked by the sender's name); they are pinned by `commit`, which the caller runs
 * only once the signature holds; for a contact pinned before, what may be followed is followed (and saved).
 * `directories` (a Map, optional) shares one answer of the directory per sender across a batch of messages.
 * Returns `{ spki, firstContact, commit, followed }`. Throws UnverifiedDevice for the current key of a listed
 * device no pinned device approved (its `signer` lets the caller check the signature and say so), and
 * PinError for any other key.
 */
export function signerKey(sender, keyIdHex, signedAt, own, now = Date.now(), { directories } = {}) {
  const name = normalise(sender) ?? String(sender);
  const nothing = async () => {};
  if (name === own.username && keyIdHex === own.signingKeyId)
    return { spki: own.signingSpki, firstContact: false, commit: nothing, followed: none() };
  const ownRetired = name === own.username ? own.previous?.find((p) => p.keyId === keyIdHex) : null;
  if (ownRetired) {
    if (signedAt >= ownRetired.retiredAt)
      throw new PinError(
        `It is signed by this browser's key ${fp(keyIdHex)}, which was replaced before the message was signed.`,
        { username: name, reason: "retired" },
      );
    return { spki: ownRetired.spki, firstContact: false, commit: nothing, followed: none() };
  }
  // In a batch, a sender whose pins were read (and followed) once is looked up in that reading: no lock, no
  // storage read per message.
  const read = directories ? batchOf(directories, name).read : null;
  if (read) {
    return signerIn(read.pin, read.dir, name, keyIdHex, signedAt, own).then((found) => ({
      ...found,
      firstContact: false,
      commit: nothing,
      followed: none(),
    }));
  }
  return locked(name, async () => {
    let pin = await load(name);
    let dir = null;
    try {
      // A batch (a conversation opening its messages) asks the directory once per sender: `directories`.
      if (directories && !directories.has(name)) directories.set(name, directory(name));
      dir = await (directories ? directories.get(name) : directory(name));
    } catch (error) {
      if (error instanceof PinError) throw error;
      // Offline: only what is pinned counts.
    }
    let firstContact = false;
    let followed = none();
    // In a batch, each sender's directory is read once, so what it says is checked once: its devices for a
    // first contact, and what the pins follow (saved, and reported with the first message that saw it).
    const seen = directories ? batchOf(directories, name) : {};
    if (dir) {
      if (!pin) {
        seen.devices ??= await devicesOf(dir, own);
        pin = pinned(name, structuredClone(seen.devices), null, now);
        firstContact = true;
      } else if (!seen.followed) {
        followed = await follow(pin, dir, own, now);
        if (anything(followed)) await save(pin);
        seen.followed = true;
      }
    }
    if (!pin)
      throw new PinError(`Nothing is pinned for ${name} in this browser and the server could not be asked.`, {
        username: name,
        reason: "unpinned",
      });
    if (!firstContact && directories) seen.read = { pin, dir };
    const found = await signerIn(pin, dir, name, keyIdHex, signedAt, own);
    const commit = firstContact ? () => locked(name, async () => (await load(name)) || save(pin)) : nothing;
    return { ...found, firstContact, commit, followed };
  });
}

/** Lets a batch's next lookups read each sender's pins again (a chunk of a long opening done: a trust or a
 *  change another tab made meanwhile is then seen); the directories' answers stay. */
export function rereadPins(directories) {
  for (const seen of batches.get(directories)?.values() ?? []) delete seen.read;
}

/** What a batch (its `directories` map) checked of one sender's directory already. */
const batches = new WeakMap();
function batchOf(directories, name) {
  if (!batches.has(directories)) batches.set(directories, new Map());
  const batch = batches.get(directories);
  if (!batch.has(name)) batch.set(name, {});
  return batch.get(name);
}

/** Every contact pinned in this browser for the signed-in account. */
export const contacts = () => allFor("pins", session.account.id);

/** The pins of one user in this browser, or undefined. */
export const pinOfUser = (username) => load(username);
