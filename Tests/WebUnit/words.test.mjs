// The words a person reads once: how long a delayed sign-in waits (wait-words.js), what the browser and
// system are called (user-agent.js), and the audit log's events (audit-words.js) for every kind the API
// document lists.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import { auditWords, KINDS_WITH_WORDS } from "../../Sources/CountersignWebClient/web/js/audit-words.js";
import { agentWords, deviceName, systemName } from "../../Sources/CountersignWebClient/web/js/user-agent.js";
import { clockWords, durationWords, retryWords } from "../../Sources/CountersignWebClient/web/js/wait-words.js";

test("a wait in words, rounded up, and the retry sentence", () => {
  assert.equal(durationWords(1), "1 second");
  assert.equal(durationWords(45_000), "45 seconds");
  assert.equal(durationWords(59_001), "1 minute");
  assert.equal(durationWords(60_000), "1 minute");
  assert.equal(durationWords(60_001), "2 minutes");
  assert.equal(durationWords(30 * 60_000), "30 minutes");
  assert.equal(durationWords(60 * 60_000), "1 hour");
  assert.equal(durationWords(65 * 60_000), "1 hour 5 minutes");
  assert.equal(durationWords(-5), "1 second", "a retry time already past still says to wait a moment");
  const at = Date.UTC(2026, 10, 29, 0, 43);
  assert.equal(clockWords(at, "UTC"), "00:43");
  assert.equal(retryWords(at, at - 30 * 60_000, "UTC"), "Try again in 30 minutes (at 00:43).");
});

test("user agents in words, and a device's name numbered past the account's names", () => {
  const linux = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36";
  const mac = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Version/18 Safari/605.1.15";
  const iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Version/18 Mobile Safari/604.1";
  const android = "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 Chrome/140.0 Mobile Safari/537.36";
  const windows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/140.0 Safari/537.36 Edg/140.0";
  assert.equal(agentWords(linux), "Chrome on Linux");
  assert.equal(agentWords(mac), "Safari on macOS");
  assert.equal(agentWords(iphone), "Safari on iPhone");
  assert.equal(agentWords(android), "Chrome on Android");
  assert.equal(agentWords(windows), "Edge on Windows");
  assert.equal(agentWords("countersign/1.0"), "Browser on the web");
  assert.equal(systemName("", "Linux x86_64"), "Linux", "the platform when the user agent says nothing");
  assert.equal(deviceName(linux, "Linux x86_64", []), "Chrome on Linux");
  assert.equal(deviceName(linux, "Linux x86_64", ["Chrome on Linux"]), "Chrome on Linux 2");
  assert.equal(deviceName(linux, "Linux x86_64", ["Chrome on Linux", "Chrome on Linux 2"]), "Chrome on Linux 3");
  assert.ok(deviceName("x".repeat(300), "y".repeat(300), []).length <= 64);
});

// The kinds the server audits, as docs/openapi.yaml lists them (the server's AuditKind has a test that
// they agree): each has words of its own, never the raw name.
const openapi = readFileSync(new URL("../../docs/openapi.yaml", import.meta.url), "utf8");
const schema = openapi.slice(openapi.indexOf("    AuditEvent:"), openapi.indexOf("    AuditPage:"));
const listed = (name) =>
  schema
    .slice(schema.indexOf(`${name}: {type: string, `))
    .match(/\[([^\]]*)\]/)[1]
    .split(",")
    .map((word) => word.trim())
    .filter(Boolean);

test("every audited kind and every documented outcome reads as words", () => {
  const kinds = listed("kind");
  assert.ok(kinds.length >= 25, kinds.join());
  assert.deepEqual(kinds.filter((kind) => !KINDS_WITH_WORDS.has(kind)), []);
  assert.deepEqual([...KINDS_WITH_WORDS].filter((kind) => !kinds.includes(kind)), [], "words for a kind not listed");
  // Every outcome the document gives as an example has words of its own (the fallback reads "Sign-in: …").
  const outcomes = listed("outcome");
  assert.ok(outcomes.length >= 10, outcomes.join());
  const fallback = outcomes.filter((outcome) => auditWords({ kind: "sign-in", outcome }).what.startsWith("Sign-in: "));
  assert.deepEqual(fallback, []);
});

test("audit events in words: what happened, whether it went wrong", () => {
  const cases = [
    [{ kind: "sign-in", outcome: "success" }, "Signed in", false],
    [{ kind: "sign-in", outcome: "success-push" }, "Signed in, approved on your authenticator", false],
    [{ kind: "sign-in", outcome: "success-passkey" }, "Signed in with a passkey", false],
    [{ kind: "passkey", outcome: "created" }, "Passkey added", false],
    [{ kind: "passkey", outcome: "wrong-passkey-locked" }, "Passkey refused: not accepted; account locked", true],
    [{ kind: "key-gate", outcome: "unlock-failed-password" }, "Key gate: unlock failed (password)", true],
    [{ kind: "mfa-settings", outcome: "SELECT_NUMBER-3" }, "Number matching set: pick the number, 3 digits", false],
    [{ kind: "auth-code", outcome: "approve-completed" }, "Authentication code approved", false],
    [{ kind: "sign-in", outcome: "wrong-password" }, "Sign-in refused: wrong password", true],
    [{ kind: "sign-in", outcome: "wrong-password-delayed" }, "Sign-in refused: wrong password; sign-in delayed", true],
    [{ kind: "sign-in", outcome: "wrong-password-locked" }, "Sign-in refused: wrong password; account locked", true],
    [{ kind: "sign-in", outcome: "refused-locked" }, "Sign-in refused: the account is locked", true],
    [{ kind: "sign-in", outcome: "password-ok-second-factor-pending" }, "Password accepted; second step pending", false],
    [{ kind: "device-session", outcome: "success" }, "Device session opened", false],
    [{ kind: "device-register", outcome: "success" }, "Device added", false],
    [{ kind: "mfa", outcome: "second-factor-denied" }, "Second step failed: denied", true],
    [{ kind: "mfa", outcome: "approved-totp" }, "Second step approved with an authenticator code", false],
    [{ kind: "session-resumed", outcome: "success" }, "Signed in again after a reload", false],
  ];
  for (const [event, what, failed] of cases) {
    assert.deepEqual(auditWords(event), { what, failed }, JSON.stringify(event));
  }
  // An outcome this client does not know yet is shown as words, not dropped or as code.
  const unknown = auditWords({ kind: "sign-in", outcome: "some-new-thing" });
  assert.equal(unknown.what, "Sign-in: some new thing");
  const unknownKind = auditWords({ kind: "brand-new", outcome: "success" });
  assert.equal(unknownKind.what, "Brand new");
});
