// This browser as the signed-in account's device, wherever the page was opened: its keys made or found
// (and registered), a device session opened, and the push channel started. The home screen does it after a
// sign-in; a reload straight into a screen that needs it (#/messages/bob) does it there.
import { ensureDevice } from "../device.js";
import { pushState, startInbox } from "../inbox.js";
import { session } from "../session.js";
import { gateBeforeDevice } from "./gate.js";

/**
 * Makes the browser a device of the signed-in account: the key gate's prompt (when it must open) in
 * `slot`, each step given to `report`. Resolves with ensureDevice's { record, deviceSession, created }, or
 * null when the page signed out (or in as someone else) meanwhile.
 */
export async function deviceReady(slot, report = () => {}) {
  const account = session.account;
  const device = (await gateBeforeDevice(slot)) ?? (await ensureDevice(session.token, account, report));
  if (session.account?.id !== account.id) return null;
  session.setDevice(device.deviceSession);
  // Said once more at the first send, and only when this visit made the keys (for this account).
  if (device.created) session.keypairCreated = account.id;
  if (pushState().state === "closed") startInbox(account.id);
  return device;
}
