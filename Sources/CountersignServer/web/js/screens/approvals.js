// Approvals (PingOne's authenticator): sign-in requests for this account as they arrive, with who, where
// and when, number matching, "Approve", "Deny" and "This wasn't me"; the one-time passcode with its
// countdown; and, for Settings, pairing this browser as an authenticator or unpairing it.
import { describe } from "../api.js";
import { answer, authenticatorStatus, pair, pairedRecord, passcode, subscribe, unpair } from "../authenticator.js";
import { el, field, replace } from "../dom.js";
import { withReauth } from "../reauth.js";
import { session } from "../session.js";

const when = (ms) => new Date(ms).toLocaleString();
const secondsLeft = (ms) => Math.max(0, Math.ceil((ms - Date.now()) / 1000));

const stateWords = {
  connecting: "Connecting…",
  live: "Sign-in requests arrive live.",
  "long-poll": "Sign-in requests arrive by polling (the live channel cannot connect).",
  closed: "Not connected.",
  elsewhere: "Sign-in requests are shown in another tab of this browser; they come here when that tab closes.",
};

const removedWords = "This authenticator was removed from your account.";
const ignoredWords = "A sign-in request that did not verify (not signed by your server's key, not for this browser, or expired) was ignored.";

/** What an answer did, in words: [text, is it a problem]. */
function outcome(request, choice, status) {
  const what = request.reauthentication ? "confirmation of a change" : "sign-in";
  const from = `${request.username}'s ${what} from ${request.context.address}`;
  if (choice.approve) {
    if (status === "COMPLETED") return [`Approved: ${from} is complete.`, false];
    if (status === "FAILED") return [`The number did not match: ${from} failed. Approve only when the number is the one on the sign-in screen.`, true];
  } else if (status === "FAILED") {
    return choice.report
      ? [`Reported as not you: ${from} was refused, and push approvals are paused for ${request.username} until it signs in with a passcode or a recovery code.`, false]
      : [`Denied: ${from} was refused.`, false];
  }
  return [`The request ended: ${status}.`, true];
}

/** One request as a list item: who, where, when; the number; the three answers. */
function requestItem(request, { onAnswer }) {
  const title = request.reauthentication ? `Confirm a change for ${request.username}` : `Sign-in request for ${request.username}`;
  const expires = el("dd", {}, "");
  let picked = null;
  let matching;
  let typed = null;
  if (request.matching.type === "SELECT_NUMBER") {
    const buttons = request.matching.options.map((n) =>
      el("button", { type: "button", class: "pick", "aria-pressed": "false", "aria-label": n }, n),
    );
    for (const b of buttons) {
      b.addEventListener("click", () => {
        picked = b.textContent;
        onAnswer(request, null);
        for (const other of buttons) other.setAttribute("aria-pressed", String(other === b));
      });
    }
    matching = el(
      "div",
      { class: "matching" },
      el("p", {}, "Pick the number shown on the sign-in screen, then approve."),
      el("div", { role: "group", "aria-label": "Number to match", class: "picks" }, buttons),
    );
  } else {
    typed = field("Number shown on the sign-in screen", { inputmode: "numeric", autocomplete: "off", maxlength: 6, pattern: "[0-9]*" });
    typed.input.addEventListener("input", () => onAnswer(request, null));
    matching = el("div", { class: "matching" }, typed.row);
  }
  const approve = el("button", { type: "button", class: "primary" }, "Approve");
  const deny = el("button", { type: "button" }, "Deny");
  const report = el("button", { type: "button", class: "danger" }, "This wasn't me");
  const buttons = [approve, deny, report];
  const send = async (choice) => {
    buttons.forEach((b) => (b.disabled = true));
    try {
      await onAnswer(request, choice);
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  };
  approve.addEventListener("click", () => {
    const number = typed ? typed.input.value.trim() : picked;
    if (!number || !/^[0-9]{2}([0-9]{4})?$/.test(number)) {
      onAnswer(request, null, typed ? "Type the number shown on the sign-in screen (2 or 6 digits) first." : "Pick the number shown on the sign-in screen first.");
      (typed?.input ?? matching.querySelector("button"))?.focus();
      return;
    }
    send({ approve: true, number });
  });
  deny.addEventListener("click", () => send({ approve: false, report: false }));
  report.addEventListener("click", () => send({ approve: false, report: true }));
  const item = el(
    "li",
    { class: "request", "aria-label": `${title} from ${request.context.address}` },
    el("strong", { class: "request-title" }, title),
    request.reauthentication ? el("span", { class: "badge" }, "Already signed in: not a new sign-in") : null,
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "From"),
      el("dd", { class: "mono" }, request.context.address),
      el("dt", {}, "Browser or app"),
      el("dd", {}, request.context.userAgent || "not given"),
      el("dt", {}, "When"),
      el("dd", {}, when(request.context.time)),
      el("dt", {}, "Expires"),
      expires,
    ),
    matching,
    el("div", { class: "actions" }, buttons),
  );
  const tick = () => (expires.textContent = `in ${secondsLeft(request.expiresAt)} s`);
  tick();
  return { item, tick };
}

/** The passcode and its countdown to the next 30-second step; recomputed when the step changes. */
function passcodeCard(record) {
  // Shown as two groups of three (as authenticator apps do); the text is the six digits.
  const first = el("span", {}, "···");
  const second = el("span", {}, "···");
  const digits = el("span", { class: "digits", "data-testid": "passcode" }, first, second);
  const bar = el("progress", { max: record.totp.period, value: record.totp.period, "aria-label": "Time left for this passcode" });
  const left = el("span", { class: "muted" });
  let until = 0;
  let computing = false;
  async function tick() {
    const now = Date.now();
    if (now >= until * 1000 && !computing) {
      computing = true;
      try {
        const info = await passcode(record, now);
        first.textContent = info.passcode.slice(0, 3);
        second.textContent = info.passcode.slice(3);
        until = info.validUntil;
      } finally {
        computing = false;
      }
    }
    const seconds = secondsLeft(until * 1000);
    bar.value = seconds;
    left.textContent = `New code in ${seconds} s`;
  }
  return {
    card: el("div", { class: "otp" }, digits, el("div", { class: "countdown" }, bar, left)),
    tick,
  };
}

/**
 * The Settings part: "Pair this browser as an authenticator" (a pairing key asked for with a recent
 * sign-in, withReauth), or, once paired, which authenticator this is and "Unpair this browser".
 */
export function authenticatorSettings({ onPaired = () => {} } = {}) {
  const account = session.account;
  const box = el("div", { class: "card authenticator-settings" });
  const slot = el("div");
  // Live regions without the status and alert roles: mounted inside Settings, this part must not add a
  // second status or alert to that screen's own.
  const status = el("p", { class: "status", "aria-live": "polite" });
  const alert = el("p", { class: "alert", "aria-live": "assertive" });

  async function render(notice = "") {
    const record = await pairedRecord(account.id);
    status.textContent = notice;
    if (!record) {
      const start = el("button", { type: "button" }, "Pair this browser as an authenticator");
      start.addEventListener("click", async () => {
        alert.textContent = "";
        status.textContent = "Pairing…";
        start.disabled = true;
        try {
          await withReauth(slot, () => pair(session.token, account));
          await render(`Paired. Sign-in requests for ${account.username} now appear in Approvals, with this browser's passcode.`);
          onPaired();
        } catch (error) {
          status.textContent = "";
          alert.textContent = `This browser could not be paired: ${describe(error)}`;
          start.disabled = false;
        }
      });
      replace(
        box,
        el("p", { class: "muted" }, `Approve sign-ins to ${account.username} from this browser, with number matching, and show its one-time passcode. The server keeps it as a device of its own, beside this browser's messaging device.`),
        start,
        slot,
        status,
        alert,
      );
      return;
    }
    const unpairButton = el("button", { type: "button", class: "danger" }, "Unpair this browser");
    unpairButton.addEventListener("click", async () => {
      alert.textContent = "";
      unpairButton.disabled = true;
      try {
        await unpair(account.id);
        await render("Unpaired. This browser no longer approves sign-ins or shows passcodes.");
      } catch (error) {
        alert.textContent = describe(error);
        unpairButton.disabled = false;
      }
    });
    replace(
      box,
      el("p", {}, `This browser is an authenticator for ${record.username}: “${record.name}”, paired ${when(record.pairedAt)}.`),
      unpairButton,
      slot,
      status,
      alert,
    );
  }
  render().catch((error) => (alert.textContent = describe(error)));
  return box;
}

export function approvalsScreen(app, { onBack }) {
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const channel = el("p", { class: "muted", "data-testid": "approvals-state" });
  const list = el("ul", { class: "list requests", "aria-label": "Sign-in requests" });
  const empty = el("p", { class: "muted" }, "No sign-in requests waiting. They appear here as they arrive.");
  const body = el("div", { class: "approvals" });
  const items = new Map();
  let otp = null;
  let shownFor = undefined;

  async function onAnswer(request, choice, problem) {
    alert.textContent = problem ?? "";
    if (!choice) return;
    status.textContent = "";
    try {
      const result = await answer(request.txn, choice);
      const [words, bad] = outcome(request, choice, result);
      (bad ? alert : status).textContent = words;
    } catch (error) {
      alert.textContent = describe(error);
    }
  }

  function showRequests() {
    const { requests } = authenticatorStatus();
    const live = new Set(requests.map((r) => r.txn));
    for (const [txn, entry] of items) {
      if (!live.has(txn)) {
        entry.item.remove();
        items.delete(txn);
      }
    }
    for (const request of requests) {
      if (items.has(request.txn)) continue;
      const entry = requestItem(request, { onAnswer });
      items.set(request.txn, entry);
      list.append(entry.item);
    }
    empty.hidden = items.size > 0;
  }

  function showState() {
    const { record, state, detail, removedFor } = authenticatorStatus();
    channel.textContent = !record
      ? ""
      : state === "revoked"
        ? `This browser no longer receives sign-in requests: ${detail}`
        : state === "locked"
          ? `No sign-in requests arrive while the account is locked: ${detail}`
          : (stateWords[state] ?? "");
    if ((record?.deviceId ?? null) === shownFor) return;
    // Revoked or unpaired from elsewhere: its passcodes go with it (the secret is already deleted).
    if (!record && removedFor === session.account.id) alert.textContent = removedWords;
    else if (shownFor) status.textContent = "Unpaired. This browser no longer approves sign-ins or shows passcodes.";
    shownFor = record?.deviceId ?? null;
    items.clear();
    list.replaceChildren();
    if (!record) {
      otp = null;
      replace(body, el("p", {}, "This browser is not an authenticator for your account."), authenticatorSettings());
      return;
    }
    otp = passcodeCard(record);
    otp.tick();
    replace(
      body,
      el("h2", {}, "Sign-in requests"),
      el("p", { class: "muted" }, "Approve only a sign-in you are making yourself, with the number its screen shows."),
      list,
      empty,
      el("h2", {}, "One-time passcode"),
      el("p", { class: "muted" }, "For a sign-in that asks for a passcode instead of a push."),
      otp.card,
      el("h2", {}, "This authenticator"),
      authenticatorSettings(),
    );
    showRequests();
  }

  const unsubscribe = subscribe((event) => {
    if (!body.isConnected) return unsubscribe();
    if (event.kind === "ignored") alert.textContent = ignoredWords;
    if (event.kind === "requests") showRequests();
    if (event.kind === "state" || event.kind === "paired" || event.kind === "removed") showState();
  });
  const ticker = setInterval(() => {
    if (!body.isConnected) return clearInterval(ticker);
    otp?.tick();
    for (const entry of items.values()) entry.tick();
  }, 1_000);

  replace(
    app,
    el(
      "section",
      { "aria-label": "Approvals", class: "card" },
      el("h1", {}, "Approvals"),
      el("div", { class: "actions" }, el("button", { type: "button", on: { click: onBack } }, "Back")),
      channel,
      status,
      alert,
      body,
    ),
  );
  showState();
}

/**
 * For every other screen: a bar saying a sign-in request is waiting, with "Open Approvals". `isShown()`
 * says whether Approvals is on screen (the bar hides there); call `update()` when the screen changes.
 */
export function waitingBar(openApprovals, isShown) {
  const words = el("span");
  const bar = el("div", { class: "waiting", hidden: true }, words, el("button", { type: "button", class: "primary", on: { click: openApprovals } }, "Open Approvals"));
  const update = () => {
    const { requests } = authenticatorStatus();
    bar.hidden = !requests.length || isShown();
    words.textContent = requests.length === 1 ? `A sign-in request for ${requests[0].username} is waiting for your answer.` : `${requests.length} sign-in requests are waiting for your answer.`;
  };
  subscribe((event) => ["requests", "state", "removed"].includes(event.kind) && update());
  return { bar, update };
}
