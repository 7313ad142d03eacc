// Sign in and sign up (the seeds' words: "Username", "Password", "Sign in", "Sign up", "Name",
// "Last name", "Create account"), with the captcha solved in workers when the server asks for one; and
// a passkey sign-in, by its button or by the browser's autofill on the username field.
import { describe } from "../api.js";
import { withCaptcha } from "../captcha.js";
import { el, field, replace } from "../dom.js";
import {
  autofillAvailable,
  finishPasskeySignIn,
  isAbort,
  passkeyMessage,
  passkeysAvailable,
  signInWithPasskey,
} from "../passkeys.js";
import { normalisedUsername, PASSWORD_RULE, USERNAME_RULE } from "../rules.js";
import { register } from "../server/accounts.js";
import { startPasskeySignIn } from "../server/passkeys.js";
import { signIn } from "../server/sessions.js";
import { session } from "../session.js";
import { qrSignInScreen } from "./qr-signin.js";
import { secondFactorScreen } from "./second-factor.js";

/** With the key gate on and its password method here, the password just accepted opens it too: the sign-in
 *  and the unlock are one prompt (SPEC §14.7). Otherwise, or when it does not open, the prompt follows. */
async function openGateWith(password) {
  const accountId = session.account?.id;
  if (!accountId) return;
  try {
    const { unlockWithSignInPassword } = await import("../gate.js");
    await unlockWithSignInPassword(accountId, password);
  } catch {
    // The unlock prompt follows, as it did before.
  }
}

// The autofill's pending request (conditional mediation), whichever sign-in screen made it: the browser
// runs one WebAuthn request at a time, so it is aborted before any other starts and when the user sends
// the password.
let autofill = null;
function stopAutofill() {
  autofill?.abort();
  autofill = null;
}

export function signInScreen(app, { onSignedIn, mode = "sign-in", notice = "" }) {
  stopAutofill();
  const registering = mode === "sign-up";
  // "webauthn": the browser lists this site's passkeys among the username suggestions.
  const username = field("Username", {
    name: "username",
    autocomplete: registering ? "username" : "username webauthn",
    required: true,
    autocapitalize: "none",
    spellcheck: "false",
  }, registering ? `${USERNAME_RULE[0].toUpperCase()}${USERNAME_RULE.slice(1)}.` : null);
  const password = field("Password", {
    name: "password",
    type: "password",
    autocomplete: registering ? "new-password" : "current-password",
    required: true,
    minlength: registering ? 8 : undefined,
  }, registering ? `${PASSWORD_RULE}.` : null);
  const name = registering ? field("Name", { name: "name", autocomplete: "given-name", required: true }) : null;
  const lastname = registering
    ? field("Last name", { name: "lastname", autocomplete: "family-name", required: true })
    : null;
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" }, notice);
  const say = (text) => (status.textContent = text);
  const submit = el("button", { type: "submit", class: "primary" }, registering ? "Create account" : "Sign in");
  const other = el(
    "button",
    {
      type: "button",
      on: { click: () => signInScreen(app, { onSignedIn, mode: registering ? "sign-in" : "sign-up" }) },
    },
    registering ? "Back to sign in" : "Sign up",
  );
  // A passkey names the account itself: no username, and no second factor (a verified passkey is two).
  const passkey = registering || !passkeysAvailable()
    ? null
    : el("button", { type: "button", class: "passkey" }, "Sign in with a passkey");
  // Passwordless: an authenticator scans the page's code and approves (docs/PROTOCOL.md §3.9). A link to
  // another screen, not a button, so that the button named "Sign in" stays the only one.
  const openQr = (event) => (event.preventDefault(), stopAutofill(), qrSignInScreen(app, {
    onSignedIn,
    back: () => signInScreen(app, { onSignedIn }),
  }));
  const qr = registering
    ? null
    : el("p", {}, el("a", { href: "#qr-sign-in", on: { click: openQr } }, "Sign in with a QR code"));
  const form = el(
    "form",
    { "aria-label": registering ? "Sign up" : "Sign in", novalidate: true },
    el("h1", {}, registering ? "Create your account" : "Sign in"),
    username.row,
    password.row,
    name?.row,
    lastname?.row,
    el("div", { class: "actions" }, submit, other),
    passkey ? el("div", { class: "actions alternative" }, passkey) : null,
    qr,
    status,
    alert,
  );

  function signedIn(body) {
    stopAutofill();
    session.set(body);
    onSignedIn();
  }
  const passkeyFailed = (error) => {
    status.textContent = "";
    alert.textContent = passkeyMessage(error, "Try again, or sign in with your password.");
    // Offered again when the user comes back to the field, not at once: a refusal would only repeat.
    username.input.addEventListener("focus", offerAutofill, { once: true });
  };

  /** Keeps a conditional request pending, so that choosing a passkey in the autofill signs in. */
  async function offerAutofill() {
    if (registering || !(await autofillAvailable()) || !form.isConnected) return;
    stopAutofill();
    const controller = (autofill = new AbortController());
    try {
      // No options (a busy server, too many asked from this address): no autofill; the rest works.
      const start = await startPasskeySignIn().catch(() => null);
      if (!start) return;
      const body = await finishPasskeySignIn(start, { mediation: "conditional", signal: controller.signal });
      if (!controller.signal.aborted && form.isConnected) signedIn(body);
    } catch (error) {
      // Stopped by this page (the button, the password sent, another screen): nothing to say.
      if (controller.signal.aborted || isAbort(error) || !form.isConnected) return;
      // The browser's refusal of an autofill request is no answer from the user (an authenticator without
      // a passkey for this site may refuse at once): offered again when the user comes back to the field.
      if (error instanceof DOMException) return username.input.addEventListener("focus", offerAutofill, { once: true });
      passkeyFailed(error);
    } finally {
      if (autofill === controller) autofill = null;
    }
  }

  passkey?.addEventListener("click", async () => {
    stopAutofill();
    alert.textContent = "";
    status.textContent = "Waiting for your passkey…";
    passkey.disabled = true;
    try {
      signedIn(await signInWithPasskey());
    } catch (error) {
      passkeyFailed(error);
    } finally {
      passkey.disabled = false;
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    alert.textContent = "";
    const missing = [username, password, name, lastname].find((f) => f && !f.input.value.trim());
    if (missing) {
      alert.textContent = `${missing.row.querySelector("label").textContent} is required.`;
      missing.input.focus();
      return;
    }
    // The server's username rule, checked before any captcha work, as the CLI checks it: the name as typed,
    // neither trimmed nor mapped from other scripts (UsernameRule).
    if (!normalisedUsername(username.input.value)) {
      alert.textContent = `The username must be ${USERNAME_RULE}.`;
      username.input.focus();
      return;
    }
    if (registering && password.input.value.length < 8) {
      alert.textContent = "The password must be at least 8 characters.";
      password.input.focus();
      return;
    }
    stopAutofill();
    submit.disabled = true;
    try {
      const credentials = { username: username.input.value, password: password.input.value };
      if (registering) {
        // One proof of work: the sign-up answers with the new account's first session.
        const created = await withCaptcha(
          (captcha) =>
            register({
              ...credentials,
              name: name.input.value.trim(),
              lastname: lastname.input.value.trim(),
              captcha,
              signIn: true,
            }),
          say,
        );
        status.textContent = "Account created. Signing in…";
        // A server from before sign-up signed in answers with the Account alone: sign in as before.
        if (created?.token) {
          password.input.value = "";
          session.set(created, { username: credentials.username });
          await openGateWith(credentials.password);
          onSignedIn();
          return;
        }
      } else {
        status.textContent = "Signing in…";
      }
      const { status: code, body } = await withCaptcha(
        (captcha) => signIn({ ...credentials, captcha }),
        say,
      );
      password.input.value = "";
      if (code === 202) {
        // A new attempt after a failed push is a new sign-in: the password stays in this closure while
        // the second factor is on screen, for that alone.
        const again = async (how, say) => {
          const { status: next, body: answer } = await withCaptcha(
            (captcha) => signIn({ ...credentials, captcha, secondFactor: how }),
            say,
          );
          if (next === 202) return answer;
          session.set(answer, { username: credentials.username });
          await openGateWith(credentials.password);
          onSignedIn();
          return null;
        };
        secondFactorScreen(app, {
          pending: body,
          onSignedIn: async (...args) => {
            await openGateWith(credentials.password);
            onSignedIn(...args);
          },
          back: () => signInScreen(app, { onSignedIn }),
          username: credentials.username,
          again,
        });
        return;
      }
      session.set(body, { username: credentials.username });
      await openGateWith(credentials.password);
      onSignedIn();
    } catch (error) {
      status.textContent = "";
      alert.textContent = describe(error);
      offerAutofill();
    } finally {
      submit.disabled = false;
    }
  });
  replace(app, form);
  username.input.focus();
  offerAutofill();
}
