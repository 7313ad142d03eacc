// Signing in to another application with Countersign (docs/PROTOCOL.md §5.5): the page at /oauth2/authorize
// passes the request it was opened with to the server, with this browser's session, and does what the answer
// says: go back to the application with a code (or its error), sign in again or step up in this screen,
// ask for consent naming the application and what it will receive, or show why nothing was sent.
import { describe } from "../api.js";
import { visibleText } from "../display-name.js";
import { el, replace } from "../dom.js";
import { oidcAuthorize } from "../server/oidc.js";
import { session } from "../session.js";
import { confirmIdentity } from "./reauth.js";

/** What each scope gives the application, in words. */
export const SCOPE_WORDS = {
  openid: "An identifier for your account (not your username), and when and how you signed in",
  profile: "Your name and username",
  offline_access: "Staying connected while you are not using it (until 30 days without use, 90 days at most)",
};

/** The request this page was opened with: its query's parameters, in order. */
export const requestParameters = (search = location.search) => [...new URLSearchParams(search)];

// When the provider asked this page to sign in (its answer's `since`): the sign-in made since is the one it
// asked for, also for a prompt=login, so the page that runs again after it sends it back.
let askedSince;

/**
 * Runs the authorization in `app`. `onSignIn(words)`: nobody is signed in here; the caller shows sign-in with
 * those words and runs this again once signed in.
 */
export async function authorizeScreen(app, { onSignIn, declined = false }) {
  const parameters = requestParameters();
  // Declined while signing in or stepping up: the application is told (access_denied), as for Deny.
  let consent = declined ? false : undefined;
  let signedInSince = askedSince;
  let steppedUp = false;
  const section = el("section", { class: "card authorize", "aria-label": "Sign in to an application" });
  replace(app, section);
  for (;;) {
    replace(section, el("h1", {}, "Signing in…"), el("p", { role: "status", class: "status" }, "Asking Countersign…"));
    let answer;
    try {
      answer = await oidcAuthorize({ parameters, consent, signedInSince }, session.token ?? null);
    } catch (error) {
      return shown(section, "Could not reach Countersign", `${describe(error)}`, { retry: true });
    }
    const name = visibleText(answer.clientName ?? "The application");
    switch (answer.action) {
      case "redirect":
        replace(section, el("h1", {}, "Back to the application…"));
        location.replace(answer.location);
        return;
      case "error":
        return shown(section, "This sign-in link doesn't work",
          "The application sent you here with a request Countersign cannot accept, so you were not signed in and " +
            "nothing was shared with it. Go back to the application and try again; if it keeps happening, tell " +
            "whoever runs it.",
          { details: answer.errorDescription ?? answer.error });
      case "consent":
        consent = await askConsent(section, answer, name);
        continue;
      case "sign-in":
        if (answer.reason === "login" || !session.token) {
          askedSince = answer.since;
          return onSignIn(`Sign in to continue to ${name}.`);
        }
        if (answer.reason === "step-up" && steppedUp) {
          const why = stepUpDeadEnd(name, answer.need);
          return shown(section, `${name} needs a stronger sign-in`, why, { settings: true });
        }
        steppedUp = answer.reason === "step-up";
        {
          let declined = false;
          await confirmIdentity(section, {
            heading: answer.reason === "step-up" ? `${name} needs a stronger sign-in` : `Sign in again for ${name}`,
            prompt: answer.reason === "step-up"
              ? stepUpWords(name, answer.need)
              : `${name} asks you to confirm it is you.`,
            submitLabel: "Continue",
            passkeyOnly: answer.need === "phishing-resistant",
            noPasskey: stepUpDeadEnd(name, answer.need),
            cancelLabel: `Cancel and return to ${name}`,
            onCancel: () => {
              declined = true;
              consent = false;
              authorizeScreen(app, { onSignIn, declined: true });
            },
          });
          if (declined) return;
        }
        signedInSince = answer.since;
        continue;
      default:
        return shown(section, "Could not sign in to the application", "The server's answer was not understood.");
    }
  }
}

const stepUpWords = (name, need) =>
  need === "phishing-resistant"
    ? `${name} accepts a passkey only: confirm with one of your passkeys.`
    : `${name} needs a stronger sign-in: enter your password, then your second factor, or use a passkey.`;

const stepUpDeadEnd = (name, need) =>
  need === "phishing-resistant"
    ? `${name} accepts only a passkey, and this account has none this browser can use. Add one in Settings → ` +
      `Passkeys, then return to ${name} and sign in again.`
    : `${name} needs a second factor or a passkey, and this account has neither yet. Add one in Settings → ` +
      `Two-factor or Passkeys, then return to ${name} and sign in again.`;

/** How long the consent screen's buttons wait before they take a press: a click or key meant for the page
 *  before (a double click, a held Enter) must not allow anything. */
export const CONSENT_ARMING_MS = 600;

/** The consent screen: resolves true for "Allow", false for "Deny". Nothing is focused and the buttons
 *  take no press until the screen has been shown for CONSENT_ARMING_MS. */
function askConsent(section, answer, name) {
  return new Promise((resolve) => {
    const allow = el("button", { type: "button", class: "primary", disabled: true, on: { click: () => resolve(true) } },
      "Allow");
    const deny = el("button", { type: "button", disabled: true, on: { click: () => resolve(false) } }, "Don't allow");
    setTimeout(() => {
      allow.disabled = false;
      deny.disabled = false;
    }, CONSENT_ARMING_MS);
    const account = visibleText(session.account?.username ?? "");
    // A request that also pairs an authenticator (PROTOCOL §6.11) says so first: once allowed, that device
    // approves this account's sign-ins. Asked every time, never remembered.
    const pairing = answer.pairingFingerprint
      ? [
        el("p", { role: "alert", class: "alert" }, `${name} also asks to add a new authenticator to this account. `,
          "Once added, it approves sign-ins to your account. Allow only if you are setting up that authenticator " +
          "yourself, now."),
        el("p", {}, "Its key fingerprint: ", el("code", { "aria-label": "Authenticator key fingerprint" },
          visibleText(answer.pairingFingerprint))),
      ]
      : [];
    replace(
      section,
      el("h1", {}, answer.pairingFingerprint ? `Allow ${name} and add an authenticator?` : `Allow ${name}?`),
      el("p", {}, "You are signed in to Countersign as ", el("strong", {}, account), "."),
      ...pairing,
      el("p", {}, `${name} asks to sign you in with this account. It will receive:`),
      el("ul", { "aria-label": "What the application receives" },
        ...(answer.scope ?? []).map((s) => el("li", {}, SCOPE_WORDS[s] ?? s)),
        answer.pairingFingerprint ? el("li", {}, "Your username, for the new authenticator to show") : null),
      el("p", { class: "muted" }, answer.pairingFingerprint
        ? "It never receives your password, your keys or your messages. This is asked each time; to remove the " +
          "authenticator later, revoke it in Settings, Devices."
        : "It never receives your password, your keys or your messages. Countersign " +
          `remembers your answer; to take access away later, disconnect ${name} in Settings, Connected apps.`),
      el("div", { class: "actions" }, allow, deny),
    );
  });
}

function shown(section, heading, words, { details, retry, settings } = {}) {
  replace(
    section,
    el("h1", {}, heading),
    el("p", { role: "alert", class: "alert" }, words),
    details ? el("details", {}, el("summary", {}, "Technical details"), el("p", { class: "muted" }, details)) : null,
    el("div", { class: "actions" },
      retry ? el("button", { type: "button", on: { click: () => location.reload() } }, "Try again") : null,
      settings ? el("a", { href: "/#/settings" }, "Open Settings") : null,
      el("a", { href: "/" }, "Go to Countersign")),
  );
}
