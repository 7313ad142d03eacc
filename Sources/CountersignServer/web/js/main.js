// The web client's entry: which screen is shown.
import { onApprovalRequest, startAuthenticator, stopAuthenticator } from "./authenticator.js";
import { onOpenRequest, subscribe } from "./inbox.js";
import { installPrivacyOverlay } from "./privacy.js";
import { approvalsScreen, waitingBar } from "./screens/approvals.js";
import { messagesScreen } from "./screens/messages.js";
import { homeScreen } from "./screens/home.js";
import { settingsScreen } from "./screens/settings.js";
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
  stopAuthenticator();
  signInScreen(app, { onSignedIn: signedIn, notice });
}

function signedIn() {
  // This browser's authenticator, when paired for the account, runs while the account is signed in here.
  startAuthenticator(session.account.id).catch(() => {});
  homeScreen(app, {
    onSignedOut: signedOut,
    onSettings: () => settingsScreen(app, { onBack: signedIn }),
    onMessages: () => messagesScreen(app, { onBack: signedIn }),
    onApprovals: () => approvalsScreen(app, { onBack: signedIn }),
  });
}

// A click on a message notification opens that message.
onOpenRequest((id) => session.token && messagesScreen(app, { onBack: signedIn, open: id }));

// A click on a sign-in request's notification, or on the bar that says one is waiting, opens Approvals.
const openApprovals = () => session.token && approvalsScreen(app, { onBack: signedIn });
onApprovalRequest(openApprovals);
const waiting = waitingBar(openApprovals, () => Boolean(app.querySelector("section[aria-label=Approvals]")));
banner.after(waiting.bar);
new MutationObserver(waiting.update).observe(app, { childList: true });

// The push channel's end: a revoked device says so wherever the user is.
subscribe((event) => {
  if (event.kind !== "state") return;
  banner.textContent = event.state === "revoked" ? `This browser's device was revoked, so it no longer receives messages. ${event.detail}`.trim() : "";
});

signedOut();
