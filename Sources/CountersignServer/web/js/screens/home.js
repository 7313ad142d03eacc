// Signed in: who, this browser's device, and sign out. The screens for messages, files, approvals and
// settings hang off here.
import { call, describe } from "../api.js";
import { hex, sha256 } from "../bytes.js";
import { spki } from "../device-keys.js";
import { ensureDevice, forgetDevice } from "../device.js";
import { el, replace } from "../dom.js";
import { session } from "../session.js";

/** docs/SPEC.md §2.4: SHA-256 of the SPKI, first 16 bytes, in four groups of 8 hex digits. */
async function fingerprint(publicKey) {
  const id = hex((await sha256(await spki(publicKey))).subarray(0, 16));
  // A zero-width space after each colon: a narrow screen breaks the line between groups, never inside one.
  return id.match(/.{8}/g).join(":\u200b");
}

export function homeScreen(app, { onSignedOut }) {
  const account = session.account;
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const deviceInfo = el("dl", { class: "facts", "aria-label": "This browser's device" });
  const signOut = el("button", { type: "button" }, "Sign out");
  const remove = el("button", { type: "button", class: "danger" }, "Remove this browser's keys and messages");
  let device = null;

  async function endSession() {
    try {
      await call("DELETE", "/v1/sessions/current", { token: session.token });
    } catch {
      // Signed out here either way; the server's session expires by itself.
    }
    session.clear();
  }
  signOut.addEventListener("click", async () => {
    await endSession();
    onSignedOut("Signed out.");
  });
  remove.addEventListener("click", async () => {
    alert.textContent = "";
    try {
      // Revoked on the server first, so no copy of the keys can be used; then forgotten here.
      if (device) await call("DELETE", `/v1/devices/${encodeURIComponent(device.record.deviceId)}`, { token: session.token });
      await forgetDevice(account.id);
      await endSession();
      onSignedOut("Signed out. This browser's keys and messages were removed.");
    } catch (error) {
      alert.textContent = describe(error);
    }
  });

  replace(
    app,
    el(
      "section",
      { "aria-label": "Account", class: "card" },
      el("h1", {}, `Signed in as ${account.username}`),
      el("p", {}, `${account.name} ${account.lastname}`),
      deviceInfo,
      status,
      el("div", { class: "actions" }, signOut, remove),
      alert,
    ),
  );

  (async () => {
    try {
      device = await ensureDevice(session.token, account, (step) => (status.textContent = step));
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
    }
  })();
}
