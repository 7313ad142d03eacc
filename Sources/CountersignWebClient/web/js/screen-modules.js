// The modules a signed-in page needs beyond main.js's static imports (which index.html preloads), by screen: a
// resumed page asks for them all at once (<link rel="modulepreload">) while its session resumes, instead of one
// import level at a time after it. Tests/WebUnit/screen-modules.test.mjs keeps these lists equal to the static
// import graph: the wiring every signed-in page loads (the inbox, the authenticator, Approvals), then each screen's,
// and "Locked"'s.
export const WIRING = [
  "authenticator/auth-code.js", "authenticator/challenge.js", "authenticator/enrol.js", "authenticator/pairing.js",
  "authenticator/passcode.js", "authenticator/runtime.js", "authenticator/store.js", "der.js", "device.js",
  "display-name.js", "envelope.js", "file-keys.js", "gate-passkey.js", "gate-rules.js", "gate-store.js", "gate.js",
  "hpke.js", "inbox.js", "local-seal.js", "messages.js", "opened-copy.js", "peers.js", "pem.js", "pins.js", "pkcs8.js",
  "push.js",
  "screens/approvals.js", "scrypt.js", "server/authenticator.js", "server/devices.js", "server/key-gate.js",
  "server/messages.js", "server/mfa.js", "server/notifications.js", "server/push.js", "user-agent.js", "web-push.js",
  "wipe.js",
];

export const SCREENS = {
  home: [
    "gate-setup.js", "linking.js", "screens/device-ready.js", "screens/gate.js", "screens/home.js",
    "screens/link-devices.js", "screens/notifications.js",
  ],
  messages: [
    "conversations.js", "gate-setup.js", "open-order.js", "safety-number.js", "screens/composer.js",
    "screens/contacts.js", "screens/device-ready.js", "screens/gate.js", "screens/message-details.js",
    "screens/messages.js", "screens/notifications.js", "screens/safety.js",
  ],
  settings: [
    "aaguids.js", "audit-words.js", "gate-setup.js", "linking.js", "screens/approver.js", "screens/authorize.js",
    "screens/connected-apps.js", "screens/device-ready.js", "screens/gate.js", "screens/link-devices.js",
    "screens/notifications.js", "screens/passkeys.js", "screens/settings.js", "screens/two-factor.js",
    "server/oidc.js",
  ],
  files: [
    "filelock.js", "screens/files.js", "seal-error.js", "sealed-file.js", "sha256-stream.js",
  ],
  approvals: [

  ],
};

/** What "Locked" (a reload with the key gate on) imports beyond main.js's static imports. */
export const LOCKED = [
  "authenticator/challenge.js", "authenticator/runtime.js", "authenticator/store.js", "der.js", "device.js",
  "display-name.js", "envelope.js", "file-keys.js", "gate-passkey.js", "gate-rules.js", "gate-setup.js",
  "gate-store.js", "gate.js", "hpke.js", "local-seal.js", "messages.js", "opened-copy.js", "pem.js", "pins.js",
  "pkcs8.js", "push.js", "screens/gate.js", "screens/locked.js", "scrypt.js", "server/authenticator.js",
  "server/devices.js", "server/key-gate.js", "server/messages.js", "server/notifications.js", "server/push.js",
  "user-agent.js", "web-push.js", "wipe.js",
];

/** The modules to preload for the screen named `name` (home for any other), wiring included. */
export const modulesFor = (name) => [...WIRING, ...(Object.hasOwn(SCREENS, name) ? SCREENS[name] : SCREENS.home)];
