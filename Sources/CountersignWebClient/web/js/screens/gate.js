// The key gate on screen (docs/SPEC.md §14): the unlock prompt (before the device session, opening and
// sending a message, the privacy overlay's return) and the Settings section ("Biometric Enable", "Failed
// Attempts Limit"). Every state has its words: locked, wrong passkey, wrong password, attempts left, wiped.
import { ApiError, describe } from "../api.js";
import { withCaptcha } from "../captcha.js";
import { el, feedback, field, replace, takeValue } from "../dom.js";
import { DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT } from "../gate-crypto.js";
import { isUnlocked, lock } from "../gate-keys.js";
import * as gate from "../gate.js";
import { GateRefusal, WIPED_WORDS } from "../gate-rules.js";
import * as setup from "../gate-setup.js";
import { keystore } from "../keystore.js";
import { confirmIdentity } from "./reauth.js";
import { reauthenticate } from "../server/sessions.js";
import { session } from "../session.js";
import { revokedInThisSession } from "../wipe.js";
import { secondFactor } from "./second-factor.js";

/** The prompt was closed without an unlock. */
export class NotUnlocked extends Error {
  constructor() {
    super("The keys stay locked, so nothing was opened or sent.");
    this.name = "NotUnlocked";
  }
}

const attemptsWords = ({ attemptsLeft, gate: { limit } }) =>
  `${attemptsLeft} of ${limit} attempts left. When none are left, this browser deletes its keys and messages and its ` +
    `device revokes itself.`;

/**
 * The password sent to the server as a re-authentication (the interval has run out), with the captcha and
 * the second factor when the server asks. A keys' password that is not the account's any more (changed
 * elsewhere) falls back to asking for the account's, unless `strict` (the password must be the account's).
 */
async function reauthWithPassword(container, password, say, { strict = false } = {}) {
  let answer;
  try {
    answer = await withCaptcha((captcha) => reauthenticate({ password, captcha }), say);
  } catch (error) {
    if (strict || !(error instanceof ApiError) || error.status === 0) throw error;
    await confirmIdentity(container, {
      heading: "Confirm it is you",
      prompt: `The keys are unlocked, but the server did not take this password: ${describe(error)} Enter your ` +
        `account password.`,
    });
    return;
  }
  if (answer.status !== 202) return session.authenticated();
  await new Promise((resolve, reject) =>
    secondFactor(container, {
      pending: answer.body,
      onDone: resolve,
      onCancel: () => reject(new NotUnlocked()),
      heading: "Confirm it is you",
      reauth: true,
    }),
  );
}

/**
 * Asks for the passkey (or the password) in `container` and resolves once the gate is open. A wrong one
 * says so with the attempts left and asks again; at the limit the page goes to sign-in (main.js). Rejects
 * with NotUnlocked on "Cancel" (when `cancellable`).
 */
export function unlockPrompt(
  container,
  {
    heading = "This browser's keys are locked",
    purpose = "",
    cancellable = true,
    // Before a session exists (a reload of a locked browser: screens/locked.js), the saved binding's account;
    // a passkey then signs in as it unlocks, and its Session is given to `onSignedIn`.
    accountId = session.account.id,
    onSignedIn = null,
  } = {},
) {
  return new Promise((resolve, reject) => {
    // Under the prompt's buttons, taking the focus when they start to say something (not from the password
    // field while it is being typed in).
    const { status, alert } = feedback();
    const attempts = el("p", { class: "muted", "data-testid": "gate-attempts" });
    const passkey = el("button", { type: "button", class: "primary", hidden: true }, "Unlock with passkey");
    const password = field("Password", { type: "password", autocomplete: "current-password" });
    const passwordButton = el("button", { type: "submit" }, "Unlock with password");
    const form = el("form", { "aria-label": "Unlock with password", hidden: true }, password.row, passwordButton);
    const cancel = cancellable ? el("button", { type: "button" }, "Cancel") : null;
    const section = el(
      "section",
      { class: "card gate-unlock", "aria-label": "Unlock this browser's keys" },
      el("h2", {}, heading),
      purpose ? el("p", {}, purpose) : null,
      attempts,
      form,
      el("div", { class: "actions" }, passkey, cancel),
      status,
      alert,
    );
    let busy = false;

    async function show() {
      const state = await gate.gateStatus(accountId);
      if (state.state !== "on") return false;
      passkey.hidden = !state.kinds.includes("prf");
      form.hidden = !state.kinds.includes("password");
      attempts.textContent = attemptsWords(state);
      return true;
    }

    async function run(step, words) {
      if (busy) return;
      busy = true;
      alert.textContent = "";
      status.textContent = words;
      passkey.disabled = passwordButton.disabled = true;
      try {
        await step();
        container.replaceChildren();
        resolve();
      } catch (error) {
        status.textContent = "";
        // Wiped: main.js has taken the page to sign-in with the words.
        if (error?.kind === "wiped") return reject(error);
        alert.textContent = describe(error);
        await show().catch(() => {});
        if (!form.hidden && error?.kind === "wrong password") password.input.focus();
      } finally {
        busy = false;
        passkey.disabled = passwordButton.disabled = false;
      }
    }

    passkey.addEventListener("click", () =>
      run(async () => {
        const signedIn = await gate.unlockWithPasskey(accountId, { signIn: !session.token });
        if (signedIn) onSignedIn?.(signedIn);
      }, "Waiting for your passkey…"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const typed = takeValue(password.input);
      run(async () => {
        // Without a session yet (a locked reload) there is nothing to re-authenticate: the resumed session
        // brings its own last authentication.
        const due = Boolean(session.token) && gate.reauthDue();
        await gate.unlockWithPassword(accountId, typed);
        if (!due) return;
        try {
          await reauthWithPassword(section, typed, (words) => (status.textContent = words));
        } catch (error) {
          lock(accountId);
          throw error;
        }
      }, "Checking the password…");
    });
    cancel?.addEventListener("click", () => {
      container.replaceChildren();
      reject(new NotUnlocked());
    });
    replace(container, section);
    show().then(
      (on) => {
        if (!on) return container.replaceChildren(), resolve();
        (form.hidden ? passkey : password.input).focus();
      },
      (error) => (alert.textContent = describe(error)),
    );
  });
}

/** The account's device record with its private keys: unlocked first (in `container`) when the gate is
 *  locked, or its re-authentication interval has run out since the unlock. */
export async function unlockedRecord(container, purpose) {
  const accountId = session.account.id;
  const record = await keystore.device(accountId);
  if (!record?.gate || isUnlocked(accountId)) return record;
  await unlockPrompt(container, { purpose });
  return keystore.device(accountId);
}

const REVOKED_WORDS =
  `This browser's device was revoked. ${WIPED_WORDS} Sign out and in again to set it up as a new device.`;

/**
 * Before the home screen opens a device session: a wipe's self-revocation sent if it waits; with the gate
 * on, the device session this page holds kept (the keys may lock at any time, and none is needed for it);
 * without one and locked, the server asked whether the device was revoked (a remote wipe), then the gate
 * unlocked. Returns the device to show when no new session is needed, else null.
 */
export async function gateBeforeDevice(container) {
  const accountId = session.account.id;
  if (revokedInThisSession(accountId)) {
    throw new Error(REVOKED_WORDS);
  }
  if (!(await gate.finishSelfRevocation(accountId))) {
    throw new Error(
      "This browser deleted its keys after too many failed attempts and could not tell the server yet; it tries " +
        "again at the next sign-in.",
    );
  }
  const state = await gate.gateStatus(accountId);
  if (state.state !== "on") return null;
  if (session.device && session.deviceId)
    return { record: await keystore.device(accountId), deviceSession: session.device };
  if (state.unlocked) return null;
  if (await gate.wipedIfRevokedElsewhere(accountId)) {
    throw new Error(REVOKED_WORDS);
  }
  await unlockPrompt(container, {
    purpose: "Unlock them to receive and read messages in this browser.",
    cancellable: false,
  });
  return null;
}

/** The privacy overlay's return after the interval: with the gate on, the passkey (or password) in place
 *  of the password alone. False when the gate is off here. */
export async function unlockOnReturn(container) {
  const accountId = session.account?.id;
  const state = accountId ? await gate.gateStatus(accountId) : null;
  if (state?.state !== "on") return false;
  lock(accountId);
  const what = state.kinds.includes("prf") ? "your passkey" : "your password";
  await unlockPrompt(container, {
    heading: "Welcome back",
    purpose: `Your re-authentication interval has passed. Unlock with ${what} to show Countersign again.`,
    cancellable: false,
  });
  return true;
}

// ---- Settings

const stateWords = {
  none: "This browser is not a device yet: wait for “Device ready” on the home screen.",
  wiped: "This browser deleted its keys after too many failed attempts.",
  off: "Off. This browser keeps its message keys in its storage, usable without asking.",
};

/** Settings' key gate: the switch, the limit, and what turning it on or off takes. */
export function gateSection({ status, alert }) {
  const accountId = session.account.id;
  const toggle = el("input", { type: "checkbox", role: "switch", id: "gate-switch", "aria-describedby": "gate-state" });
  const state = el("p", { id: "gate-state", "data-testid": "gate-state" });
  const limit = el(
    "select",
    { id: "gate-limit" },
    ...Array.from({ length: MAX_LIMIT - MIN_LIMIT + 1 }, (_, i) => MIN_LIMIT + i).map(
      (n) => el("option", { value: n, selected: n === DEFAULT_LIMIT }, String(n)),
    ),
  );
  const saveLimit = el("button", { type: "button", hidden: true }, "Save limit");
  const panel = el("div", { class: "gate-panel" });
  const ways = el("ul", { class: "list", "aria-label": "Ways to unlock the keys" });
  const addPasskey = el("button", { type: "button" }, "Add a passkey to the gate");
  const addPassword = el("button", { type: "button" }, "Add your password to the gate");
  const waysBox = el(
    "div",
    { class: "gate-ways", hidden: true },
    el("h3", {}, "Ways to unlock"),
    ways,
    el("div", { class: "actions" }, addPasskey, addPassword),
  );
  let kinds = [];
  /** The kinds of the methods that can still unlock (a passkey removed from the account cannot). */
  let usableKinds = [];

  const say = (words) => {
    alert.textContent = "";
    status.textContent = words;
  };
  const fail = (error) => {
    status.textContent = "";
    alert.textContent = describe(error);
  };

  async function refresh() {
    const now = await gate.gateStatus(accountId);
    toggle.checked = now.state === "on";
    toggle.disabled = now.state === "none" || now.state === "wiped";
    saveLimit.hidden = now.state !== "on";
    kinds = now.kinds ?? [];
    waysBox.hidden = now.state !== "on";
    if (now.state !== "on") return (state.textContent = stateWords[now.state]);
    addPassword.hidden = kinds.includes("password");
    usableKinds = await listWays();
    limit.value = String(now.gate.limit);
    const how = kinds.includes("prf")
      ? "On, with your passkey."
      : "On, with your password (no passkey with PRF locks them).";
    const open = now.unlocked ? "Unlocked in this page now." : "Locked now.";
    state.textContent = `${how} The message keys are stored here only encrypted. ${open} ${attemptsWords(now)}`;
  }

  /** The gate's methods, each with "Remove" while there are several. */
  async function listWays() {
    const methods = await setup.gateMethods(accountId);
    const usable = methods.filter((m) => m.usable);
    replace(
      ways,
      methods.map(({ method, label, usable: works }) => {
        // One that works always stays.
        const removable = !works || usable.length > 1;
        const remove = removable
          ? el(
              "button",
              { type: "button", class: "danger", "aria-label": `Remove ${label} from the key gate` },
              "Remove",
            )
          : null;
        remove?.addEventListener("click", () => removeWay(method, label));
        return el("li", {}, el("span", {}, label), remove ? el("div", { class: "actions" }, remove) : null);
      }),
    );
    return [...new Set(usable.map((m) => m.kind))];
  }

  async function removeWay(method, label) {
    try {
      // Like turning the gate off: an unlock first, even when open.
      await unlockPrompt(panel, {
        heading: "Remove a way to unlock",
        purpose: `Confirm with a way that stays to remove ${label} from the key gate.`,
      });
      await setup.removeMethod(accountId, method);
      say(
        `${label} no longer unlocks the keys here. A copy of this browser's data made before still opens with it: if ` +
          `it may be compromised, turn the key gate off and on again (new message keys under a new gate key).`,
      );
    } catch (error) {
      if (!(error instanceof NotUnlocked)) fail(error);
    }
    await refresh();
  }

  /** A password typed into `panel` (the account's, checked with the server when `check`); null on Cancel. */
  function askPassword(name, label, words, check) {
    return new Promise((resolve) => {
      const password = field(label, { type: "password", autocomplete: "current-password" });
      const form = el(
        "form",
        { "aria-label": name },
        el("p", {}, words),
        password.row,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", class: "primary" }, "Continue"),
          el("button", { type: "button", on: { click: () => (panel.replaceChildren(), resolve(null)) } }, "Cancel"),
        ),
      );
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const typed = takeValue(password.input);
        try {
          if (!typed) throw new Error("Enter the password.");
          if (check) {
            say("Checking the password…");
            await reauthWithPassword(panel, typed, say, { strict: true });
          }
          panel.replaceChildren();
          resolve(typed);
        } catch (error) {
          fail(error);
        }
      });
      replace(panel, form);
      password.input.focus();
    });
  }

  async function addWay(add) {
    addPasskey.disabled = addPassword.disabled = true;
    try {
      let proofPassword = null;
      if (!usableKinds.includes("prf")) {
        proofPassword = await askPassword(
          "Unlock the key gate first",
          "Password of the key gate",
          "First unlock the keys with the password they are locked with.",
          false,
        );
        if (proofPassword === null) return;
      }
      let what = add;
      if (add === "password") {
        const password = await askPassword(
          "Password to add to the key gate",
          "Account password",
          "The password to add: your account password, checked with the server. The keys then open with it, which " +
            "the server gets at every sign-in.",
          true,
        );
        if (password === null) return;
        what = { password };
      }
      say(
        add === "passkey"
          ? proofPassword === null
            ? "First your passkey that unlocks the keys, then the new passkey…"
            : "Unlocking, then waiting for the new passkey…"
          : "Waiting for your passkey…",
      );
      await setup.addMethod(accountId, { proofPassword, add: what });
      say(
        add === "passkey"
          ? "Passkey added: it unlocks the keys here too."
          : "Password added: it unlocks the keys here too.",
      );
    } catch (error) {
      fail(error);
    } finally {
      addPasskey.disabled = addPassword.disabled = false;
    }
    await refresh();
  }
  addPasskey.addEventListener("click", () => addWay("passkey"));
  addPassword.addEventListener("click", () => addWay("password"));

  /** Where the passkey has no PRF (or there is none): the password locks the keys instead. */
  function passwordInstead(reason) {
    const password = field("Account password", { type: "password", autocomplete: "current-password" });
    const form = el(
      "form",
      { "aria-label": "Turn on with password" },
      el(
        "p",
        { class: "notice", "data-testid": "gate-no-prf" },
        `${reason} Lock the keys with your account password instead (checked with the server, then PBKDF2 here). ` +
          `This protects a copy of this browser's data against others, not against the server, which gets this ` +
          `password at every sign-in:`,
      ),
      password.row,
      el(
        "div",
        { class: "actions" },
        el("button", { type: "submit", class: "primary" }, "Turn on with password"),
        el("button", { type: "button", on: { click: () => panel.replaceChildren() } }, "Cancel"),
      ),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const typed = takeValue(password.input);
      try {
        if (!typed) throw new Error("Enter your account password.");
        say("Checking the password…");
        await reauthWithPassword(panel, typed, say, { strict: true });
        say("Making new message keys and locking them…");
        await setup.enableWithPassword(accountId, typed, Number(limit.value));
        panel.replaceChildren();
        say("Key gate on, with your password. The message keys are stored here only encrypted.");
      } catch (error) {
        fail(error);
      }
      await refresh();
    });
    replace(panel, form);
    password.input.focus();
  }

  function offerOn() {
    const go = el("button", { type: "button", class: "primary" }, "Turn on with passkey");
    replace(
      panel,
      el(
        "p",
        { class: "warning" },
        "Turning the gate on makes new message keys for this browser and deletes the old ones. The messages kept " +
          "here are re-sealed to the new keys first, so they still open. Your contacts follow the new keys.",
      ),
      el(
        "div",
        { class: "actions" },
        go,
        el("button", { type: "button", on: { click: () => panel.replaceChildren() } }, "Cancel"),
      ),
    );
    go.addEventListener("click", async () => {
      go.disabled = true;
      try {
        say("Waiting for your passkey…");
        await setup.enableWithPasskey(accountId, Number(limit.value));
        panel.replaceChildren();
        say("Key gate on, with your passkey. The message keys are stored here only encrypted.");
      } catch (error) {
        if (error instanceof GateRefusal && (error.kind === "no prf" || error.kind === "no passkeys")) {
          say("");
          passwordInstead(error.message);
        } else {
          go.disabled = false;
          fail(error);
        }
      }
      await refresh();
    });
    go.focus();
  }

  async function offerOff() {
    const what = kinds.includes("prf") ? "your passkey" : "your password";
    try {
      await unlockPrompt(panel, {
        heading: "Turn the key gate off",
        purpose: `Confirm with ${what} once more: the message keys are then stored in this browser unwrapped again.`,
      });
      await setup.disable(accountId);
      say("Key gate off. The message keys are stored in this browser unwrapped again.");
    } catch (error) {
      if (!(error instanceof NotUnlocked)) fail(error);
    }
    await refresh();
  }

  toggle.addEventListener("change", () => {
    // The switch follows the gate, not the click: it turns once the passkey has answered.
    const wanted = toggle.checked;
    toggle.checked = !wanted;
    alert.textContent = "";
    if (wanted) offerOn();
    else offerOff();
  });

  saveLimit.addEventListener("click", async () => {
    try {
      await unlockedRecord(panel, "Unlock to change the failed attempts limit.");
      await setup.setLimit(accountId, Number(limit.value));
      say(`Failed attempts limit saved: ${limit.value}.`);
    } catch (error) {
      if (!(error instanceof NotUnlocked)) fail(error);
    }
    await refresh();
  });

  refresh().catch(fail);
  return el(
    "div",
    { class: "gate-settings" },
    el("h2", {}, "Key gate"),
    el(
      "p",
      { class: "muted" },
      "Keeps this browser's message keys stored only encrypted under your passkey (its PRF), or your password where " +
        "the passkey has none. They are unlocked after the passkey verifies you, and dropped when the page is hidden " +
        "or the re-authentication interval runs out.",
    ),
    el(
      "p",
      { class: "muted", "data-testid": "gate-protects" },
      "What each protects against: with a passkey, a copy of this browser's data does not open without your " +
        "authenticator, not even for the server, which never gets the passkey's secret. With your password, a copy " +
        "does not open without the password, but the server gets that password at every sign-in: the server, or " +
        "anyone who reads its requests, could open a copy.",
    ),
    el("div", { class: "choice" }, toggle, el("label", { for: "gate-switch" }, "Biometric Enable")),
    state,
    el("div", { class: "field" }, el("label", { for: "gate-limit" }, "Failed Attempts Limit"), limit),
    saveLimit,
    waysBox,
    panel,
  );
}
