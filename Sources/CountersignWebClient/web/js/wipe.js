// Deleting what this browser keeps for an account's device: its keys, its stored envelopes and pins, and
// the account's key for files. Done when the server says the device was revoked (a remote wipe) and when
// the key gate's failed-attempts limit is reached (docs/SPEC.md §14.5, which also keeps a note for the
// self-revocation; the gate then forgets the authenticator too, authenticator/runtime.js).
import { fileKeys } from "./file-keys.js";
import { lock } from "./gate-keys.js";
import { keystore } from "./keystore.js";
import { session } from "./session.js";

/** accountId → the session token in which a remote wipe happened: that session sets up no new device. */
const wipedIn = new Map();

/** Whether this signed-in session saw the account's device revoked from elsewhere: a new device for it
 *  takes a new sign-in (whoever holds this session may be who the device was revoked against). */
export const revokedInThisSession = (accountId) => session.token !== null && wipedIn.get(accountId) === session.token;

/**
 * Deletes the account's device data here. `note` ({ deviceId, revocationToken }) takes the device
 * record's place in the same transaction; `remote`: the server revoked the device.
 */
export async function wipeDevice(accountId, { note = null, remote = false } = {}) {
  lock(accountId);
  if (remote) wipedIn.set(accountId, session.token);
  const kept = note && { deviceId: note.deviceId, revocationToken: note.revocationToken, wiped: true };
  await keystore.remove(accountId, kept);
  await fileKeys.remove(accountId);
}
