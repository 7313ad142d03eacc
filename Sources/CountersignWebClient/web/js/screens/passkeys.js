// Settings → Passkeys (docs/PROTOCOL.md §5): the account's passkeys (name, the authenticator's name when
// its AAGUID is a known one, synced or bound to one device, created, last used), adding one, renaming
// and removing. Adding and removing change how the account signs in, so the server wants a recent full
// authentication first (401 reauthentication-required): asked for right here (withReauth), by passkey or
// password.
import { describe } from "../api.js";
import { fromBase64url } from "../bytes.js";
import { authenticatorName } from "../aaguids.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, field, replace, speakBeside } from "../dom.js";
import { isUnlocked } from "../gate-keys.js";
import { passkeyInGate, removeMethod } from "../gate-setup.js";
import { passkeyMessage, passkeysAvailable, registerPasskey } from "../passkeys.js";
import { withReauth } from "./reauth.js";
import { listPasskeys, removePasskey, renamePasskey } from "../server/passkeys.js";
import { session } from "../session.js";

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

/** Synced (backup eligible: a password manager's or a platform's) or on one authenticator only. */
function kind(p) {
  if (!p.synced) return "Device-bound (not synced)";
  return p.backedUp ? "Synced (backed up)" : "Synced (not backed up yet)";
}

/**
 * The passkeys part of Settings: a section that loads the account's passkeys itself. It reports in the
 * host screen's `status` and `alert` regions (one of each per screen).
 */
export function passkeySection(said) {
  const { status, alert } = said;
  const slot = el("div"); // the re-authentication, when the server asks for it
  const list = el("ul", { class: "list", "aria-label": "Passkeys" });
  const none = el(
    "p",
    { class: "muted", hidden: true },
    "No passkeys yet. A passkey signs you in without your password: your device unlocks it with its PIN, fingerprint " +
      "or face.",
  );
  const name = field("Passkey name", { maxlength: 64, autocomplete: "off", spellcheck: "false" });
  const hint = el(
    "p",
    { class: "muted", id: `${name.input.id}-hint` },
    "Optional: without a name, the passkey is named after its authenticator.",
  );
  name.input.setAttribute("aria-describedby", hint.id);
  const add = el("button", { type: "submit" }, "Add a passkey");
  const addForm = el(
    "form",
    { "aria-label": "Add a passkey" },
    name.row,
    hint,
    el("div", { class: "actions" }, add),
  );

  async function guarded(action, done) {
    alert.textContent = "";
    status.textContent = "";
    try {
      await withReauth(slot, action);
      status.textContent = done();
    } catch (error) {
      status.textContent = "";
      alert.textContent = passkeyMessage(error, "Try again.");
    }
  }

  async function load() {
    const body = await listPasskeys();
    none.hidden = body.passkeys.length > 0;
    list.hidden = body.passkeys.length === 0;
    replace(list, body.passkeys.map(item));
  }

  function item(p) {
    const label = visibleText(p.name);
    const from = authenticatorName(p.aaguid) ?? "Passkey";
    const rename = el("button", { type: "button", "aria-label": `Rename passkey ${label}` }, "Rename");
    const remove = el("button", { type: "button", class: "danger", "aria-label": `Remove passkey ${label}` }, "Remove");
    const more = el("div");
    const li = el(
      "li",
      {},
      el("strong", {}, nameElement(p.name)),
      el("div", { class: "muted" }, `${from} · ${kind(p)}`),
      el("div", { class: "muted" }, `Created ${when(p.createdAt)} · Last used ${when(p.lastUsedAt)}`),
      el("div", { class: "actions" }, rename, remove),
      more,
    );
    rename.addEventListener("click", () => {
      const newName = field("New passkey name", {
        value: p.name,
        maxlength: 64,
        autocomplete: "off",
        spellcheck: "false",
      });
      const form = el(
        "form",
        { "aria-label": `Rename passkey ${label}` },
        newName.row,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit" }, "Save passkey name"),
          el("button", { type: "button", on: { click: () => more.replaceChildren() } }, "Cancel"),
        ),
      );
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        guarded(
          async () => {
            await renamePasskey(p.id, { name: newName.input.value });
            await load();
          },
          () => "Passkey renamed.",
        );
      });
      replace(more, form);
      newName.input.select();
    });
    // Removing takes a second press, and then (when it has been a while) the re-authentication.
    remove.addEventListener("click", async () => {
      // The key gate here may open with this passkey: the only way, and its keys would be lost with it.
      let inGate;
      try {
        inGate = await passkeyInGate(session.account.id, p.credentialId);
      } catch (error) {
        replace(
          more,
          el(
            "p",
            { class: "alert", role: "alert", tabindex: "-1" },
            `Could not check this browser's key gate, so nothing was removed: ${describe(error)}`,
          ),
        );
        more.firstChild.focus();
        return;
      }
      if (inGate === "only") {
        replace(
          more,
          el(
            "p",
            { class: "warning", role: "alert", tabindex: "-1" },
            `${label} is the only way to unlock this browser's message keys (Key gate, below). Add another passkey ` +
              `or your password to the key gate first, or turn the gate off; then remove it.`,
          ),
        );
        more.firstChild.focus();
        return;
      }
      const yes = el("button", { type: "button", class: "danger" }, "Remove passkey");
      yes.addEventListener("click", () =>
        guarded(
          async () => {
            await removePasskey(p.id);
            // It can no longer unlock the gate (the server stops asking for it); its entry goes too when open.
            const method = { kind: "prf", credentialId: fromBase64url(p.credentialId) };
            if (inGate && isUnlocked(session.account.id))
              await removeMethod(session.account.id, method).catch(() => {});
            await load();
          },
          () => `Passkey ${label} removed: it no longer signs you in here. Delete it from its authenticator too.`,
        ),
      );
      replace(
        more,
        el(
          "p",
          { class: "warning" },
          `Remove ${label}? It stops signing you in here; your password and other passkeys still do. It also stops ` +
            `unlocking the key gate of any browser that opens with it: check those first.`,
        ),
        el(
          "div",
          { class: "actions" },
          yes,
          el("button", { type: "button", on: { click: () => more.replaceChildren() } }, "Keep it"),
        ),
      );
      yes.focus();
    });
    return li;
  }

  addForm.addEventListener("submit", (event) => {
    event.preventDefault();
    let added = null;
    const typed = name.input.value.trim();
    add.disabled = true;
    guarded(
      async () => {
        const nameFor = (aaguid) => typed || authenticatorName(aaguid) || "Passkey";
        added = await registerPasskey(
          session.token,
          nameFor,
          () => (status.textContent = "Follow your browser's prompt to make the passkey…"),
        );
        name.input.value = "";
        await load();
      },
      () => `Passkey ${visibleText(added.name)} added: you can sign in with it instead of your password.`,
    ).finally(() => (add.disabled = false));
  });

  const section = el(
    "section",
    { "aria-label": "Passkeys", class: "card passkeys" },
    el("h2", {}, "Passkeys"),
    none,
    list,
    slot,
    passkeysAvailable()
      ? addForm
      : el(
          "p",
          { class: "muted" },
          "This browser cannot make passkeys here (it needs WebAuthn and a secure connection).",
        ),
  );
  // What a passkey's Rename or Remove says appears under the list; what adding says, under its form.
  speakBeside(said, list);
  speakBeside(said, addForm);
  load().catch((error) => (alert.textContent = passkeyMessage(error)));
  return section;
}
