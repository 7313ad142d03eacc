// Deleting what this browser keeps for an account's device: its keys, its stored envelopes and pins, and
// the account's key for files. Done when the server says the device was revoked (a remote wipe) and when
// the key gate's failed-attempts limit is reached (docs/SPEC.md §14.5, which also unpairs the authenticator
// and keeps a note for the self-revocation).
import { fileKeys } from "./file-keys.js";
import { lock } from "./gate-keys.js";
import { keystore, run } from "./keystore.js";
import { session } from "./session.js";

/** Words for a device whose data here was deleted. */
export const WIPED_WORDS = "This browser deleted its keys and messages for the account.";

/** accountId → the session token in which a remote wipe happened: that session sets up no new device. */
const wipedIn = new Map();

/** Whether this signed-in session saw the account's device revoked from elsewhere: a new device for it
 *  takes a new sign-in (whoever holds this session may be who the device was revoked against). */
export const revokedInThisSession = (accountId) => session.token !== null && wipedIn.get(accountId) === session.token;

/**
 * Deletes the account's device data here. `note` ({ deviceId, revocationToken }) takes the device
 * record's place in the same transaction; `authenticator`: this browser's authenticator for the account
 * goes too (unpaired on the server when it answers, deleted here whatever it says); `remote`: the server
 * revoked the device.
 */
export async function wipeDevice(accountId, { note = null, authenticator = false, remote = false } = {}) {
  lock(accountId);
  if (remote) wipedIn.set(accountId, session.token);
  await keystore.remove(accountId, note && { deviceId: note.deviceId, revocationToken: note.revocationToken, wiped: true });
  await fileKeys.remove(accountId);
  if (!authenticator) return;
  const module = await import("./authenticator.js");
  try {
    await module.unpair(accountId);
  } catch {
    module.stopAuthenticator();
    await run("authenticators", "readwrite", (store) => store.delete(accountId));
  }
}
