// Signed in: who, this browser's device, and sign out. The screens for messages, files, approvals and
// settings hang off here.
import { call, describe } from "../api.js";
import { groupedKeyId, hex, sha256 } from "../bytes.js";
import { spki } from "../device-keys.js";
import { ensureDevice, removeDevice } from "../device.js";
import { el, replace } from "../dom.js";
import { withReauth } from "../reauth.js";
import { session } from "../session.js";

/** docs/SPEC.md §2.4: SHA-256 of the SPKI, first 16 bytes, in four groups of 8 hex digits. */
async function fingerprint(publicKey) {
  return groupedKeyId(hex((await sha256(await spki(publicKey))).subarray(0, 16)));
}

export function homeScreen(app, { onSignedOut, onSettings, onFiles }) {
  const account = session.account;
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const deviceInfo = el("dl", { class: "facts", "aria-label": "This browser's device" });
  const signOut = el("button", { type: "button" }, "Sign out");
  const settings = el("button", { type: "button", on: { click: onSettings } }, "Settings");
  const files = el("button", { type: "button", on: { click: onFiles } }, "Files");
  const remove = el("button", { type: "button", class: "danger", disabled: true }, "Remove this browser's keys and messages");
  // Revoking a device needs a recent sign-in: asked for here when the server says so.
  const slot = el("div");
  async function endSession() {
    try {
      await call("DELETE", "/v1/sessions/current", { token: session.token });
    } catch {
      // Signed out here either way; the server's session expires by itself.
    }
    session.clear();
  }
  async function removeAndSignOut() {
    alert.textContent = "";
    try {
      await withReauth(slot, () => removeDevice(session.token, account.id));
    } catch (error) {
      alert.textContent = describe(error);
      return;
    }
    await endSession();
    onSignedOut("Signed out. This browser's keys and messages were removed.");
  }
  signOut.addEventListener("click", async () => {
    await endSession();
    onSignedOut("Signed out.");
  });
  remove.addEventListener("click", removeAndSignOut);
  replace(
    app,
    el(
      "section",
      { "aria-label": "Account", class: "card" },
      el("h1", {}, `Signed in as ${account.username}`),
      el("p", {}, `${account.name} ${account.lastname}`),
      deviceInfo,
      status,
      el("div", { class: "actions" }, files, settings, signOut, remove),
      slot,
      alert,
    ),
  );

  (async () => {
    try {
      const device = await ensureDevice(session.token, account, (step) => (status.textContent = step));
      session.setDevice(device.deviceSession);
      replace(
        deviceInfo,
        el("dt", {}, "This browser"),
        el("dd", {}, device.deviceSession.device.name),
        el("dt", {}, "Key fingerprint"),
        el("dd", { class: "mono", "data-testid": "fingerprint" }, await fingerprint(device.record.signing.publicKey)),
      );
      status.textContent = status.textContent ? `${status.textContent}. Device ready.` : "Device ready.";
    } catch (error) {
      alert.textContent = `This browser could not become a device: ${describe(error)}`;
    } finally {
      remove.disabled = false;
    }
  })();
}
