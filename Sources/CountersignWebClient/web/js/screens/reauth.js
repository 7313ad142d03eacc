// Re-authentication (LockWhisper's interval; the server's 401 reauthentication-required): one of the
// account's passkeys when it has one (in place of the password and second factor), or the password,
// with the captcha when the server asks for one, then the account's second factor when it has one
// (POST /v1/sessions/current/reauth answers 202 with a transaction bound to this session).
import { ApiError, describe } from "../api.js";
import { withCaptcha } from "../captcha.js";
import { el, field, replace } from "../dom.js";
import { passkeyMessage, passkeysAvailable, reauthenticateWithPasskey } from "../passkeys.js";
import { listPasskeys } from "../server/passkeys.js";
import { reauthenticate } from "../server/sessions.js";
import { session } from "../session.js";
import { secondFactor } from "./second-factor.js";

/**
 * Asks for the password in `container` and resolves once this session is freshly authenticated. A wrong
 * password says so and asks again; "Cancel" (when `onCancel` is given) gives up. `passkeyOnly`: only a passkey
 * will do (an application that accepts nothing else): no password form; `noPasskey` is said when the account
 * has none or the browser cannot use one.
 */
export function confirmIdentity(container, options) {
  const { heading, prompt, submitLabel = "Confirm", onCancel, cancelLabel = "Cancel", passkeyOnly = false } = options;
  const { noPasskey = "" } = options;
  return new Promise((resolve) => {
    const password = field("Password", { type: "password", autocomplete: "current-password" });
    const alert = el("p", { role: "alert", class: "alert" });
    const status = el("p", { role: "status", class: "status" });
    const cancel = onCancel ? el("button", { type: "button", on: { click: onCancel } }, cancelLabel) : null;
    // Shown once the account is known to have a passkey (GET /v1/me/passkeys).
    const passkey = el("button", { type: "button", class: "passkey", hidden: true }, `${submitLabel} with a passkey`);
    const promptText = el("p", {}, prompt);
    const form = el(
      "form",
      { class: "confirm" },
      heading ? el("h1", {}, heading) : null,
      promptText,
      password.row,
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, submitLabel), passkey, cancel),
      status,
      alert,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      alert.textContent = "";
      try {
        const given = password.input.value;
        const ask = (how, say) =>
          withCaptcha((captcha) => reauthenticate({ password: given, captcha, secondFactor: how }), say);
        const { status: code, body } = await ask(undefined, (text) => (status.textContent = text));
        password.input.value = "";
        if (code === 202) {
          // Cancelling the second factor goes back to the password (or out, when the caller allows it).
          const back = onCancel ?? (() => confirmIdentity(container, options).then(resolve));
          // After a failed push, a new attempt: the password stays in this closure while it is on screen.
          const again = async (how, say) => {
            const { status: next, body: answer } = await ask(how, say);
            if (next === 202) return answer;
            session.authenticated();
            resolve();
            return null;
          };
          secondFactor(container, {
            pending: body,
            onDone: resolve,
            onCancel: back,
            heading: "Confirm it is you",
            reauth: true,
            again,
          });
          return;
        }
        session.authenticated();
        resolve();
      } catch (error) {
        password.input.value = "";
        status.textContent = "";
        alert.textContent = `${describe(error)} Try again.`;
        password.input.focus();
      }
    });
    passkey.addEventListener("click", async () => {
      alert.textContent = "";
      status.textContent = "Waiting for your passkey…";
      passkey.disabled = true;
      try {
        await reauthenticateWithPasskey(session.token);
        session.authenticated();
        resolve();
      } catch (error) {
        status.textContent = "";
        alert.textContent = passkeyMessage(error, "Try again, or enter your password.");
      } finally {
        passkey.disabled = false;
      }
    });
    replace(container, form);
    if (passkeyOnly) {
      password.row.hidden = true;
      form.querySelector("button[type=submit]").hidden = true;
      passkey.hidden = false;
      passkey.classList.add("primary");
      const none = () => {
        passkey.hidden = true;
        alert.textContent = noPasskey;
      };
      if (!passkeysAvailable()) none();
      else listPasskeys().then((body) => body?.passkeys?.length || none()).catch(() => {});
      passkey.focus();
      return;
    }
    password.input.focus();
    if (passkeysAvailable()) {
      listPasskeys()
        .then((body) => {
          if (!body?.passkeys?.length || !passkey.hidden) return;
          passkey.hidden = false;
          promptText.append(" Or use one of your passkeys.");
        })
        .catch(() => {}); // the password still works
    }
  });
}

/**
 * Runs `action`; when the server wants a recent sign-in, confirms the user's identity in `slot` and runs
 * the action again. Rejects when the user cancels.
 */
export async function withReauth(slot, action) {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "reauthentication-required")) throw error;
  }
  await new Promise((resolve, reject) => {
    confirmIdentity(slot, {
      prompt: "Enter your password to confirm.",
      onCancel: () => (slot.replaceChildren(), reject(new Error("Not confirmed."))),
    }).then(resolve);
  });
  slot.replaceChildren();
  return action();
}
