// Settings → two-factor sign-in (docs/PROTOCOL.md §3): the authenticator app (its otpauth QR and the
// secret as text, confirmed by one code), recovery codes (shown once), pairing keys for Countersign
// authenticators (the key and its QR), number matching, and turning it all off. Each change needs a
// recent full sign-in, even when the account's interval is "Never": the server's 401
// reauthentication-required asks for the password and second factor right here (withReauth).
import { describe } from "../api.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, field, replace, speakBeside } from "../dom.js";
import { qrCode } from "../qr.js";
import { withReauth } from "./reauth.js";
import { revokeDevice } from "../server/devices.js";
import {
  confirmTOTP,
  createPairingKey,
  disableMFA,
  enrollTOTP,
  mfaStatus,
  regenerateRecoveryCodes,
  updateMFASettings,
} from "../server/mfa.js";

const matchingChoices = [
  ["ENTER_MANUALLY", "Type the number shown"],
  ["SELECT_NUMBER", "Pick it among three"],
];
const digitChoices = [
  [2, "2 digits"],
  [6, "6 digits"],
];

const time = (iso) => new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
/** Easier to read and type: groups of `size` characters. */
const grouped = (text, size, separator) => text.match(new RegExp(`.{1,${size}}`, "g")).join(separator);

function radios(legend, name, choices, current) {
  return el(
    "fieldset",
    {},
    el("legend", {}, legend),
    ...choices.map(([value, label]) => {
      const id = `${name}-${value}`;
      return el(
        "div",
        { class: "choice" },
        el("input", { type: "radio", name, id, value, checked: value === current }),
        el("label", { for: id }, label),
      );
    }),
  );
}

/**
 * The two-factor part of Settings: a section that loads the account's second factors itself. It reports
 * in the host screen's `status` and `alert` regions when given (one of each per screen), else in its own.
 */
/** An area's first view: its heading, what it is for, and the button ([label, onClick]) that begins it. */
function startView(area, heading, intro, [label, begin]) {
  const button = el("button", { type: "button", on: { click: begin } }, label);
  replace(area, el("h3", {}, heading), el("p", {}, intro), el("div", { class: "actions" }, button));
}

export function twoFactorSection({ status: hostStatus, alert: hostAlert } = {}) {
  const alert = hostAlert ?? el("p", { role: "alert", class: "alert" });
  const status = hostStatus ?? el("p", { role: "status", class: "status" });
  const slot = el("div"); // the password (and second factor) when the server asks for them
  const summary = el("dl", { class: "facts", "aria-label": "Two-factor sign-in status" });
  const appArea = el("div", { class: "card" });
  const codesArea = el("div", { class: "card" });
  const pairingArea = el("div", { class: "card" });
  const authenticatorList = el("ul", { class: "list", "aria-label": "Paired authenticators" });
  const matchingArea = el("div");
  const offArea = el("div");
  let state = null;

  const say = (text) => ((status.textContent = text), (alert.textContent = ""));
  async function guarded(action, done) {
    alert.textContent = "";
    status.textContent = "";
    try {
      await withReauth(slot, action);
      if (done) status.textContent = done;
    } catch (error) {
      alert.textContent = describe(error);
    }
  }
  async function load() {
    const body = await mfaStatus();
    show(body);
    return body;
  }

  function show(next) {
    state = next;
    const names = next.authenticators.map((a) => (a.name ? visibleText(a.name) : "Unnamed authenticator"));
    replace(
      summary,
      el("dt", {}, "Two-factor sign-in"),
      el("dd", {}, next.enabled ? "On: signing in needs a second factor" : "Off: the password alone signs in"),
      el("dt", {}, "Authenticator app"),
      el("dd", {}, next.totpApp ? "Set up" : "Not set up"),
      el("dt", {}, "Authenticators"),
      el("dd", {}, names.length ? names.join(", ") : "None paired"),
      el("dt", {}, "Recovery codes left"),
      el("dd", {}, String(next.recoveryCodesLeft)),
      next.pushSuspended ? el("dt", {}, "Push approvals") : null,
      next.pushSuspended
        ? el("dd", {}, "Suspended after a “This wasn't me” report, until you sign in with a code")
        : null,
    );
    if (!appArea.querySelector("form")) appStart();
    if (!codesArea.querySelector("ol")) codesStart();
    if (!pairingArea.querySelector(".qr")) pairingStart();
    listAuthenticators(next.authenticators);
    // Built once: a poll must not undo a choice the user has not saved yet.
    // How a push approval asks for the number matters only once an authenticator is paired.
    if (!next.authenticators.length) matchingArea.replaceChildren();
    else if (!matchingArea.firstChild) matchingForm();
    offStart();
  }

  // Authenticator app (TOTP): the secret as a QR of its otpauth URI and as text; one code confirms it.
  function appStart() {
    startView(
      appArea,
      "Authenticator app",
      "An app such as Google Authenticator or 1Password shows a new 6-digit passcode every 30 seconds.",
      [state?.totpApp ? "Replace authenticator app" : "Set up authenticator app", enroll],
    );
  }
  function enroll() {
    guarded(async () => {
      const body = await enrollTOTP();
      const code = field("Code from the app", {
        inputmode: "numeric",
        autocomplete: "one-time-code",
        maxlength: 7,
        spellcheck: "false",
      });
      const form = el(
        "form",
        {},
        code.row,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", class: "primary" }, "Confirm app"),
          el("button", { type: "button", on: { click: () => (appStart(), say("")) } }, "Cancel"),
        ),
      );
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        alert.textContent = "";
        try {
          const confirmed = await confirmTOTP({ code: code.input.value.replace(/\s/g, "") });
          appStart();
          show(confirmed);
          say(
            `Authenticator app set up: signing in now asks for a ` +
              `passcode.${confirmed.recoveryCodesLeft ? "" : " Create recovery codes too, in case you lose the app."}`,
          );
        } catch (error) {
          alert.textContent = describe(error);
          code.input.select();
        }
      });
      replace(
        appArea,
        el("h3", {}, "Authenticator app"),
        el(
          "p",
          {},
          "Scan this QR code with your authenticator app, or type the key into it. Then enter the code it shows.",
        ),
        qrCode(body.uri, { label: "QR code of the authenticator app's secret" }),
        el(
          "dl",
          { class: "facts" },
          el("dt", {}, "Key"),
          el("dd", { class: "mono secret", "data-testid": "totp-secret" }, grouped(body.secret, 4, " ")),
        ),
        el(
          "p",
          { class: "muted" },
          "Keep the key secret: anyone with it can make your passcodes. It is shown only now.",
        ),
        form,
      );
      code.input.focus();
    });
  }

  // Recovery codes: ten, each good for one sign-in; the server keeps only a hash, so they are shown once.
  function codesStart() {
    const some = state?.recoveryCodesLeft > 0;
    startView(
      codesArea,
      "Recovery codes",
      "For a sign-in when your authenticator is lost. Each code works once.",
      [some ? "Replace recovery codes" : "Create recovery codes", makeCodes],
    );
  }
  function makeCodes() {
    guarded(async () => {
      const body = await regenerateRecoveryCodes();
      const copy = el("button", { type: "button" }, "Copy codes");
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(body.codes.join("\n"));
          say("Recovery codes copied.");
        } catch {
          alert.textContent = "The browser did not allow copying: write the codes down instead.";
        }
      });
      const saved = el("button", { type: "button", class: "primary" }, "I have saved them");
      saved.addEventListener("click", async () => {
        codesStart();
        say("Recovery codes hidden. They are not shown again.");
        await load().catch((error) => (alert.textContent = describe(error)));
      });
      replace(
        codesArea,
        el("h3", {}, "Recovery codes"),
        el(
          "p",
          { class: "warning", role: "note" },
          "Save these codes now, somewhere safe: they are shown only this once. Each works once. Codes made before " +
            "no longer work.",
        ),
        el("ol", { class: "codes mono", "aria-label": "Recovery codes" }, body.codes.map((c) => el("li", {}, c))),
        el("div", { class: "actions" }, saved, copy),
      );
      saved.focus();
      await load();
    }, "New recovery codes made: the old ones no longer work.");
  }

  // Pairing keys: a Countersign authenticator (the CLI's `authenticator pair`, later a browser) scans the
  // QR of the key's countersign://pair URI or takes the key as text; the list here notices the pairing.
  function pairingStart() {
    startView(
      pairingArea,
      "Countersign authenticator",
      "An authenticator approves your sign-ins with a number match, shows passcodes and signs you in by QR code.",
      ["Create a pairing key", makePairingKey],
    );
  }
  function makePairingKey() {
    guarded(async () => {
      const body = await createPairingKey();
      const key = grouped(body.key, 4, "-");
      const server = new URL(body.uri.replace(/^countersign:/, "https:")).searchParams.get("server") || location.origin;
      const done = el("button", { type: "button", on: { click: () => (pairingStart(), say("")) } }, "Done");
      replace(
        pairingArea,
        el("h3", {}, "Countersign authenticator"),
        el(
          "p",
          {},
          `Scan this QR code with your authenticator, or type the key. It works once, until ${time(body.expiresAt)}.`,
        ),
        qrCode(body.uri, { label: "QR code of the pairing key" }),
        el(
          "dl",
          { class: "facts" },
          el("dt", {}, "Pairing key"),
          el("dd", { class: "mono secret", "data-testid": "pairing-key" }, key),
        ),
        el(
          "p",
          { class: "muted" },
          "From a terminal: ",
          el("code", {}, `countersign authenticator pair ${key} --server ${server}`),
        ),
        el("div", { class: "actions" }, done),
      );
      watchPairing(body.expiresAt);
    });
  }
  function listAuthenticators(authenticators) {
    authenticatorList.hidden = authenticators.length === 0;
    replace(
      authenticatorList,
      authenticators.map((a) => {
        const name = a.name ? visibleText(a.name) : "Unnamed authenticator";
        const unpair = el("button", { type: "button", class: "danger", "aria-label": `Unpair ${name}` }, "Unpair");
        // Revoking an authenticator's device unpairs it (a change to the second factors: re-authenticated).
        unpair.addEventListener("click", () =>
          guarded(async () => {
            await revokeDevice(a.deviceId);
            await load();
          }, `${name} unpaired: it no longer approves your sign-ins.`),
        );
        const pushOff = a.pushAllowed ? "" : "; push approvals turned off on it";
        const facts = `Paired ${new Date(a.pairedAt).toLocaleString()}${pushOff}`;
        return el(
          "li",
          {},
          el("strong", {}, a.name ? nameElement(a.name) : name),
          el("div", { class: "muted" }, facts),
          el("div", { class: "actions" }, unpair),
        );
      }),
    );
  }

  /** Polls the account's authenticators until a new one appears, the key expires, or the user leaves. */
  async function watchPairing(expiresAt) {
    const before = new Set(state.authenticators.map((a) => a.deviceId));
    const qr = pairingArea.querySelector(".qr");
    while (qr.isConnected && Date.now() < Date.parse(expiresAt)) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      if (!qr.isConnected) return;
      let now;
      try {
        now = await mfaStatus();
      } catch {
        continue; // a network blip: the next poll tries again
      }
      const added = now.authenticators.find((a) => !before.has(a.deviceId));
      if (added) {
        pairingStart();
        show(now);
        say(
          `Paired: ${visibleText(added.name)}. It now approves your ` +
            `sign-ins.${now.recoveryCodesLeft ? "" : " Create recovery codes too, in case you lose it."}`,
        );
        return;
      }
    }
    if (qr.isConnected) {
      pairingStart();
      say("The pairing key expired. Create a new one.");
    }
  }

  // Number matching (NIST SP 800-63B-4 §3.1.3): how the push approval shows the number, and how long.
  function matchingForm() {
    const form = el(
      "form",
      { "aria-label": "Number matching" },
      el("h3", {}, "Number matching"),
      el("p", {}, "A push approval asks on the authenticator for the number this sign-in page shows."),
      radios("On the authenticator", "matching", matchingChoices, state.numberMatching),
      radios("Length of the number", "digits", digitChoices, state.numberDigits),
      el("button", { type: "submit" }, "Save number matching"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const numberMatching = form.querySelector("input[name=matching]:checked")?.value;
      const numberDigits = Number(form.querySelector("input[name=digits]:checked")?.value);
      guarded(async () => {
        const body = await updateMFASettings({ numberMatching, numberDigits });
        show(body);
      }, "Number matching saved.");
    });
    replace(matchingArea, form);
  }

  // Turning it off takes a second press: it unpairs every authenticator and drops the app and the codes.
  function offStart() {
    const ask = el("button", { type: "button", class: "danger" }, "Turn two-factor sign-in off");
    ask.addEventListener("click", () => {
      const yes = el("button", { type: "button", class: "danger", on: { click: turnOff } }, "Turn off");
      replace(
        offArea,
        el(
          "p",
          { class: "warning" },
          "Turn two-factor sign-in off? Your authenticators are unpaired, the authenticator app and the recovery " +
            "codes stop working, and the password alone signs in.",
        ),
        el("div", { class: "actions" }, yes, el("button", { type: "button", on: { click: offStart } }, "Keep it on")),
      );
      yes.focus();
    });
    replace(offArea, state.enabled ? ask : null);
  }
  function turnOff() {
    guarded(async () => {
      await disableMFA();
      appStart();
      codesStart();
      pairingStart();
      matchingArea.replaceChildren(); // the server reset the policy
      await load();
    }, "Two-factor sign-in is off: the password alone signs in again, and your authenticators were unpaired.");
  }

  const section = el(
    "section",
    { "aria-label": "Two-factor sign-in", class: "card two-factor" },
    el("h2", {}, "Two-factor sign-in"),
    summary,
    hostStatus && hostAlert ? null : el("div", { class: "messages" }, status, alert),
    slot,
    appArea,
    codesArea,
    pairingArea,
    authenticatorList,
    matchingArea,
    offArea,
  );
  // What a part's button says appears under that part.
  for (const area of [appArea, codesArea, pairingArea, authenticatorList, matchingArea, offArea])
    speakBeside({ status, alert }, area);
  load().catch((error) => (alert.textContent = describe(error)));
  return section;
}
