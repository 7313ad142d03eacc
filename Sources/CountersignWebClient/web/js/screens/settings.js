// Settings (LockWhisper's re-authentication interval, cryptology-project's devices and keys), in sections a
// person reads one at a time, each with its own address (#/settings/devices): the account and password,
// security (the interval, the message key), devices, passkeys, two-factor, the key gate, the audit log.
// What an action says appears beside it and takes focus (dom.js `feedback`).
import { describe } from "../api.js";
import { auditWords } from "../audit-words.js";
import { groupedKeyId } from "../bytes.js";
import { nameElement, visibleText } from "../display-name.js";
import { backButton, el, feedback, field, replace, showCard } from "../dom.js";
import { rotateDeviceKeys } from "../device.js";
import { withReauth } from "./reauth.js";
import { REAUTH_CHOICES } from "../rules.js";
import { passwordChanged } from "../gate-setup.js";
import { authenticatorSettings } from "./approvals.js";
import { passkeySection } from "./passkeys.js";
import { gateSection, unlockedRecord } from "./gate.js";
import { linkDevicesPanel } from "./link-devices.js";
import { approverControls } from "./approver.js";
import { connectedAppsPart } from "./connected-apps.js";
import { keystore } from "../keystore.js";
import { awaitingEndorsement } from "../linking.js";
import { pairedRecord } from "../authenticator/store.js";
import { audit, changePassword, updateSettings } from "../server/accounts.js";
import { listDevices, renameDevice, revokeDevice } from "../server/devices.js";
import { session } from "../session.js";
import { twoFactorSection } from "./two-factor.js";
import { notificationsPart } from "./notifications.js";
import { agentWords } from "../user-agent.js";

/** Where an audited request came from: "Chrome on Linux", or the program's own name (the CLI's), cut to 60
 *  characters before its hidden characters are written out (display-name.js). */
function from(userAgent) {
  if (!userAgent) return "an unnamed program";
  const words = agentWords(userAgent);
  return words.startsWith("Browser ") ? nameElement(Array.from(userAgent).slice(0, 60).join("")) : words;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

/** "Last seen 5 minutes ago (21:04)": when the server last saw the device use its session (to the minute:
 *  it notes a session's use at most once a minute, and a push connection only when it opens). */
function lastSeen(d, isThisBrowser) {
  if (isThisBrowser) return "In use now";
  if (!d.lastSeenAt) return "Not used since it was added";
  const at = new Date(d.lastSeenAt);
  const minutes = Math.floor((Date.now() - at.getTime()) / 60_000);
  const clock = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (minutes < 2) return `Last seen just now (${clock})`;
  if (minutes < 60) return `Last seen ${minutes} minutes ago (${clock})`;
  if (minutes < 24 * 60) return `Last seen ${Math.floor(minutes / 60)} h ago (${clock})`;
  return `Last seen ${at.toLocaleString()}`;
}

/** The sections in their order: address, name. */
const SETTINGS_SECTIONS = [
  ["account", "Account"],
  ["security", "Security"],
  ["devices", "Devices"],
  ["notifications", "Notifications"],
  ["passkeys", "Passkeys"],
  ["two-factor", "Two-factor"],
  ["key-gate", "Key gate"],
  ["apps", "Connected apps"],
  ["audit", "Audit"],
];

/** `id`: the address's part after #/settings/ (Account for none or an unknown one). */
export function settingsScreen(app, { onBack, id: requested }) {
  const known = SETTINGS_SECTIONS.find(([id]) => id === requested) ?? SETTINGS_SECTIONS[0];
  const [section] = known;
  const said = feedback();
  const nav = el(
    "nav",
    { "aria-label": "Settings sections", class: "sections" },
    el(
      "ul",
      {},
      SETTINGS_SECTIONS.map(([id, name]) =>
        el("li", {}, el("a", { href: `#/settings/${id}`, "aria-current": id === section ? "page" : null }, name)),
      ),
    ),
  );
  const parts = SECTION_PARTS[section](said);
  showCard(
    app,
    { label: "Settings" },
    el("div", { class: "actions" }, backButton(onBack)),
    nav,
    // Not a region of its own: the passkeys, two-factor and key gate parts are named regions already.
    el("div", { class: "settings-section", "data-section": section }, ...parts, said.status, said.alert),
  );
}

/** Runs `action` after a re-authentication when the account's interval asks for one; says `done` or why not. */
function guardedBy({ status, alert }, slot) {
  return async (action, done) => {
    alert.textContent = "";
    status.textContent = "";
    try {
      await withReauth(slot, action);
      status.textContent = typeof done === "function" ? done() : done;
      return true;
    } catch (error) {
      alert.textContent = describe(error);
      return false;
    }
  };
}

const SECTION_PARTS = {
  account: accountPart,
  security: securityPart,
  devices: devicesPart,
  notifications: notificationsPart,
  passkeys: (said) => [passkeySection(said)],
  "two-factor": (said) => [
    twoFactorSection(said),
    el("h2", {}, "This browser as an authenticator"),
    authenticatorSettings(),
  ],
  "key-gate": (said) => [gateSection(said)],
  apps: connectedAppsPart,
  audit: auditPart,
};

function accountPart(said) {
  const account = session.account;
  const slot = el("div");
  const guarded = guardedBy(said, slot);
  const currentPassword = field("Current password", { type: "password", autocomplete: "current-password" });
  const newPassword = field("New password", { type: "password", autocomplete: "new-password", minlength: 8 });
  const passwordForm = el(
    "form",
    { "aria-label": "Change password" },
    currentPassword.row,
    newPassword.row,
    el("button", { type: "submit" }, "Change password"),
  );
  passwordForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (newPassword.input.value.length < 8) {
      said.status.textContent = "";
      said.alert.textContent = "The new password must be at least 8 characters.";
      return;
    }
    let keysFollow = true;
    const changed = await guarded(async () => {
      const passwords = [currentPassword.input.value, newPassword.input.value];
      await changePassword({ currentPassword: passwords[0], newPassword: passwords[1] });
      currentPassword.input.value = "";
      newPassword.input.value = "";
      // The key gate's password, when it has one, follows (SPEC §14.4).
      keysFollow = await passwordChanged(account.id, ...passwords);
    }, "Password changed. Your other sessions were signed out.");
    if (changed && !keysFollow) {
      said.status.textContent += " The key gate here still opens with the password it was locked with.";
    }
  });
  return [
    el("h2", {}, "Account"),
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "Username"),
      el("dd", {}, account.username),
      el("dt", {}, "Name"),
      el("dd", {}, `${account.name} ${account.lastname}`),
    ),
    el("h2", {}, "Password"),
    slot,
    passwordForm,
  ];
}

function securityPart(said) {
  const slot = el("div");
  const guarded = guardedBy(said, slot);
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

  // Message key (cryptology-project's "change key"): this browser's device keys, rotated.
  const rotate = el("button", { type: "button" }, "Change message key");
  rotate.addEventListener("click", () =>
    guarded(async () => {
      if (!session.deviceToken)
        throw new Error("This browser is not a device yet: wait for “Device ready” on the home screen.");
      await unlockedRecord(slot, "Unlock them to change the message key.");
      await rotateDeviceKeys(session.deviceToken, session.account.id);
    }, "Message key changed. Your contacts follow the change: the old key signed for the new one."),
  );
  return [
    el("h2", {}, "Security"),
    slot,
    intervalForm,
    el("h2", {}, "Message key"),
    el("p", { class: "muted" }, "New keys for this browser. Messages sent to the old key still open here."),
    rotate,
  ];
}

function devicesPart(said) {
  const slot = el("div");
  const guarded = guardedBy(said, slot);
  const deviceList = el("ul", { class: "list", "aria-label": "Devices" });
  async function loadDevices() {
    const body = await listDevices();
    const accountId = session.account.id;
    const record = await keystore.device(accountId).catch(() => null);
    // This browser's device: its session may not be open yet after a reload, its record is.
    const mine = session.deviceId ?? record?.deviceId;
    // Authenticators this browser may let approve new devices (not its own: it approves as itself).
    const ownAuthenticator = (await pairedRecord(accountId).catch(() => null))?.deviceId ?? null;
    const waiting = record?.deviceId ? await awaitingEndorsement(record, body.devices, ownAuthenticator) : [];
    replace(
      deviceList,
      body.devices.filter((d) => !d.revokedAt).map((d) => deviceItem(d, d.id === mine, body.devices, waiting)),
    );
  }
  function deviceItem(d, isThisBrowser, devices, waiting) {
    // The name as shown: hidden and direction-changing characters written out (display-name.js).
    const label = visibleText(d.name);
    const rename = el("button", { type: "button", "aria-label": `Rename ${label}` }, "Rename");
    // This browser's own device is removed from the home screen, keys and all.
    const revoke = isThisBrowser
      ? null
      : el("button", { type: "button", class: "danger", "aria-label": `Revoke ${label}` }, "Revoke");
    const renameSlot = el("div");
    const item = el(
      "li",
      {},
      el("strong", {}, nameElement(d.name)),
      isThisBrowser ? el("span", { class: "badge" }, "This browser") : null,
      // An authenticator approves sign-ins and holds no messages (PROTOCOL §3).
      el(
        "div",
        { class: "muted" },
        d.kind === "authenticator"
          ? `Authenticator: approves sign-ins${d.endorsement ? " and new devices" : ""}`
          : "Messaging device",
      ),
      el("div", { class: "mono" }, groupedKeyId(d.signingKeyId)),
      el("div", { class: "muted" }, lastSeen(d, isThisBrowser)),
      d.kind === "authenticator" ? approverControls(d, devices, waiting, { guarded, done: loadDevices }) : null,
      el("div", { class: "actions" }, rename, revoke),
      renameSlot,
    );
    rename.addEventListener("click", () => {
      const name = field("New name", { value: d.name, maxlength: 64 });
      const cancel = el("button", { type: "button", on: { click: () => renameSlot.replaceChildren() } }, "Cancel");
      const form = el(
        "form",
        { "aria-label": `Rename ${label}` },
        name.row,
        el("div", { class: "actions" }, el("button", { type: "submit" }, "Save name"), cancel),
      );
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        guarded(async () => {
          await renameDevice(d.id, { name: name.input.value });
          await loadDevices();
        }, "Device renamed.");
      });
      // One form at a time: a second press starts it again.
      replace(renameSlot, form);
      name.input.select();
    });
    revoke?.addEventListener("click", () =>
      guarded(async () => {
        await revokeDevice(d.id);
        await loadDevices();
      }, `${label} revoked.`),
    );
    return item;
  }
  loadDevices().catch((error) => (said.alert.textContent = describe(error)));
  const linking = linkDevicesPanel({ onChange: () => loadDevices().catch(() => {}) });
  return [el("h2", {}, "Devices"), linking, slot, deviceList];
}

function auditPart(said) {
  const list = el("ol", { class: "audit", "aria-label": "Audit log" });
  const more = el("button", { type: "button", hidden: true }, "More");
  const refresh = el("button", { type: "button" }, "Refresh");
  // The server's path of the next page, once a page said there is one; which load is the latest (a
  // "Refresh" while "More" loads: only the latest answer is shown).
  let next = null;
  let generation = 0;
  function item(e) {
    const { what, failed } = auditWords(e);
    return el(
      "li",
      { class: failed ? "failed" : "" },
      el("strong", {}, what),
      el("time", { datetime: e.at }, when(e.at)),
      el("span", { class: "muted" }, "From ", from(e.userAgent), `, ${e.address}`),
    );
  }
  async function load(fresh) {
    if (fresh) next = null;
    const mine = fresh ? ++generation : generation;
    const body = await audit({ limit: 20, next });
    if (mine !== generation) return;
    if (fresh) list.replaceChildren();
    list.append(...body.events.map(item));
    next = body.next ?? null;
    more.hidden = !next;
  }
  const failed = (error) => (said.alert.textContent = describe(error));
  more.addEventListener("click", () => load(false).catch(failed));
  refresh.addEventListener("click", () => load(true).catch(failed));
  load(true).catch(failed);
  return [
    el("h2", {}, "Audit log"),
    el("p", { class: "muted" }, "What happened on this account, newest first."),
    list,
    el("div", { class: "actions" }, more, refresh),
  ];
}
