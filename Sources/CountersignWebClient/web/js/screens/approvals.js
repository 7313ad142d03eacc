// Approvals (PingOne's authenticator): sign-in requests for this account as they arrive, with who, where
// and when, number matching, "Approve", "Deny" and "This wasn't me"; the one-time passcode with its
// countdown; and, for Settings, pairing this browser as an authenticator or unpairing it.
import { describe } from "../api.js";
import { authCodeFrom } from "../authenticator/auth-code.js";
import { pair } from "../authenticator/enrol.js";
import { passcode } from "../authenticator/passcode.js";
import { answer, answerAuthCode, authenticatorStatus, claimAuthCode, unpair } from "../authenticator/runtime.js";
import { pairedRecord } from "../authenticator/store.js";
import { nameElement } from "../display-name.js";
import { backButton, el, feedback, field, replace, showCard, speakBeside } from "../dom.js";
import { on } from "../events.js";
import { withReauth } from "./reauth.js";
import { session } from "../session.js";
import { agentWords, browserBrand } from "../user-agent.js";

/** The requester's user agent in words ("Chrome on Linux"), as the audit log shows it; one naming no known
 *  browser (a program's own name, the CLI's) as given, cut to 60 characters, hidden characters written out.
 *  Whoever asked chose it: it says what they claim to be. */
function agent(userAgent) {
  if (!userAgent) return "not given";
  if (browserBrand(userAgent) !== "Browser") return agentWords(userAgent);
  return nameElement(Array.from(userAgent).slice(0, 60).join(""));
}

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
const ignoredWords = "A sign-in request that did not verify (not signed by your server's key, not for this browser, " +
  "or expired) was ignored.";

/** What an answer did, in words: [text, is it a problem]. */
function outcome(request, choice, status) {
  const what = request.reauthentication ? "confirmation of a change" : "sign-in";
  const from = `${request.username}'s ${what} from ${request.context.address}`;
  if (choice.approve) {
    if (status === "COMPLETED") return [`Approved: ${from} is complete.`, false];
    if (status === "FAILED")
      return [
        `The number did not match: ${from} failed. Approve only when the number is the one on the sign-in screen.`,
        true,
      ];
  } else if (status === "FAILED") {
    return choice.report
      ? [
          `Reported as not you: ${from} was refused, and push approvals are paused for ${request.username} until it ` +
            `signs in with a passcode or a recovery code.`,
          false,
        ]
      : [`Denied: ${from} was refused.`, false];
  }
  return [`The request ended: ${status}.`, true];
}

/** One request as a list item: who, where, when; the number; the three answers. */
function requestItem(request, { onAnswer }) {
  const title = request.reauthentication
    ? `Confirm a change for ${request.username}`
    : `Sign-in request for ${request.username}`;
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
    typed = field("Number shown on the sign-in screen", {
      inputmode: "numeric",
      autocomplete: "off",
      maxlength: 6,
      pattern: "[0-9]*",
    });
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
      onAnswer(
        request,
        null,
        typed
          ? "Type the number shown on the sign-in screen (2 or 6 digits) first."
          : "Pick the number shown on the sign-in screen first.",
      );
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
      el("dd", {}, agent(request.context.userAgent)),
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

/** Whether this browser can scan a QR code with its camera (the Shape Detection API's BarcodeDetector). */
async function canScan() {
  if (!("BarcodeDetector" in window) || !navigator.mediaDevices?.getUserMedia) return false;
  try {
    return (await window.BarcodeDetector.getSupportedFormats()).includes("qr_code");
  } catch {
    return false;
  }
}

/**
 * A QR sign-in answered from here (PingOne's authenticate(authCode), PROTOCOL §3.9): the 8 characters the
 * sign-in page shows, typed or scanned with the camera, claim its code; the request is then shown as a
 * push is (who, from where, when) with "Approve" and "Deny".
 */
function qrSignInPanel(accountId, { status, alert }) {
  const code = field("Code from the sign-in page", {
    autocomplete: "off",
    autocapitalize: "characters",
    spellcheck: "false",
    placeholder: "ABCD-2345",
  });
  const go = el("button", { type: "submit", class: "primary" }, "Continue");
  const scan = el("button", { type: "button", hidden: true }, "Scan the QR code");
  const stopScan = el("button", { type: "button", hidden: true }, "Stop scanning");
  const video = el("video", { width: 320, muted: true, playsinline: true, hidden: true, "aria-label": "Camera" });
  const request = el("div", { "aria-live": "polite" });
  const form = el(
    "form",
    { "aria-label": "QR sign-in code", class: "qr-code-entry" },
    code.row,
    el("div", { class: "actions" }, go, scan, stopScan),
    video,
  );
  let stream = null;

  function stopCamera() {
    stream?.getTracks().forEach((t) => t.stop());
    stream = null;
    video.srcObject = null;
    video.hidden = stopScan.hidden = true;
    scan.disabled = false;
  }

  /** The claimed request as a push request is shown: who, from where, when; Approve (per user) and Deny. */
  function showRequest(text, claimed) {
    const from = claimed.clientContext;
    const done = (words, bad = false) => {
      request.replaceChildren();
      (bad ? alert : status).textContent = words;
      code.input.focus();
    };
    if (claimed.status === "COMPLETED")
      return done(`Signed in: the QR sign-in from ${from.address} is complete (it asked for no approval).`);
    if (claimed.status !== "CLAIMED")
      return done(
        claimed.status === "EXPIRED"
          ? "The code expired: ask the sign-in page for a new one."
          : `The sign-in request ended: ${claimed.status}.`,
        true,
      );
    const answerWith = (approve, user) => async () => {
      alert.textContent = "";
      buttons.forEach((b) => (b.disabled = true));
      try {
        const result = await answerAuthCode(accountId, text, { approve, userId: user?.userId });
        if (result === "COMPLETED") done(`Approved: ${user.username}'s sign-in from ${from.address} is complete.`);
        else if (result === "DENIED") done(`Denied: the sign-in from ${from.address} was refused.`);
        else
          done(
            result === "EXPIRED"
              ? "The code expired before the answer: ask the sign-in page for a new one."
              : `The sign-in request ended: ${result}.`,
            true,
          );
      } catch (error) {
        alert.textContent = describe(error);
        buttons.forEach((b) => (b.disabled = false));
      }
    };
    const users = claimed.users ?? [];
    const approvals = users.map(
      (u) => el(
        "button",
        { type: "button", class: "primary", on: { click: answerWith(true, u) } },
        users.length > 1 ? `Approve as ${u.username}` : "Approve",
      ),
    );
    const deny = el("button", { type: "button", on: { click: answerWith(false) } }, "Deny");
    const buttons = [...approvals, deny];
    const who = users.map((u) => `${u.username} (${u.given} ${u.family})`).join(", ");
    replace(
      request,
      el(
        "ul",
        { class: "list requests", "aria-label": "QR sign-in request" },
        el(
          "li",
          { class: "request", "aria-label": `QR sign-in request from ${from.address}` },
          el("strong", { class: "request-title" }, `QR sign-in request for ${users.map((u) => u.username).join(", ")}`),
          el(
            "dl",
            { class: "facts" },
            el("dt", {}, "From"),
            el("dd", { class: "mono" }, from.address),
            el("dt", {}, "Browser or app"),
            // Whoever asked chose these words (the QR page is anonymous): shown with nothing hidden.
            el("dd", {}, agent(from.userAgent)),
            el("dt", {}, "When"),
            el("dd", {}, when(from.time)),
            el("dt", {}, "Signs in"),
            el("dd", {}, who),
          ),
          el(
            "p",
            {},
            "Approve only if you are signing in yourself, on the screen that shows this code. Anyone you approve for " +
              "gets into your account without your password.",
          ),
          el("div", { class: "actions" }, buttons),
        ),
      ),
    );
    approvals[0]?.focus();
  }

  async function claim(input) {
    alert.textContent = status.textContent = "";
    request.replaceChildren();
    let text;
    try {
      text = authCodeFrom(input);
    } catch (error) {
      alert.textContent = error.message;
      code.input.focus();
      return;
    }
    go.disabled = true;
    try {
      const claimed = await claimAuthCode(accountId, text);
      code.input.value = "";
      showRequest(text, claimed);
    } catch (error) {
      alert.textContent = describe(error);
      code.input.focus();
    } finally {
      go.disabled = false;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    stopCamera();
    claim(code.input.value);
  });

  scan.addEventListener("click", async () => {
    alert.textContent = "";
    scan.disabled = true;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } });
    } catch (error) {
      scan.disabled = false;
      alert.textContent = `The camera could not be used ` +
        `(${error?.name === "NotAllowedError" ? "not allowed" : describe(error)}): type the code instead.`;
      return;
    }
    video.srcObject = stream;
    video.hidden = stopScan.hidden = false;
    await video.play().catch(() => {});
    status.textContent = "Point the camera at the QR code on the sign-in page.";
    const detector = new window.BarcodeDetector({ formats: ["qr_code"] });
    while (stream && form.isConnected) {
      let found = [];
      try {
        found = await detector.detect(video);
      } catch {
        // A frame not ready yet: the next one.
      }
      const value = found.map((b) => b.rawValue).find((v) => /authentication_code=|^[\s2-9A-Za-z-]{8,11}$/.test(v));
      if (value) {
        stopCamera();
        status.textContent = "";
        return claim(value);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    stopCamera();
  });
  stopScan.addEventListener("click", () => {
    stopCamera();
    status.textContent = "";
  });
  canScan().then((yes) => (scan.hidden = !yes));

  const section = el(
    "section",
    { "aria-label": "Sign in with a QR code" },
    el("h2", {}, "QR sign-in"),
    el(
      "p",
      { class: "muted" },
      "Signing in with a QR code somewhere else? Type the 8 characters the sign-in page shows under its QR code, or " +
        "scan the code, then approve.",
    ),
    form,
    request,
  );
  // What a code or an answer here says appears under the request it is about.
  speakBeside({ status, alert }, section, request);
  return { section, stop: stopCamera };
}

/** The passcode and its countdown to the next 30-second step; recomputed when the step changes. */
function passcodeCard(record) {
  // Shown as two groups of three (as authenticator apps do); the text is the six digits.
  const first = el("span", {}, "···");
  const second = el("span", {}, "···");
  const digits = el("span", { class: "digits", "data-testid": "passcode" }, first, second);
  const bar = el("progress", {
    max: record.totp.period,
    value: record.totp.period,
    "aria-label": "Time left for this passcode",
  });
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
          await render(
            `Paired. Sign-in requests for ${account.username} now appear in Approvals, with this browser's passcode.`,
          );
          onPaired();
        } catch (error) {
          status.textContent = "";
          alert.textContent = `This browser could not be paired: ${describe(error)}`;
          start.disabled = false;
        }
      });
      replace(
        box,
        el(
          "p",
          { class: "muted" },
          `Approve sign-ins to ${account.username} from this browser, with number matching, and show its one-time ` +
            `passcode. The server keeps it as a device of its own, beside this browser's messaging device.`,
        ),
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
      el(
        "p",
        {},
        `This browser is an authenticator for ${record.username}: “${record.name}”, paired ${when(record.pairedAt)}.`,
      ),
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
  // One status and one alert, placed under the part whose button was pressed (speakBeside), at the top for
  // what arrives by itself (unpaired elsewhere); they take the focus when they start to say something.
  const said = feedback();
  const { status, alert } = said;
  const channel = el("p", { class: "muted", "data-testid": "approvals-state" });
  const list = el("ul", { class: "list requests", "aria-label": "Sign-in requests" });
  const empty = el("p", { class: "muted" }, "No sign-in requests waiting. They appear here as they arrive.");
  const body = el("div", { class: "approvals" });
  // An answer to a request: said under the list.
  speakBeside(said, list, empty);
  const items = new Map();
  let otp = null;
  let qr = null;
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
    // Home again before the body is rebuilt (they may be in it).
    channel.after(status, alert);
    items.clear();
    list.replaceChildren();
    if (!record) {
      otp = null;
      qr?.stop();
      qr = null;
      replace(body, el("p", {}, "This browser is not an authenticator for your account."), authenticatorSettings());
      return;
    }
    otp = passcodeCard(record);
    otp.tick();
    qr?.stop();
    qr = qrSignInPanel(session.account.id, { status, alert });
    replace(
      body,
      el("h2", {}, "Sign-in requests"),
      el("p", { class: "muted" }, "Approve only a sign-in you are making yourself, with the number its screen shows."),
      list,
      empty,
      qr.section,
      el("h2", {}, "One-time passcode"),
      el("p", { class: "muted" }, "For a sign-in that asks for a passcode instead of a push."),
      otp.card,
      el("h2", {}, "This authenticator"),
      authenticatorSettings(),
    );
    showRequests();
  }

  const unsubscribe = on("authenticator", (event) => {
    if (!body.isConnected) return unsubscribe();
    if (event.kind === "ignored") alert.textContent = ignoredWords;
    if (event.kind === "requests") showRequests();
    if (event.kind === "state" || event.kind === "paired" || event.kind === "removed") showState();
  });
  const ticker = setInterval(() => {
    // Left: the camera goes off with the screen.
    if (!body.isConnected) return clearInterval(ticker), qr?.stop();
    otp?.tick();
    for (const entry of items.values()) entry.tick();
  }, 1_000);

  showCard(
    app,
    { label: "Approvals" },
    el("div", { class: "actions" }, backButton(onBack)),
    channel,
    status,
    alert,
    body,
  );
  showState();
}

/**
 * For every other screen: a bar saying a sign-in request is waiting, with "Open Approvals". `isShown()`
 * says whether Approvals is on screen (the bar hides there); call `update()` when the screen changes.
 */
export function waitingBar(openApprovals, isShown) {
  const words = el("span");
  const bar = el(
    "div",
    { class: "waiting", hidden: true },
    words,
    el("button", { type: "button", class: "primary", on: { click: openApprovals } }, "Open Approvals"),
  );
  const update = () => {
    const { requests } = authenticatorStatus();
    bar.hidden = !requests.length || isShown();
    words.textContent = requests.length === 1
      ? `A sign-in request for ${requests[0].username} is waiting for your answer.`
      : `${requests.length} sign-in requests are waiting for your answer.`;
  };
  on("authenticator", (event) => ["requests", "state", "removed"].includes(event.kind) && update());
  return { bar, update };
}
