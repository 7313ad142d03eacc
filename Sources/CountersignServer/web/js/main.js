// The web client's entry: which screen is shown.
import { onOpenRequest, subscribe } from "./inbox.js";
import { installPrivacyOverlay } from "./privacy.js";
import { messagesScreen } from "./screens/messages.js";
import { homeScreen } from "./screens/home.js";
import { settingsScreen } from "./screens/settings.js";
import { signInScreen } from "./screens/signin.js";
import { session } from "./session.js";

const app = document.getElementById("app");
const banner = document.getElementById("banner");
installPrivacyOverlay(app);

function signedOut(notice = "") {
  signInScreen(app, { onSignedIn: signedIn, notice });
}

function signedIn() {
  homeScreen(app, {
    onSignedOut: signedOut,
    onSettings: () => settingsScreen(app, { onBack: signedIn }),
    onMessages: () => messagesScreen(app, { onBack: signedIn }),
  });
}

// A click on a message notification opens that message.
onOpenRequest((id) => session.token && messagesScreen(app, { onBack: signedIn, open: id }));

// The push channel's end: a revoked device says so wherever the user is.
subscribe((event) => {
  if (event.kind !== "state") return;
  banner.textContent = event.state === "revoked" ? `This browser's device was revoked, so it no longer receives messages. ${event.detail}`.trim() : "";
});

signedOut();
