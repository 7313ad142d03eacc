// Sign in and sign up (the seeds' words: "Username", "Password", "Sign in", "Sign up", "Name",
// "Last name", "Create account"), with the captcha solved in workers when the server asks for one.
import { call, describe } from "../api.js";
import { withCaptcha } from "../captcha.js";
import { el, field, replace } from "../dom.js";
import { session } from "../session.js";
import { qrSignInScreen } from "./qr-signin.js";
import { secondFactorScreen } from "./second-factor.js";

export function signInScreen(app, { onSignedIn, mode = "sign-in", notice = "" }) {
  const registering = mode === "sign-up";
  const username = field("Username", { name: "username", autocomplete: "username", required: true, autocapitalize: "none", spellcheck: "false" });
  const password = field("Password", {
    name: "password",
    type: "password",
    autocomplete: registering ? "new-password" : "current-password",
    required: true,
    minlength: registering ? 8 : undefined,
  });
  const name = registering ? field("Name", { name: "name", autocomplete: "given-name", required: true }) : null;
  const lastname = registering ? field("Last name", { name: "lastname", autocomplete: "family-name", required: true }) : null;
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
  // Passwordless: an authenticator scans the page's code and approves (docs/PROTOCOL.md §3.9). A link to
  // another screen, not a button, so that the button named "Sign in" stays the only one.
  const openQr = (event) => (event.preventDefault(), qrSignInScreen(app, { onSignedIn, back: () => signInScreen(app, { onSignedIn }) }));
  const qr = registering ? null : el("p", {}, el("a", { href: "#qr-sign-in", on: { click: openQr } }, "Sign in with a QR code"));
  const form = el(
    "form",
    { "aria-label": registering ? "Sign up" : "Sign in", novalidate: true },
    el("h1", {}, registering ? "Create your account" : "Sign in"),
    username.row,
    password.row,
    name?.row,
    lastname?.row,
    el("div", { class: "actions" }, submit, other),
    qr,
    status,
    alert,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    alert.textContent = "";
    const missing = [username, password, name, lastname].find((f) => f && !f.input.value.trim());
    if (missing) {
      alert.textContent = `${missing.row.querySelector("label").textContent} is required.`;
      missing.input.focus();
      return;
    }
    if (registering && password.input.value.length < 8) {
      alert.textContent = "The password must be at least 8 characters.";
      password.input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const credentials = { username: username.input.value.trim(), password: password.input.value };
      if (registering) {
        await withCaptcha(
          (captcha) =>
            call("POST", "/v1/accounts", {
              json: { ...credentials, name: name.input.value.trim(), lastname: lastname.input.value.trim(), captcha },
            }),
          say,
        );
        status.textContent = "Account created. Signing in…";
      } else {
        status.textContent = "Signing in…";
      }
      const { status: code, body } = await withCaptcha(
        (captcha) => call("POST", "/v1/sessions", { json: { ...credentials, captcha } }),
        say,
      );
      password.input.value = "";
      if (code === 202) {
        secondFactorScreen(app, { pending: body, onSignedIn, back: () => signInScreen(app, { onSignedIn }), username: credentials.username });
        return;
      }
      session.set(body, { username: credentials.username });
      onSignedIn();
    } catch (error) {
      status.textContent = "";
      alert.textContent = describe(error);
    } finally {
      submit.disabled = false;
    }
  });
  replace(app, form);
  username.input.focus();
}
