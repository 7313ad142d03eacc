// session.js: the signed-in session, in memory only, refused when the server signed in someone else.
import assert from "node:assert/strict";
import test from "node:test";

import { session } from "../../Sources/CountersignWebClient/web/js/session.js";

const signedIn = (username) => ({
  token: "cs_token",
  account: { id: "acc-1", username },
  expiresAt: "2030-01-01T00:00:00Z",
});

test("nothing is signed in at first, and after clear()", () => {
  session.clear();
  const state = [session.token, session.account, session.deviceId, session.deviceToken, session.device];
  assert.deepEqual(state, [null, null, null, null, null]);
  assert.equal(session.authenticatedAt, 0);
  assert.equal(session.passwordless, false);
});

test("a session for the user asked for is kept, with its device session", () => {
  const before = Date.now();
  session.set(signedIn("ada"), { username: "Ada" });
  assert.equal(session.token, "cs_token");
  assert.equal(session.account.username, "ada");
  assert.ok(session.authenticatedAt >= before);
  session.setDevice({ token: "cs_device", device: { id: "dev-1" } });
  assert.equal(session.deviceToken, "cs_device");
  assert.equal(session.deviceId, "dev-1");
  session.clear();
  assert.equal(session.token, null);
});

test("the server signing in another user than the one asked for is refused", () => {
  session.clear();
  const mallory = signedIn("mallory");
  assert.throws(() => session.set(mallory, { username: "ada" }), /signed in mallory when ada was asked for/);
  assert.equal(session.token, null);
});

test("a passwordless (QR) sign-in is marked until the password confirms it", () => {
  session.set(signedIn("ada"), { passwordless: true });
  assert.equal(session.passwordless, true);
  session.authenticated();
  assert.equal(session.passwordless, false);
  session.clear();
  session.authenticated(); // nothing signed in: nothing to mark
  assert.equal(session.authenticatedAt, 0);
});

test("a device session set before sign-in is not kept", () => {
  session.clear();
  session.setDevice({ token: "cs_device", device: { id: "dev-1" } });
  assert.equal(session.deviceToken, null);
});
