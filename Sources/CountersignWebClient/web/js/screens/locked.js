// A reload of a browser whose key gate is on (docs/PROTOCOL.md §1.1): its session is bound to the device's
// key, which stays wrapped until the passkey or password opens it, so one prompt unlocks the keys and signs
// back in. "Sign out" forgets the binding here (the server ends it after its idle limit).
import { describe } from "../api.js";
import { el, showCard } from "../dom.js";
import { on } from "../events.js";
import { NotUnlocked, unlockPrompt } from "./gate.js";

/**
 * Shows "Locked" for `saved` (stay-signed-in.js's binding) and calls `onUnlocked(session)` once the gate is
 * open (`session`: the Session of a passkey's sign-in, else null);
 * `onSignOut` when the user would rather sign in again (as someone else, say).
 */
export function lockedScreen(app, { saved, onUnlocked, onSignOut, notice = "" }) {
  const slot = el("div");
  const alert = el("p", { role: "alert", class: "alert" }, notice);
  const signOut = el("button", { type: "button", on: { click: () => finish(undefined, onSignOut) } }, "Sign out");
  showCard(
    app,
    { label: "Locked", heading: "Locked" },
    el("p", {}, "Signed in as ", el("strong", {}, saved.username), "."),
    slot,
    alert,
    el("div", { class: "actions" }, signOut),
    el(
      "p",
      { class: "muted" },
      "Sign out here forgets this browser's sign-in. To end it on the server as well, unlock first, then sign out.",
    ),
  );
  // A passkey signs in as it unlocks (its session is given on); the password unlocks here only, and the
  // session then resumes by the unlocked device key's signature.
  let signedIn = null;
  let done = false;
  const finish = (session, then = onUnlocked) => {
    if (done) return;
    done = true;
    stop();
    then(session);
  };
  // Unlocked in another tab of this browser meanwhile: that one unlock serves this tab too.
  const stop = on("gate-changed", (change) => {
    if (!slot.isConnected) return stop(); // replaced meanwhile (a wipe, a sign-out elsewhere)
    if (change.accountId === saved.accountId && change.unlocked && change.shared) finish(null);
  });
  unlockPrompt(slot, {
    accountId: saved.accountId,
    purpose: "One unlock opens your keys and signs you back in.",
    cancellable: false,
    onSignedIn: (body) => (signedIn = body),
  }).then(() => finish(signedIn), (error) => {
    if (done) return;
    if (error instanceof NotUnlocked || error?.kind === "wiped") return;
    alert.textContent = describe(error);
  });
}
