// Settings (LockWhisper's re-authentication interval, cryptology-project's devices and keys): the
// interval, this account's devices (rename, revoke), its passkeys, the password, and the audit log.
import { describe } from "../api.js";
import { groupedKeyId } from "../bytes.js";
import { nameElement, visibleText } from "../display-name.js";
import { backButton, el, field, replace, showCard } from "../dom.js";
import { rotateDeviceKeys } from "../device.js";
import { withReauth } from "./reauth.js";
import { REAUTH_CHOICES } from "../rules.js";
import { passwordChanged } from "../gate-setup.js";
import { authenticatorSettings } from "./approvals.js";
import { passkeySection } from "./passkeys.js";
import { gateSection, unlockedRecord } from "./gate.js";
import { audit, changePassword, updateSettings } from "../server/accounts.js";
import { listDevices, renameDevice, revokeDevice } from "../server/devices.js";
import { session } from "../session.js";
import { twoFactorSection } from "./two-factor.js";


const when = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

export function settingsScreen(app, { onBack }) {
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const slot = el("div");
  const guarded = async (action, done) => {
    alert.textContent = "";
    status.textContent = "";
    try {
      await withReauth(slot, action);
      status.textContent = done;
    } catch (error) {
      alert.textContent = describe(error);
    }
  };

  // Re-authentication interval
  const current = session.account.settings?.reauthIntervalMinutes ?? 0;
  const group = el(
    "fieldset",
    {},
    el("legend", {}, "Re-authentication Interval"),
    ...REAUTH_CHOICES.map(([minutes, label]) => {
      const id = `interval-${minutes}`;
      return el(
        "div",
        { class: "choice" },
        el("input", { type: "radio", name: "interval", id, value: minutes, checked: minutes === current }),
        el("label", { for: id }, label),
      );
    }),
  );
  const intervalForm = el("form", {}, group, el("button", { type: "submit" }, "Save interval"));
  intervalForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const minutes = Number(intervalForm.querySelector("input[name=interval]:checked")?.value ?? current);
    guarded(async () => {
      // The server answers the settings it now keeps (a bare Settings).
      session.account.settings = await updateSettings({ reauthIntervalMinutes: minutes });
    }, "Re-authentication interval saved.");
  });

  // Devices
  const deviceList = el("ul", { class: "list", "aria-label": "Devices" });
  async function loadDevices() {
    const body = await listDevices();
    const mine = session.deviceId;
    replace(
      deviceList,
      body.devices
        .filter((d) => !d.revokedAt)
        .map((d) => {
          // The name as shown: hidden and direction-changing characters written out (display-name.js).
          const label = visibleText(d.name);
          const rename = el("button", { type: "button", "aria-label": `Rename ${label}` }, "Rename");
          // This browser's own device is removed from the home screen, keys and all.
          const revoke = d.id === mine
            ? null
            : el("button", { type: "button", class: "danger", "aria-label": `Revoke ${label}` }, "Revoke");
          const item = el(
            "li",
            {},
            el("strong", {}, nameElement(d.name)),
            d.id === mine ? el("span", { class: "badge" }, "This browser") : null,
            // An authenticator approves sign-ins and holds no messages (PROTOCOL §3).
            el(
              "div",
              { class: "muted" },
              d.kind === "authenticator" ? "Authenticator: approves sign-ins" : "Messaging device",
            ),
            el("div", { class: "mono" }, groupedKeyId(d.signingKeyId)),
            el("div", { class: "muted" }, `Last seen ${when(d.lastSeenAt)}`),
            el("div", { class: "actions" }, rename, revoke),
          );
          rename.addEventListener("click", () => {
            const name = field("New name", { value: d.name, maxlength: 64 });
            const form = el("form", {}, name.row, el("button", { type: "submit" }, "Save name"));
            form.addEventListener("submit", (event) => {
              event.preventDefault();
              guarded(async () => {
                await renameDevice(d.id, { name: name.input.value });
                await loadDevices();
              }, "Device renamed.");
            });
            item.append(form);
            name.input.focus();
          });
          revoke?.addEventListener("click", () =>
            guarded(async () => {
              await revokeDevice(d.id);
              await loadDevices();
            }, `${label} revoked.`),
          );
          return item;
        }),
    );
  }

  // Password
  const currentPassword = field("Current password", { type: "password", autocomplete: "current-password" });
  const newPassword = field("New password", { type: "password", autocomplete: "new-password", minlength: 8 });
  const passwordForm = el(
    "form",
    {},
    currentPassword.row,
    newPassword.row,
    el("button", { type: "submit" }, "Change password"),
  );
  passwordForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (newPassword.input.value.length < 8) {
      alert.textContent = "The new password must be at least 8 characters.";
      return;
    }
    let keysFollow = true;
    guarded(async () => {
      const passwords = [currentPassword.input.value, newPassword.input.value];
      await changePassword({ currentPassword: passwords[0], newPassword: passwords[1] });
      currentPassword.input.value = "";
      newPassword.input.value = "";
      // The key gate's password, when it has one, follows (SPEC §14.4).
      keysFollow = await passwordChanged(session.account.id, ...passwords);
    }, "Password changed. Your other sessions were signed out.").then(() => {
      if (!keysFollow) status.textContent += " The key gate here still opens with the password it was locked with.";
    });
  });

  // Message key (cryptology-project's "change key"): this browser's device keys, rotated.
  const rotate = el("button", { type: "button" }, "Change message key");
  rotate.addEventListener("click", () =>
    guarded(async () => {
      if (!session.deviceToken)
        throw new Error("This browser is not a device yet: wait for “Device ready” on the home screen.");
      await unlockedRecord(slot, "Unlock them to change the message key.");
      await rotateDeviceKeys(session.deviceToken, session.account.id);
      await loadDevices();
    }, "Message key changed. Your contacts follow the change: the old key signed for the new one."),
  );

  // Audit log
  const headings = ["When", "What", "Outcome", "From"].map((h) => el("th", { scope: "col" }, h));
  const auditHead = el("thead", {}, el("tr", {}, headings));
  const auditTable = el("table", { class: "audit", "aria-label": "Audit log" }, auditHead);
  const auditBody = el("tbody");
  auditTable.append(auditBody);
  const more = el("button", { type: "button", hidden: true }, "More");
  // The server's path of the next page, once a page said there is one.
  let next = null;
  async function loadAudit() {
    const body = await audit({ limit: 20, next });
    for (const e of body.events) {
      auditBody.append(
        el("tr", {}, el("td", {}, when(e.at)), el("td", {}, e.kind), el("td", {}, e.outcome), el("td", {}, e.address)),
      );
    }
    next = body.next ?? null;
    more.hidden = !next;
  }
  more.addEventListener("click", () => loadAudit().catch((error) => (alert.textContent = describe(error))));

  showCard(
    app,
    { label: "Settings" },
    el("div", { class: "actions" }, backButton(onBack)),
    status,
    alert,
    slot,
    intervalForm,
    el("h2", {}, "Devices"),
    deviceList,
    passkeySection({ status, alert }),
    twoFactorSection({ status, alert }),
    el("h2", {}, "Message key"),
    el("p", { class: "muted" }, "New keys for this browser. Messages sent to the old key still open here."),
    rotate,
    gateSection({ status, alert }),
    el("h2", {}, "Authenticator"),
    authenticatorSettings(),
    el("h2", {}, "Password"),
    passwordForm,
    el("h2", {}, "Audit log"),
    auditTable,
    more,
  );
  Promise.all([loadDevices(), loadAudit()]).catch((error) => (alert.textContent = describe(error)));
}
