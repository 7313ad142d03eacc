// The web client's entry: which screen is shown. Only the sign-in path is loaded up front; the screens
// after it (and their formats, keys and stores) are loaded when first opened, so the form shows sooner.
import { installPrivacyOverlay } from "./privacy.js";
import { signInScreen } from "./screens/signin.js";
import { session } from "./session.js";

const app = document.getElementById("app");
const banner = document.getElementById("banner");
installPrivacyOverlay(app);

// A screen that focuses nothing itself gets its heading focused, so a screen reader announces where the
// user is and the tab order starts from the top of the new screen.
new MutationObserver(() => {
  if (app.contains(document.activeElement) && document.activeElement !== app) return;
  const heading = app.querySelector("h1");
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
}).observe(app, { childList: true });

function signedOut(notice = "") {
  signInScreen(app, { onSignedIn: signedIn, notice });
}

/** Opens a screen from its module, loaded on first use. */
function screen(load, name, options = {}) {
  return async () => {
    const module = await load();
    module[name](app, { onBack: signedIn, ...options });
  };
}

const openMessages = (options) => screen(() => import("./screens/messages.js"), "messagesScreen", options)();

let inboxWired = false;
async function wireInbox() {
  if (inboxWired) return;
  inboxWired = true;
  const { onOpenRequest, subscribe } = await import("./inbox.js");
  // A click on a message notification opens that message.
  onOpenRequest((id) => session.token && openMessages({ open: id }));
  // The push channel's end: a revoked device says so wherever the user is.
  subscribe((event) => {
    if (event.kind !== "state") return;
    banner.textContent = event.state === "revoked" ? `This browser's device was revoked, so it no longer receives messages. ${event.detail}`.trim() : "";
  });
}

async function signedIn() {
  const [{ homeScreen }] = await Promise.all([import("./screens/home.js"), wireInbox()]);
  homeScreen(app, {
    onSignedOut: signedOut,
    onSettings: screen(() => import("./screens/settings.js"), "settingsScreen"),
    onMessages: () => openMessages(),
    // Files loads its formats (and scrypt) on first use.
    onFiles: screen(() => import("./screens/files.js"), "filesScreen"),
  });
}

signedOut();
