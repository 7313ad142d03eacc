// The second factor of a sign-in (PingOne's flow): the number to match while the push is pending, or a
// passkey, a one-time passcode, or a recovery code. The transaction's binding secret stays in this closure.
import { describe } from "../api.js";
import { el, field, replace, showCard } from "../dom.js";
import { passkeyMessage, passkeySecondFactor, passkeysAvailable } from "../passkeys.js";
import {
  collectMFASession,
  mfaTransaction,
  submitMFAPasscode,
  submitMFARecoveryCode,
} from "../server/second-factor.js";
import { session } from "../session.js";

const statusWords = {
  PUSH_CONFIRMATION_REQUIRED: "Waiting for your approval on your authenticator.",
  OTP_REQUIRED: "Enter a one-time passcode from your authenticator.",
  COMPLETED: "Approved.",
  FAILED: "The sign-in was refused.",
  PUSH_CONFIRMATION_TIMED_OUT: "No answer came from your authenticator in time.",
};
const failureWords = {
  denied: "The sign-in was denied on your authenticator.",
  reported: "The sign-in was reported as not you on your authenticator.",
  "wrong-number": "The wrong number was chosen on your authenticator.",
  "too-many-codes": "Too many wrong codes or refused passkeys.",
};

// A push that failed in a way the user may simply try again: a wrong number, a denial, no answer in time
// ("This wasn't me" and too many wrong codes are not offered again here).
const retryable = (view) => view.status === "PUSH_CONFIRMATION_TIMED_OUT" || (view.status === "FAILED" && [
  "wrong-number",
  "denied",
].includes(view.failure));
const otherWays = { totp: "a passcode from your authenticator", passkey: "a passkey", recoveryCode: "a recovery code" };
const listed = (items) => (items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`);

/** The sign-in's second factor as a screen. */
export function secondFactorScreen(app, { pending, onSignedIn, back, username, again }) {
  secondFactor(app, { pending, onDone: onSignedIn, onCancel: back, heading: "Second factor", username, again });
}

/**
 * A second factor in `container`: a sign-in's (the session is collected and kept) or a re-authentication's
 * (202 from POST /v1/sessions/current/reauth; the server answers 204 and this session counts as fresh).
 * A failed transaction takes no other answer (PROTOCOL §3.3), so after a wrong number, a denial or a
 * timeout a new attempt is a new one: `again(how, say)` asks the server for it ("push": a new push;
 * "code": none, for a passcode, passkey or recovery code) and resolves to its 202 body, or to null when
 * the caller finished without a second factor. `offered`: the ways the first transaction listed.
 */
export function secondFactor(container, options) {
  const { pending, onDone, onCancel, heading, username, reauth = false, again = null } = options;
  const { transaction, binding } = pending;
  const offered = options.offered ?? transaction.methods ?? [];
  let done = false;
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const number = el("p", { class: "number", "aria-label": "Number to match" });
  const code = field("One-time passcode", {
    inputmode: "numeric",
    autocomplete: "one-time-code",
    maxlength: 6,
    pattern: "[0-9]{6}",
  });
  const recovery = field("Recovery code", { autocomplete: "off", spellcheck: "false" });
  const codeForm = el("form", {}, code.row, el("button", { type: "submit", class: "primary" }, "Verify"));
  const recoveryForm = el("form", {}, recovery.row, el("button", { type: "submit" }, "Use recovery code"));
  const passkey = el("button", { type: "button", class: "passkey", hidden: true }, "Use a passkey");
  // What the user tried last: a refused passkey lowers the attempts left as a wrong code does.
  let lastTried = "code";
  // After a failed push: "Try again" and the account's other ways, each a new attempt.
  const retry = el("div", { class: "retry", hidden: true });
  const others = offered.filter((m) => Object.hasOwn(otherWays, m) && (m !== "passkey" || passkeysAvailable()));

  function offerRetry() {
    if (!retry.hidden) return;
    const tryAgain = el("button", { type: "button", class: "primary" }, "Try again");
    const another = el("button", { type: "button" }, "Use another way");
    const start = (how, button) => async () => {
      alert.textContent = "";
      tryAgain.disabled = another.disabled = true;
      status.textContent = how === "push" ? "Sending a new request to your authenticator…" : "Starting again…";
      try {
        const next = await again(how, (words) => (status.textContent = words));
        if (next && !done) secondFactor(container, { ...options, pending: next, offered });
      } catch (error) {
        status.textContent = "";
        alert.textContent = describe(error);
        tryAgain.disabled = another.disabled = false;
        button.focus();
      }
    };
    tryAgain.addEventListener("click", start("push", tryAgain));
    another.addEventListener("click", start("code", another));
    const push = offered.includes("push");
    const ways = others.map((m) => otherWays[m]);
    const words = push
      ? `Nothing was signed in. Try again for a new request on your ` +
          `authenticator${ways.length ? `, or use ${listed(ways)}` : ""}.`
      : `Nothing was signed in. Use ${listed(ways)}.`;
    replace(
      retry,
      el("p", {}, words),
      el("div", { class: "actions" }, push ? tryAgain : null, ways.length ? another : null),
    );
    retry.hidden = false;
    (push ? tryAgain : another).focus();
  }

  function show(view) {
    const words = (table, key) => (Object.hasOwn(table, key) ? table[key] : undefined);
    status.textContent = view.status === "FAILED"
      ? words(failureWords, view.failure) || statusWords.FAILED
      : words(statusWords, view.status) || view.status;
    if (view.numberMatching && view.status === "PUSH_CONFIRMATION_REQUIRED") {
      replace(
        number,
        el("span", { class: "label" }, "Number to match"),
        el("span", { class: "digits" }, view.numberMatching.number),
      );
      number.hidden = false;
    } else {
      number.hidden = true;
    }
    const methods = view.methods || [];
    codeForm.hidden = !methods.includes("totp");
    recoveryForm.hidden = !methods.includes("recoveryCode");
    passkey.hidden = !methods.includes("passkey") || !passkeysAvailable();
    if (again && retryable(view) && (offered.includes("push") || others.length)) offerRetry();
    if (view.attemptsLeft !== undefined && view.attemptsLeft < 5 && lastTried === "passkey") {
      alert.textContent = `The passkey was not accepted. ${view.attemptsLeft} attempts left: try again, or use ` +
        `another way.`;
    } else if (view.attemptsLeft !== undefined && view.attemptsLeft < 5 && methods.includes("totp")) {
      alert.textContent = `Wrong code. ${view.attemptsLeft} attempts left.`;
    }
  }

  async function finish(view) {
    if (view.status !== "COMPLETED" || done) return view.status === "COMPLETED";
    const { status: code, body } = await collectMFASession(transaction.id, binding);
    // A re-authentication keeps this session (204); only a sign-in gets a new one, for the user asked.
    if (reauth !== (code === 204))
      throw new Error("The server answered this confirmation with something else: refused. Sign in again.");
    if (reauth) session.authenticated();
    else session.set(body, { username });
    done = true;
    onDone();
    return true;
  }

  async function watch(view) {
    // Long polls until the transaction finishes, the user leaves, or an error.
    while (!done && status.isConnected) {
      try {
        view = await mfaTransaction(transaction.id, { wait: 25 }, binding);
        show(view);
        if (await finish(view)) return;
        if (["FAILED", "PUSH_CONFIRMATION_TIMED_OUT"].includes(view.status) && !(view.methods || []).length) return;
      } catch (error) {
        if (done) return;
        alert.textContent = describe(error);
        return;
      }
    }
  }

  function submitCode(form, input, submit) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      alert.textContent = "";
      lastTried = "code";
      try {
        const body = await submit(transaction.id, input.value.trim(), binding);
        input.value = "";
        show(body);
        if (!(await finish(body)) && body.status === "FAILED")
          alert.textContent = failureWords[body.failure] || statusWords.FAILED;
      } catch (error) {
        alert.textContent = describe(error);
      }
    });
  }
  submitCode(codeForm, code.input, submitMFAPasscode);
  submitCode(recoveryForm, recovery.input, submitMFARecoveryCode);

  passkey.addEventListener("click", async () => {
    alert.textContent = "";
    passkey.disabled = true;
    try {
      const view = await passkeySecondFactor(transaction.id, binding);
      lastTried = "passkey";
      show(view);
      if (!(await finish(view)) && view.status === "FAILED")
        alert.textContent = failureWords[view.failure] || statusWords.FAILED;
    } catch (error) {
      alert.textContent = passkeyMessage(error, "Try again, or use another way.");
    } finally {
      passkey.disabled = false;
    }
  });

  showCard(
    container,
    { label: "Second factor", heading },
    number,
    status,
    el("div", { class: "actions alternative" }, passkey),
    codeForm,
    recoveryForm,
    retry,
    alert,
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", on: { click: () => ((done = true), onCancel()) } }, "Cancel"),
    ),
  );
  show(transaction);
  if (!codeForm.hidden) code.input.focus();
  watch(transaction);
}
