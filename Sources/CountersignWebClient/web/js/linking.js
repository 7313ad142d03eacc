// Linking a new device of the account (PROTOCOL §1, as `countersign device link` and `device approve` do it):
// a new device shows a link code made from both of its keys; a device of the account that a person already
// uses lists the devices added after it that no device approved yet, shows each one's code beside "Is this
// your new device?", and on "Yes" signs a vouch for the keys the directory lists (DeviceProof.vouchMessage).
// Contacts who pinned the approving device then follow the new one without asking (pins.js). The codes are
// computed here from the keys, never taken from the server: a server that swapped a key changes the code.
import { base64url, fromBase64url, groupedKeyId } from "./bytes.js";
import { endorsementMessage, keyIdOf, linkCode, signLowS, spki, vouchMessage } from "./device-keys.js";
import { directory, normalise, pinApproved } from "./pins.js";
import { fingerprint as fp } from "./rules.js";
import { endorseApprover, vouchDevice } from "./server/devices.js";
import { session } from "./session.js";

/** The text a QR code carries for a link code, as the CLI shows it. */
export const linkUri = (deviceId, code) =>
  `countersign://link?device=${encodeURIComponent(deviceId)}&code=${code.replaceAll(" ", "")}`;

const vouchOf = (dir, deviceId) => dir.history.find((h) => h.deviceId === deviceId && h.vouch)?.vouch ?? null;
const created = (d) => Date.parse(d.createdAt);

/**
 * The account's directory and this browser's device as it lists it, checked against the keys this browser
 * holds (`record`): refused when the server lists this device with other keys.
 */
export async function ownListing(record) {
  const dir = await directory(session.account.username);
  const me = dir.devices.find((d) => d.id === record.deviceId);
  if (!me) throw new Error("The server does not list this browser as an active device of your account.");
  const held = await keyIdOf(await spki(record.signing.publicKey));
  const listed = await keyIdOf(fromBase64url(String(me.signingKey)));
  if (listed !== held)
    throw new Error(
      `REFUSED: the server lists this browser's device with key ${fp(listed)}, but its key is ${fp(held)}; ` +
        `someone may have replaced this device's key on the server.`,
    );
  return { dir, me };
}

/**
 * Whether this browser waits to be linked: `{ state, code, by }` where `state` is "linked" (approved by the
 * device named `by`), "first" (the oldest active device of the account: nobody can approve it, and nobody
 * needs to) or "waiting" (show `code`, the link code of the keys this browser holds).
 */
export async function linkState(record) {
  const { dir, me } = await ownListing(record);
  const code = await linkCode(await spki(record.signing.publicKey), await spki(record.encryption.publicKey));
  const vouch = vouchOf(dir, me.id);
  if (vouch) {
    const by = dir.devices.find((d) => d.id === vouch.deviceId)?.name ??
      dir.approvers?.find((a) => a.id === vouch.deviceId)?.name ?? String(vouch.deviceId);
    return { state: "linked", code, by: String(by) };
  }
  const older = dir.devices.some((d) => d.id !== me.id && created(d) < created(me));
  return { state: older ? "waiting" : "first", code, deviceId: me.id };
}

/**
 * The devices waiting to be linked as this device sees them (CountersignClient.devicesAwaitingLink): active,
 * not this one, added after it, and with no vouch on any of their keys; each with its link code and
 * fingerprint computed here (`code`, `fingerprint`), or null for a key that is not P-256 (never approvable).
 */
export async function awaitingLink(record) {
  const { dir, me } = await ownListing(record);
  const vouched = new Set(dir.history.filter((h) => h.vouch).map((h) => h.deviceId));
  const out = [];
  for (const d of dir.devices) {
    if (d.id === me.id || !(created(d) > created(me)) || vouched.has(d.id)) continue;
    const keys = await listedKeys(d);
    if (keys) out.push({ device: d, ...keys });
  }
  return out;
}

/** A listed device's signing key ID, fingerprint and link code, computed here from both its keys; null when
 *  either is not a P-256 SPKI (never approvable). */
async function listedKeys(d) {
  let signing;
  let encryption;
  try {
    signing = fromBase64url(String(d.signingKey));
    encryption = fromBase64url(String(d.encryptionKey));
  } catch {
    return null;
  }
  const keyId = await keyIdOf(signing);
  if (!keyId || !(await keyIdOf(encryption))) return null;
  return { keyId, fingerprint: groupedKeyId(keyId), code: await linkCode(signing, encryption) };
}

/**
 * Approves `waiting` (one of awaitingLink's): this device (`record`, its private signing key usable) vouches,
 * now, for the device's keys as the directory listed them, over its device session.
 */
export async function approve(record, waiting, now = Date.now()) {
  if (!record.signing.privateKey) throw new Error("Unlock this browser's keys to approve a device.");
  if (!session.deviceToken) throw new Error("This browser is not a device yet: wait for “Device ready”.");
  const d = waiting.device;
  const vouchedAt = Math.floor(now / 1000);
  const message = await vouchMessage({
    username: normalise(session.account.username) ?? String(session.account.username),
    voucherDeviceId: record.deviceId,
    voucherSigningSpki: await spki(record.signing.publicKey),
    deviceId: d.id,
    signingSpki: fromBase64url(String(d.signingKey)),
    encryptionSpki: fromBase64url(String(d.encryptionKey)),
    vouchedAt,
  });
  const signature = base64url(await signLowS(record.signing.privateKey, message));
  const approved = await vouchDevice(d.id, { signingKeyId: waiting.keyId, vouchedAt, signature }, session.deviceToken);
  // What this browser approved is its own account's device from now on, whatever its own key does later.
  await pinApproved(normalise(session.account.username) ?? String(session.account.username), d, now);
  return approved;
}

// ---- The paired authenticator as an approver (PROTOCOL §1.2): this device endorses its key, after the person
// compared the code the authenticator shows (`countersign authenticator status`) with the one computed here.

/**
 * The account's authenticators this device may endorse (`devices`, GET /v1/devices): active, not endorsed, added
 * after this device (`record`), and not this browser's own authenticator (`ownAuthenticatorId`: this browser
 * approves as itself); each with its code and fingerprint computed here from the keys listed.
 */
export async function awaitingEndorsement(record, devices, ownAuthenticatorId = null) {
  const me = devices.find((d) => d.id === record.deviceId);
  if (!me) return [];
  const out = [];
  for (const d of devices) {
    if (d.kind !== "authenticator" || d.revokedAt || d.endorsement || d.id === ownAuthenticatorId) continue;
    if (!(created(d) > created(me))) continue;
    const keys = await listedKeys(d);
    if (keys) out.push({ device: d, ...keys });
  }
  return out;
}

/** Endorses `waiting` (one of awaitingEndorsement's) as an approver: this device signs over its key, now. */
export async function endorse(record, waiting, now = Date.now()) {
  if (!record.signing.privateKey) throw new Error("Unlock this browser's keys to let an authenticator approve.");
  if (!session.deviceToken) throw new Error("This browser is not a device yet: wait for “Device ready”.");
  const endorsedAt = Math.floor(now / 1000);
  const message = await endorsementMessage({
    username: normalise(session.account.username) ?? String(session.account.username),
    endorserDeviceId: record.deviceId,
    endorserSigningSpki: await spki(record.signing.publicKey),
    approverDeviceId: waiting.device.id,
    approverSigningSpki: fromBase64url(String(waiting.device.signingKey)),
    endorsedAt,
  });
  const signature = base64url(await signLowS(record.signing.privateKey, message));
  const request = { signingKeyId: waiting.keyId, endorsedAt, signature };
  return endorseApprover(waiting.device.id, request, session.deviceToken);
}
