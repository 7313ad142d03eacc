// The web client's entry: which screen is shown.
import { installPrivacyOverlay } from "./privacy.js";
import { filesScreen } from "./screens/files.js";
import { homeScreen } from "./screens/home.js";
import { settingsScreen } from "./screens/settings.js";
import { signInScreen } from "./screens/signin.js";

const app = document.getElementById("app");
installPrivacyOverlay(app);

function signedOut(notice = "") {
  signInScreen(app, { onSignedIn: signedIn, notice });
}

function signedIn() {
  homeScreen(app, { onSignedOut: signedOut, onSettings: () => settingsScreen(app, { onBack: signedIn }), onFiles: () => filesScreen(app, { onBack: signedIn }) });
}

signedOut();
