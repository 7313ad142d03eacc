// The signed-in session and this browser's device session: in memory only (never localStorage or a cookie), so
// no other page or script on another origin can read it. A reload resumes it by a signature instead
// (stay-signed-in.js).
import { normalisedUsername } from "./rules.js";

let current = null;

export const session = {
  get token() {
    return current?.token ?? null;
  },
  get account() {
    return current?.account ?? null;
  },
  get deviceId() {
    return current?.device?.device?.id ?? null;
  },
  get deviceToken() {
    return current?.device?.token ?? null;
  },
  /**
   * Keeps a signed-in session. With `username`, only if the server signed in that very user (a server
   * answering with another account would otherwise hand this tab that account's keys and messages).
   * `passwordless`: a QR sign-in (an authenticator alone), which the server lets register no device and
   * change nothing sensitive until the password (and second factor) confirm it.
   */
  set(signedIn, { username, passwordless = false, resumed = false } = {}) {
    const asked = username === undefined ? undefined : normalisedUsername(username);
    if (asked !== undefined && (!asked || normalisedUsername(String(signedIn?.account?.username)) !== asked)) {
      throw new Error(`The server signed in ${signedIn?.account?.username} when ${username} was asked for: refused.`);
    }
    current = {
      token: signedIn.token,
      account: signedIn.account,
      expiresAt: signedIn.expiresAt,
      device: null,
      // A resumed session (stay-signed-in.js) was last fully authenticated when the server says, not now.
      authenticatedAt: resumed ? Date.parse(signedIn.authenticatedAt) || 0 : Date.now(),
      passwordless: resumed ? Date.parse(signedIn.authenticatedAt) === 0 : passwordless,
    };
  },
  get passwordless() {
    return current?.passwordless ?? false;
  },
  /** When the password (or a second factor) was last given: sign-in or re-authentication. */
  get authenticatedAt() {
    return current?.authenticatedAt ?? 0;
  },
  authenticated() {
    if (current) Object.assign(current, { authenticatedAt: Date.now(), passwordless: false });
  },
  /** This page's device session ({ token, device }), or null. */
  get device() {
    return current?.device ?? null;
  },
  setDevice(deviceSession) {
    if (current) current.device = deviceSession;
  },
  clear() {
    current = null;
  },
};
