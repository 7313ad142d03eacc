// Sign in with a QR code (docs/PROTOCOL.md §3.9, PingOne's authenticate(authCode)): the page asks for an
// authentication code (anonymously), shows its QR and its 8 characters, and long-polls until an
// authenticator has claimed and approved it; then it collects the session with the code's binding secret, which only
// this page holds. The statuses are PingOne's four words (and PENDING), shown here in sentences.
import { ApiError, describe } from "../api.js";
import { el, replace, showCard } from "../dom.js";
import { qrCode } from "../qr.js";
import { authCodeState, collectAuthCodeSession, createAuthCode } from "../server/qr-signin.js";
import { session } from "../session.js";

const words = {
  PENDING: "Waiting for your authenticator to scan the code.",
  CLAIMED: "Your authenticator has the code: approve the sign-in there.",
  COMPLETED: "Approved on your authenticator. Signing in…",
  DENIED: "The sign-in was denied on your authenticator.",
  EXPIRED: "The code expired before it was approved.",
};
const finished = new Set(["DENIED", "EXPIRED"]);
// The server answers as soon as the status changes; a quicker unchanged answer (a proxy cutting the wait)
// is not followed at once.
const WAIT_S = 25;
const MIN_ROUND_MS = 1000;

export function qrSignInScreen(app, { onSignedIn, back }) {
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const picture = el("div", { class: "qr-slot" });
  const code = el("p", { class: "code mono", "aria-label": "Sign-in code", "data-testid": "auth-code" });
  const countdown = el("p", { class: "muted" });
  const again = el("button", { type: "button", class: "primary", hidden: true }, "New code");
  let generation = 0; // a new code stops the previous one's polling

  async function start() {
    const mine = ++generation;
    alert.textContent = "";
    again.hidden = true;
    code.textContent = "";
    countdown.textContent = "";
    picture.replaceChildren();
    status.textContent = "Asking the server for a code…";
    let created;
    try {
      created = await createAuthCode({ userApproval: "REQUIRED" });
    } catch (error) {
      status.textContent = "";
      alert.textContent = describe(error);
      again.hidden = false;
      return;
    }
    replace(picture, qrCode(created.uri, { label: "QR code of the sign-in code" }));
    code.textContent = `${created.code.slice(0, 4)}-${created.code.slice(4)}`;
    const live = () => mine === generation && status.isConnected;
    const expires = Date.parse(created.expiresAt);
    const tick = () => {
      const left = Math.max(0, Math.ceil((expires - Date.now()) / 1000));
      countdown.textContent = left ? `The code expires in ${left} seconds.` : "";
    };
    tick();
    const ticker = setInterval(() => (live() ? tick() : clearInterval(ticker)), 1000);
    let last = "";
    let wait = 0; // the first read answers at once
    try {
      while (live()) {
        const began = Date.now();
        let state;
        try {
          state = await authCodeState({ wait }, created.binding);
        } catch (error) {
          if (!live()) return;
          alert.textContent = describe(error);
          again.hidden = false;
          return;
        }
        if (!live()) return;
        if (state.status !== last) status.textContent = words[state.status] ?? state.status;
        const unchanged = state.status === last;
        last = state.status;
        wait = WAIT_S;
        if (state.status === "COMPLETED") return collect(created.binding);
        if (finished.has(state.status)) {
          // Nothing left to scan: the picture goes, a new code is one press away.
          picture.replaceChildren();
          code.textContent = "";
          countdown.textContent = "";
          again.hidden = false;
          again.focus();
          return;
        }
        const quick = MIN_ROUND_MS - (Date.now() - began);
        if (unchanged && quick > 0) await new Promise((resolve) => setTimeout(resolve, quick));
      }
    } finally {
      clearInterval(ticker);
    }
  }

  async function collect(binding) {
    try {
      const body = await collectAuthCodeSession(binding);
      session.set(body, { passwordless: true });
      onSignedIn();
    } catch (error) {
      alert.textContent = describe(error);
      again.hidden = false;
    }
  }

  again.addEventListener("click", start);
  showCard(
    app,
    { label: "Sign in with a QR code", className: "qr-signin" },
    el(
      "p",
      {},
      "Scan this code with your Countersign authenticator, or type its 8 characters there, then approve the " +
        "sign-in. This page goes on by itself.",
    ),
    picture,
    code,
    countdown,
    status,
    alert,
    el(
      "div",
      { class: "actions" },
      again,
      el("button", { type: "button", on: { click: () => (generation++, back()) } }, "Back to sign in"),
    ),
  );
  start();
}

/**
 * What a QR session can and cannot do, for the home screen when the server refuses it something (401
 * reauthentication-required): it was never confirmed by the password, so the server lets it register no
 * device and change nothing sensitive until the password (and second factor) confirm it.
 */
export function qrSessionLimits(onConfirm) {
  return el(
    "div",
    { class: "card notice", role: "note", "aria-label": "Signed in with a QR code" },
    el(
      "p",
      {},
      "You signed in with a QR code, without your password. This session can show your account and settings.",
    ),
    el(
      "p",
      {},
      "It cannot yet make this browser one of your devices (to send and read messages here), change your password or " +
        "your second factors: confirm with your password (and second factor) first.",
    ),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", class: "primary", on: { click: onConfirm } }, "Confirm with password"),
    ),
  );
}

/** Whether an error is the server refusing a QR session what needs a full sign-in. */
export const needsFullSignIn = (
  error,
) => session.passwordless && error instanceof ApiError && error.code === "reauthentication-required";
