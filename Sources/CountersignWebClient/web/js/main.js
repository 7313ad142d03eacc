// The web client's entry: which screen is shown. Only the sign-in path is loaded up front; the screens
// after it (and their formats, keys and stores) are loaded when first opened, so the form shows sooner.
import { el, replace } from "./dom.js";
import { emit, on } from "./events.js";
import { installPrivacyOverlay } from "./screens/privacy.js";
import { signInScreen } from "./screens/signin.js";
import { signOut } from "./server/sessions.js";
import { session } from "./session.js";

const app = document.getElementById("app");
const banner = document.getElementById("banner");
// What the page tells in passing (not a problem): live updates moved to this tab. A live region without
// the status role, so that a screen's own status stays the only one.
const tabNotice = el("p", { class: "notice", "aria-live": "polite", "data-testid": "tab-notice", hidden: true });
banner.after(tabNotice);
const privacy = installPrivacyOverlay(app);

/** What the banner says, with a button for what to do: set only when it changes, since an alert region
 *  is read out again at every change (a locked account's retries set it over and over). */
function say(text, action = null) {
  const key = action ? `${text}\n${action.label}` : text;
  if (banner.dataset.said === key) return;
  banner.dataset.said = key;
  if (!text) return banner.replaceChildren();
  const button = action && el("button", { type: "button", on: { click: action.run } }, action.label);
  replace(banner, text, action ? " " : null, button);
}

// Another screen shown in the page's main element is the signal "screen-changed".
new MutationObserver(() => emit("screen-changed")).observe(app, { childList: true });

// A screen that focuses nothing itself gets its heading focused, so a screen reader announces where the
// user is and the tab order starts from the top of the new screen.
on("screen-changed", () => {
  if (app.contains(document.activeElement) && document.activeElement !== app) return;
  const heading = app.querySelector("h1");
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
});

function signedOut(notice = "") {
  authenticator?.stopAuthenticator();
  // Whatever covered the page (the privacy overlay and its prompt) goes, with the decrypted text it hid;
  // so do the key gate's unlocked keys and what the banner said of the signed-in device.
  privacy.reset();
  say("");
  tabNotice.hidden = true;
  if (wasSignedIn) import("./gate-keys.js").then(({ lock }) => lock());
  signInScreen(app, { onSignedIn: signedIn, notice });
}
let wasSignedIn = false;

/** Opens a screen from its module, loaded on first use. */
function screen(load, name, options = {}) {
  return async () => {
    const module = await load();
    module[name](app, { onBack: signedIn, ...options });
  };
}

const openMessages = (options) => screen(() => import("./screens/messages.js"), "messagesScreen", options)();

/** Signs out here (the device was revoked: a new sign-in sets this browser up as a new device). */
async function signInAgain() {
  const token = session.token;
  if (inboxWired) (await import("./inbox.js")).stopInbox();
  session.clear();
  signOut(token).catch(() => {}); // signed out here either way
  signedOut("Sign in to set this browser up as a new device.");
}

let inboxWired = false;
async function wireInbox() {
  if (inboxWired) return;
  inboxWired = true;
  const [{ startInbox, whenMessagesShown }, { WIPED_WORDS }] = await Promise.all([
    import("./inbox.js"),
    import("./gate-rules.js"),
  ]);
  // A click on a message notification opens that message; none is shown while Messages is in view.
  on("message-requested", (id) => session.token && openMessages({ open: id }));
  whenMessagesShown(() => Boolean(app.querySelector("section[aria-label=Messages]")));
  let noticeTimer = null;
  // The push channel's end says so wherever the user is, once, with what to do.
  on("inbox", (event) => {
    if (event.kind === "moved-here") {
      tabNotice.textContent = "Live updates moved here from another tab of this browser: new messages show in this " +
        "tab now.";
      tabNotice.hidden = false;
      clearTimeout(noticeTimer);
      noticeTimer = setTimeout(() => (tabNotice.hidden = true), 20_000);
      return;
    }
    if (event.kind !== "state") return;
    if (event.state === "revoked") {
      // The server's words ("…was revoked; register new keys…") are not repeated after the page's; only
      // whether its data here went too (a remote wipe).
      const wiped = event.detail.includes(WIPED_WORDS) ? ` ${WIPED_WORDS}` : "";
      say(
        `This browser's device was revoked, so it receives no messages here.${wiped} Sign in again to set it up as a ` +
          `new device.`,
        { label: "Sign in again", run: signInAgain },
      );
    } else if (event.state === "locked") {
      say(`This account is locked, so this browser receives no messages until it is unlocked. ${event.detail}`.trim());
    } else if (event.state === "elsewhere") {
      tabNotice.hidden = true;
      say("Live updates moved to another tab of this browser: new messages show there, not here.", {
        label: "Get live updates here",
        run: () => session.account && startInbox(session.account.id),
      });
    } else {
      say("");
    }
  });
}

// This browser's authenticator (Approvals), when paired for the account, runs while it is signed in here.
let authenticator = null;
const openApprovals = () => session.token && screen(() => import("./screens/approvals.js"), "approvalsScreen")();
let approvalsWired = null;
function wireApprovals() {
  approvalsWired ??= (async () => {
    const [module, { waitingBar }] = await Promise.all([
      import("./authenticator/runtime.js"),
      import("./screens/approvals.js"),
    ]);
    // A click on a sign-in request's notification, or on the bar that says one is waiting, opens Approvals.
    on("approval-requested", openApprovals);
    const waiting = waitingBar(openApprovals, () => Boolean(app.querySelector("section[aria-label=Approvals]")));
    banner.after(waiting.bar);
    on("screen-changed", waiting.update);
    authenticator = module;
  })();
  return approvalsWired;
}

async function signedIn() {
  wasSignedIn = true;
  const [{ homeScreen }] = await Promise.all([import("./screens/home.js"), wireInbox(), wireApprovals()]);
  authenticator.startAuthenticator(session.account.id).catch(() => {});
  homeScreen(app, {
    onSignedOut: signedOut,
    onSettings: screen(() => import("./screens/settings.js"), "settingsScreen"),
    onMessages: () => openMessages(),
    // Files loads its formats (and scrypt) on first use.
    onFiles: screen(() => import("./screens/files.js"), "filesScreen"),
    onApprovals: openApprovals,
  });
}

// The account session ended elsewhere (signed out everywhere, the password changed, the account locked, or
// it expired): found by the next call that used it (api.js), back to sign-in with the reason. A device
// session's token is not this one: its renewal is the push channel's.
const SESSION_ENDED_WORDS =
  "Your session here has ended: you signed out everywhere, the password was changed, the account was locked, or it " +
    "expired. Sign in again.";
on("session-ended", async () => {
  if (!session.account) return;
  session.clear(); // first: another call's 401 finds nothing to end
  try {
    if (inboxWired) (await import("./inbox.js")).stopInbox();
  } finally {
    signedOut(SESSION_ENDED_WORDS); // also locks the key gate's keys
  }
});

// The key gate's failed-attempts limit wiped this browser's keys (js/gate.js): signed out, with its words.
on("wiped", async (words) => {
  if (inboxWired) (await import("./inbox.js")).stopInbox();
  session.clear();
  signedOut(words);
});

signedOut();
