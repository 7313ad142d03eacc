// LockWhisper's privacy overlay: when the page is hidden its content is covered at once and decrypted
// text is dropped (the signal "drop-decrypted", which screens holding decrypted text listen to); coming
// back uncovers it, after the password when the account's re-authentication interval has run out since the
// last sign-in or re-authentication.
import { el } from "../dom.js";
import { clear, emit } from "../events.js";
import { session } from "../session.js";
import { confirmIdentity } from "./reauth.js";

export function installPrivacyOverlay(app) {
  let overlay = null;

  function cover() {
    emit("drop-decrypted");
    if (overlay) return;
    overlay = el(
      "div",
      { class: "overlay", role: "dialog", "aria-modal": "true", "aria-label": "Countersign is hidden" },
      el("p", {}, "Countersign is hidden."),
    );
    app.inert = true;
    app.hidden = true;
    document.body.append(overlay);
  }

  function uncover() {
    overlay?.remove();
    overlay = null;
    app.inert = false;
    app.hidden = false;
  }

  async function askAgain() {
    // With the key gate on, the passkey (or its password) both re-authenticates and unlocks the keys.
    const { unlockOnReturn } = await import("./gate.js");
    if (await unlockOnReturn(overlay)) return uncover();
    await confirmIdentity(overlay, {
      heading: "Welcome back",
      prompt: "Your re-authentication interval has passed. Enter your password to show Countersign again.",
      submitLabel: "Unlock",
    });
    uncover();
  }

  /** Signed out: the overlay and any prompt on it go, and the decrypted text is dropped. */
  function reset() {
    emit("drop-decrypted");
    clear("drop-decrypted");
    uncover();
  }

  document.addEventListener("visibilitychange", () => {
    if (!session.token) return uncover();
    if (document.visibilityState === "hidden") return cover();
    if (!overlay) return;
    const minutes = session.account?.settings?.reauthIntervalMinutes ?? 0;
    if (minutes > 0 && Date.now() - session.authenticatedAt >= minutes * 60_000) askAgain();
    else uncover();
  });
  return { reset };
}
