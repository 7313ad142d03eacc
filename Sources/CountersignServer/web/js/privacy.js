// LockWhisper's privacy overlay: when the page is hidden its content is covered at once and decrypted
// text is dropped (screens register what to drop); coming back uncovers it, after the password when the
// account's re-authentication interval has run out since the last sign-in or re-authentication.
import { call, describe } from "./api.js";
import { el, field } from "./dom.js";
import { session } from "./session.js";

const droppers = new Set();

/** `drop` runs whenever the page is hidden: it removes decrypted text from the page. */
export function onHide(drop) {
  droppers.add(drop);
  return () => droppers.delete(drop);
}

export function installPrivacyOverlay(app) {
  let overlay = null;

  function cover() {
    for (const drop of droppers) drop();
    if (overlay) return;
    overlay = el("div", { class: "overlay", role: "dialog", "aria-modal": "true", "aria-label": "Countersign is hidden" }, el("p", {}, "Countersign is hidden."));
    app.inert = true;
    document.body.append(overlay);
  }

  function uncover() {
    overlay?.remove();
    overlay = null;
    app.inert = false;
  }

  function askPassword() {
    const password = field("Password", { type: "password", autocomplete: "current-password" });
    const alert = el("p", { role: "alert", class: "alert" });
    const form = el(
      "form",
      { class: "unlock" },
      el("h1", {}, "Welcome back"),
      el("p", {}, "Your re-authentication interval has passed. Enter your password to show Countersign again."),
      password.row,
      el("button", { type: "submit", class: "primary" }, "Unlock"),
      alert,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      alert.textContent = "";
      try {
        const { status } = await call("POST", "/v1/sessions/current/reauth", { token: session.token, json: { password: password.input.value } });
        if (status === 202) {
          alert.textContent = "This account has a second factor: sign in again to continue.";
          return;
        }
        session.authenticated();
        uncover();
      } catch (error) {
        password.input.value = "";
        alert.textContent = `${describe(error)} Try again.`;
        password.input.focus();
      }
    });
    overlay.replaceChildren(form);
    password.input.focus();
  }

  document.addEventListener("visibilitychange", () => {
    if (!session.token) return uncover();
    if (document.visibilityState === "hidden") return cover();
    if (!overlay) return;
    const minutes = session.account?.settings?.reauthIntervalMinutes ?? 0;
    if (minutes > 0 && Date.now() - session.authenticatedAt >= minutes * 60_000) askPassword();
    else uncover();
  });
}
