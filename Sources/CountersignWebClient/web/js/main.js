// The web client's entry: which screen is shown. Only the sign-in path is loaded up front; the screens
// after it (and their formats, keys and stores) are loaded when first opened, so the form shows sooner.
import { setSessionRenewer } from "./api.js";
import { el, replace } from "./dom.js";
import { emit, on } from "./events.js";
import { askTabs, lock, want } from "./gate-keys.js";
import { LOCKED, modulesFor } from "./screen-modules.js";
import { installPrivacyOverlay } from "./screens/privacy.js";
import { signInScreen } from "./screens/signin.js";
import { signOut } from "./server/sessions.js";
import { session } from "./session.js";
import { bindingEnded, forgetBinding, keepSignedIn, needsUnlock, resume, savedBinding } from "./stay-signed-in.js";

const app = document.getElementById("app");
// Opened by another application to sign in with Countersign (the provider's authorization endpoint).
const authorizing = location.pathname === "/oauth2/authorize";
// Opened by another application that signs out (the provider's end_session_endpoint).
const loggingOut = location.pathname === "/oauth2/logout";
const banner = document.getElementById("banner");
// What the page tells in passing (not a problem): live updates moved to this tab. A live region without
// the status role, so that a screen's own status stays the only one.
const tabNotice = el("p", { class: "notice", "aria-live": "polite", "data-testid": "tab-notice", hidden: true });
banner.after(tabNotice);
const privacy = installPrivacyOverlay(app);

/** What the banner says, with a button for what to do: set only when it changes, since an alert region
 *  is read out again at every change (a locked account's retries set it over and over). `calm`: news, not a
 *  problem (live updates moved to another tab), so neither red nor an alert. */
function say(text, action = null, { calm = false } = {}) {
  const key = `${calm ? "calm\n" : ""}${action ? `${text}\n${action.label}` : text}`;
  if (banner.dataset.said === key) return;
  banner.dataset.said = key;
  banner.classList.toggle("calm", calm);
  banner.setAttribute("role", calm ? "status" : "alert");
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

/** Back to the sign-in screen: this browser no longer stays signed in (PROTOCOL §1.1), in any tab of the
 *  account. `keepBinding`: the binding is not known to have ended (a renewal that could not reach the server). */
function signedOut(notice = "", { keepBinding = false } = {}) {
  const accountId = session.account?.id ?? signedInAs;
  authenticator?.stopAuthenticator();
  // Whatever covered the page (the privacy overlay and its prompt) goes, with the decrypted text it hid;
  // so do the key gate's unlocked keys and what the banner said of the signed-in device.
  privacy.reset();
  say("");
  tabNotice.hidden = true;
  want(null);
  if (wasSignedIn) {
    lock(accountId);
    if (!keepBinding) tabs?.postMessage({ kind: "signed-out", accountId });
  }
  wasSignedIn = false;
  if (!keepBinding) forgetSaved(accountId);
  // The screen's address goes too, without a history entry: Back does not lead into the signed-out app.
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  showSignIn(notice);
}
let wasSignedIn = false;
// The account this page was last signed in as (session.js is cleared before signedOut runs).
let signedInAs = null;
/** Forgets the saved binding when it is the account's. */
const forgetSaved = (accountId) =>
  savedBinding()
    .then((saved) => saved && (!accountId || saved.accountId === accountId) && forgetBinding(saved.id))
    .catch(() => {});
const showSignIn = (notice = "") => {
  want(null); // a signed-out tab takes no other tab's open gate
  signInScreen(app, { onSignedIn: signedIn, notice });
};

/** Answers the authorization request this page was opened with (screens/authorize.js). */
async function runAuthorization() {
  const { authorizeScreen } = await import("./screens/authorize.js");
  return authorizeScreen(app, {
    onSignIn: (words) => showSignIn(words),
  });
}

/** Answers the logout request this page was opened with (screens/logout.js). */
async function runLogout() {
  const { logoutScreen } = await import("./screens/logout.js");
  return logoutScreen(app, {
    endHere: async () => {
      const accountId = session.account?.id;
      if (inboxWired) (await import("./inbox.js")).stopInbox();
      const token = session.token;
      session.clear();
      await signOut(token).catch(() => {}); // signed out here either way
      authenticator?.stopAuthenticator();
      privacy.reset();
      want(null);
      if (wasSignedIn) {
        lock(accountId);
        tabs?.postMessage({ kind: "signed-out", accountId });
      }
      wasSignedIn = false;
      await forgetSaved(accountId);
    },
  });
}

// The other tabs of this browser: one signing out signs them all out (the server ended their sessions).
const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("countersign-session") : null;
tabs?.addEventListener("message", ({ data }) => {
  if (data?.kind === "signed-out" && session.account?.id === data.accountId) {
    endHere("Signed out in another tab of this browser.");
  }
});

// ---- Screens by address: every screen has a URL (#/messages, #/settings, …), so Back, Forward and a
// reload return to it.

/** Opens a screen from its module, loaded on first use. */
function screen(load, name, options = {}) {
  return async () => {
    const module = await load();
    if (!session.token) return; // signed out while it loaded
    module[name](app, { onBack: () => go("home"), ...options });
  };
}

const ROUTES = {
  home: () => showHome(),
  messages: (id) => screen(() => import("./screens/messages.js"), "messagesScreen", id ? { open: id } : {})(),
  settings: (id) => screen(() => import("./screens/settings.js"), "settingsScreen", { id })(),
  // Files loads its formats (and scrypt) on first use.
  files: (id) => screen(() => import("./screens/files.js"), "filesScreen", { id })(),
  approvals: screen(() => import("./screens/approvals.js"), "approvalsScreen"),
};

/** The modules of a signed-in page (the inbox's, the authenticator's, the screen the address names), loading
 *  (once) before they are used: a resumed session's are fetched while the session resumes, not after it. */
const SCREEN_MODULES = {
  home: () => import("./screens/home.js"),
  messages: () => import("./screens/messages.js"),
  settings: () => import("./screens/settings.js"),
  files: () => import("./screens/files.js"),
  approvals: () => import("./screens/approvals.js"),
};
/** Asks for `paths` (under js/) at once, not one import level at a time, by the URLs the page's import map
 *  gives them (the versioned ones the imports will ask for). */
const preload = (paths) => {
  for (const path of paths) {
    // Through the import map where the browser resolves with it (import.meta.resolve); the plain path elsewhere.
    const href = import.meta.resolve?.(`/js/${path}`) ?? `/js/${path}`;
    document.head.append(el("link", { rel: "modulepreload", href }));
  }
};
let preloaded = false;
function preloadScreen() {
  if (preloaded) return;
  preloaded = true;
  const [name] = location.hash.replace(/^#\/?/, "").split("/");
  preload(modulesFor(name));
  const screen = Object.hasOwn(SCREEN_MODULES, name) ? SCREEN_MODULES[name] : SCREEN_MODULES.home;
  const wiring = [import("./inbox.js"), import("./gate-rules.js"), import("./authenticator/runtime.js")];
  for (const loading of [...wiring, screen()]) loading.catch(() => {});
}

/** Shows the screen the address names (home for any other). */
function render() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const route = Object.hasOwn(ROUTES, name) ? ROUTES[name] : ROUTES.home;
  let id;
  try {
    id = rest.length ? decodeURIComponent(rest.join("/")) : undefined;
  } catch {
    id = undefined; // a malformed address: the screen without it
  }
  route(id);
}

/** Goes to a screen: a new history entry, so Back returns here. */
function go(route) {
  const hash = `#/${route}`;
  if (location.hash === hash) render();
  else location.hash = hash;
}
window.addEventListener("hashchange", () => session.token && render());

const openMessages = (options = {}) => go(options.open ? `messages/${encodeURIComponent(options.open)}` : "messages");

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
      }, { calm: true });
    } else {
      say("");
    }
  });
}

// This browser's authenticator (Approvals), when paired for the account, runs while it is signed in here.
let authenticator = null;
const openApprovals = () => session.token && go("approvals");
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

/** After any sign-in (or a resumed session): the inbox and authenticator wired, the session kept signed in
 *  across reloads, and the screen its address names (the home screen after a sign-in from the form). */
async function signedIn({ resumed = false } = {}) {
  preloadScreen(); // alongside the wiring's modules
  wasSignedIn = true;
  signedInAs = session.account.id;
  want(session.account.id);
  await Promise.all([wireInbox(), wireApprovals()]);
  authenticator.startAuthenticator(session.account.id).catch(() => {});
  // What the key gate did before this session (a locked reload's attempts) reaches the audit log now.
  import("./gate.js").then(({ sendHeldReports }) => sendHeldReports(session.account.id)).catch(() => {});
  if (!resumed) {
    // A sign-in binds this session anew (not kept: a reload asks to sign in).
    keepSignedIn(session.account, session.token, { fresh: true }).catch(() => {});
    // The sign-in form's own address is replaced: Back from here leaves the app, not back to the form.
    if (!location.hash && !authorizing) history.replaceState(null, "", "#/home");
  }
  if (authorizing) return runAuthorization();
  if (loggingOut) return runLogout();
  render();
}

async function showHome() {
  const { homeScreen } = await import("./screens/home.js");
  if (!session.token) return;
  // Each return home looks again for this browser's authenticator (paired meanwhile in another tab, say).
  authenticator?.startAuthenticator(session.account.id).catch(() => {});
  homeScreen(app, {
    onSignedOut: signedOut,
    onSettings: () => go("settings"),
    onMessages: () => openMessages(),
    onFiles: () => go("files"),
    onApprovals: openApprovals,
    // Its device ready (made, or unlocked): the session's binding moves to the device's key.
    onDevice: () => keepSignedIn(session.account, session.token).catch(() => {}),
  });
}

// ---- Staying signed in (PROTOCOL §1.1): a reload, a new tab or a restart resumes the session by a
// signature of the bound key; with the key gate on, after the one prompt that opens the keys.

/** A new session from the saved binding, or null when the server says it ended (forgotten then). */
async function resumed(saved, stale = null, { sent } = {}) {
  try {
    const body = await resume(saved, { sent });
    if (body.account.id !== saved.accountId) throw new Error("The server resumed another account: refused.");
    // A renewal whose page signed out (or in as someone else) meanwhile: this session is not the page's.
    if (stale && session.token !== stale) {
      signOut(body.token).catch(() => {});
      return null;
    }
    // A renewal keeps the page's device session (its own token, not this one).
    const device = session.account?.id === body.account.id ? session.device : null;
    session.set(body, { resumed: true });
    if (device) session.setDevice(device);
    return body;
  } catch (error) {
    if (bindingEnded(error)) {
      await forgetBinding(saved.id).catch(() => {});
      return null;
    }
    throw error;
  }
}

const ENDED_WORDS = "You were signed out here (from another tab, everywhere, by a password change, a lock, or " +
  "after a long time unused). Sign in again.";

async function start() {
  let saved = null;
  try {
    saved = await savedBinding();
  } catch {
    // No storage (a private window that refuses IndexedDB): nothing to resume.
  }
  if (!saved) return authorizing ? runAuthorization() : loggingOut ? runLogout() : showSignIn();
  const enter = async (signedInByPasskey = null) => {
    try {
      // A passkey's unlock signed in afresh: a full authentication, kept signed in like any sign-in.
      if (signedInByPasskey) {
        session.set(signedInByPasskey);
        return signedIn();
      }
      // The screen's modules are asked for once the resumption is on its way, not ahead of it: the browser's
      // few connections to the server would otherwise carry them first.
      if (await resumed(saved, null, { sent: preloadScreen })) return signedIn({ resumed: true });
      if (loggingOut) return runLogout();
      showSignIn(ENDED_WORDS);
    } catch (error) {
      showSignIn(`Could not sign you back in: ${describeError(error)}`);
    }
  };
  // Another tab of this browser may hold the key gate open: one unlock serves every tab (SPEC §14.7).
  if (await needsUnlock(saved).catch(() => false)) {
    preload(LOCKED); // while the tabs are asked
    if (!(await askTabs(saved.accountId))) {
      const { lockedScreen } = await import("./screens/locked.js");
      return lockedScreen(app, { saved, onUnlocked: (body) => enter(body), onSignOut: () => signedOut() });
    }
  }
  await enter();
}

const describeError = (error) => error?.message || String(error);

// A call found this page's session gone (idle or expired; api.js): renewed from the binding when that needs
// no prompt, once at a time whatever the number of calls that found it.
let renewing = null;
// How the last renewal failed: "locked" (the key gate must open first: "Locked", not signed out), "unreached"
// (the network, a refusal: the binding is kept, so a reload may still resume), or null.
let renewalFailure = null;
setSessionRenewer(() => {
  renewing ??= (async () => {
    renewalFailure = null;
    const stale = session.token;
    try {
      const saved = await savedBinding();
      if (!saved || saved.accountId !== session.account?.id) return null;
      if (await needsUnlock(saved)) {
        renewalFailure = "locked";
        return null;
      }
      return (await resumed(saved, stale))?.token ?? null;
    } catch {
      renewalFailure = "unreached";
      return null;
    } finally {
      setTimeout(() => (renewing = null), 0);
    }
  })();
  return renewing;
});

// The account session ended elsewhere (signed out everywhere, the password changed, the account locked, or
// it expired): found by the next call that used it (api.js), back to sign-in with the reason. A device
// session's token is not this one: its renewal is the push channel's.
const SESSION_ENDED_WORDS =
  "Your session here has ended: you signed out everywhere, the password was changed, the account was locked, or it " +
    "expired. Sign in again.";
async function endHere(words) {
  if (!session.account) return;
  const failure = renewalFailure;
  renewalFailure = null;
  session.clear(); // first: another call's 401 finds nothing to end
  try {
    if (inboxWired) (await import("./inbox.js")).stopInbox();
  } finally {
    // Idle with the key gate locked: "Locked" again, the binding kept (one unlock signs back in).
    if (failure === "locked") {
      authenticator?.stopAuthenticator();
      privacy.reset();
      wasSignedIn = false;
      start();
    } else {
      signedOut(words, { keepBinding: failure === "unreached" }); // also locks the key gate's keys
    }
  }
}
on("session-ended", () => endHere(SESSION_ENDED_WORDS));

// The key gate's failed-attempts limit wiped this browser's keys (js/gate.js): signed out, with its words.
on("wiped", async (words) => {
  if (inboxWired) (await import("./inbox.js")).stopInbox();
  session.clear();
  signedOut(words);
});

// The service worker (../sw.js), registered at every load so that a push reaches this browser with every page
// of it closed; a tap on its notification while a window is open brings that window to the message, or to
// Approvals (shown after the sign-in when signed out).
const ROUTED_FROM_WORKER = /^#\/(approvals|messages\/[A-Za-z0-9_-]{1,128})$/;
import("./web-push.js")
  .then(async (webPush) => {
    if (!webPush.supported()) return;
    navigator.serviceWorker.addEventListener("message", (event) => {
      const route = event.data?.type === "open" ? String(event.data.route) : "";
      if (ROUTED_FROM_WORKER.test(route)) location.hash = route;
    });
    await webPush.worker();
  })
  .catch(() => {});

start();
