// The web client's entry: which screen is shown.
import { installPrivacyOverlay } from "./privacy.js";
import { homeScreen } from "./screens/home.js";
import { settingsScreen } from "./screens/settings.js";
import { signInScreen } from "./screens/signin.js";

const app = document.getElementById("app");
installPrivacyOverlay(app);

function signedOut(notice = "") {
  signInScreen(app, { onSignedIn: signedIn, notice });
}

// Files loads its modules (formats, scrypt) on first use, off the sign-in form's path.
async function openFiles() {
  const { filesScreen } = await import("./screens/files.js");
  filesScreen(app, { onBack: signedIn });
}

function signedIn() {
  homeScreen(app, { onSignedOut: signedOut, onSettings: () => settingsScreen(app, { onBack: signedIn }), onFiles: openFiles });
}

signedOut();
