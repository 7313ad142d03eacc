// The authenticator's protocol (js/authenticator/: challenge.js, pairing.js, passcode.js, auth-code.js;
// docs/PROTOCOL.md §3): passcodes against Vectors/otp_rfc6238.tsv and otp_rfc4226.tsv (the files OTPTests.swift
// reads), push challenges checked before anything is shown, the answer's JWS, the pairing statement and the
// checks of the pairing answer, and sign-in codes typed or scanned. (Pairing's round trip, the device session
// and the push channel need the server and IndexedDB: the browser tests cover them.)
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const { answerToken, numberAllowed, verifyChallenge } = await import(`${WEB}js/authenticator/challenge.js`);
const { authCodeFrom } = await import(`${WEB}js/authenticator/auth-code.js`);
const { authenticatorName, challengeKey, pairingAnswerProblem, pairingMessage } = await import(
  `${WEB}js/authenticator/pairing.js`
);
const { passcode } = await import(`${WEB}js/authenticator/passcode.js`);
const { browserBrand } = await import(`${WEB}js/user-agent.js`);
const { base64url, concat, fromBase64url, lv, utf8 } = await import("../../Sources/CountersignWebClient/web/js/bytes.js");
const { Q } = await import("../../Sources/CountersignWebClient/web/js/device-keys.js");
const { keyPair, pattern, text, toHex } = await import("./support/vectors.mjs");

/** The rows of a tab-separated vector file, comments left out. */
const rows = (name) =>
  text(name)
    .split("\n")
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => line.split("\t"));
const seed = (length) => utf8("1234567890".repeat(7).slice(0, length));
const hmacKey = (secret, hash) =>
  crypto.subtle.importKey("raw", secret, { name: "HMAC", hash }, false, ["sign"]);

test("passcodes are RFC 6238's for SHA-1, SHA-256 and SHA-512 (OTPTests.rfc6238Vectors)", async () => {
  const vectors = rows("otp_rfc6238.tsv");
  assert.equal(vectors.length, 18);
  const seeds = { SHA1: [20, "SHA-1"], SHA256: [32, "SHA-256"], SHA512: [64, "SHA-512"] };
  for (const [time, algorithm, code] of vectors) {
    const [length, hash] = seeds[algorithm];
    const key = await hmacKey(seed(length), hash);
    const got = await passcode({ totp: { key, period: 30, digits: 8 } }, Number(time) * 1000);
    assert.equal(got.passcode, code, `${time} ${algorithm}`);
  }
});

// OTPTests.rfc4226Vectors
test("with a period of one second, a passcode is RFC 4226's HOTP of the counter", async () => {
  const key = await hmacKey(seed(20), "SHA-1");
  const vectors = rows("otp_rfc4226.tsv");
  assert.equal(vectors.length, 10);
  for (const [counter, code] of vectors) {
    const got = await passcode({ totp: { key, period: 1, digits: 6 } }, Number(counter) * 1000);
    assert.equal(got.passcode, code, `counter ${counter}`);
  }
});

test("a passcode says its window", async () => {
  const key = await hmacKey(seed(20), "SHA-1");
  const got = await passcode({ totp: { key, period: 30, digits: 6 } }, 59_000);
  assert.deepEqual(got, { passcode: "287082", validFrom: 30, validUntil: 60, timeWindowSize: 30 });
});

/** The server's challenge key, an authenticator's record of it, and a way to sign challenges with it. */
async function challenger() {
  const server = await keyPair("ECDSA");
  const kid = toHex(createHash("sha256").update(server.spki).digest().subarray(0, 16));
  const challengeKey = { kid, spki: server.spki, issuer: `countersign:${kid}` };
  const record = { deviceId: "dev-auth", username: "ada", challengeKey };
  const now = 1_800_000_000_000;
  const iat = now / 1000;
  const claims = {
    iss: `countersign:${kid}`,
    aud: "dev-auth",
    sub: "ada",
    txn: "txn-1",
    nonce: base64url(pattern(32)),
    iat,
    exp: iat + 120,
    ctx: { address: "198.51.100.7", userAgent: "Firefox", time: iat },
    nm: { type: "SELECT_NUMBER", options: ["12", "34", "56"] },
  };
  const sign = async (c, header = { alg: "ES256", kid, typ: "JWT" }, key = server.privateKey) => {
    const input = `${base64url(utf8(JSON.stringify(header)))}.${base64url(utf8(JSON.stringify(c)))}`;
    const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, utf8(input));
    return `${input}.${base64url(new Uint8Array(signature))}`;
  };
  return { record, claims, sign, now, kid };
}

test("a challenge the server's key signed, for this authenticator and account, is shown", async () => {
  const { record, claims, sign, now } = await challenger();
  const { request } = await verifyChallenge(record, await sign(claims), now);
  assert.equal(request.txn, "txn-1");
  assert.equal(request.username, "ada");
  assert.equal(request.expiresAt, claims.exp * 1000);
  assert.deepEqual(request.matching, { type: "SELECT_NUMBER", options: ["12", "34", "56"] });
  assert.deepEqual(request.context, { address: "198.51.100.7", userAgent: "Firefox", time: claims.iat * 1000 });
  assert.equal(request.reauthentication, false);
  const reauth = await verifyChallenge(record, await sign({ ...claims, purpose: "reauthentication" }), now);
  assert.equal(reauth.request.reauthentication, true);
  // A minute of clock skew is allowed past the expiry.
  assert.ok((await verifyChallenge(record, await sign(claims), (claims.exp + 59) * 1000)).request);
});

test("every other challenge is refused, with why", async () => {
  const { record, claims, sign, now, kid } = await challenger();
  const other = await keyPair("ECDSA");
  const cases = {
    "another issuer": sign({ ...claims, iss: "countersign:someone" }),
    "not for this authenticator": sign({ ...claims, aud: "dev-other" }),
    "another account": sign({ ...claims, sub: "bob" }),
    expired: sign({ ...claims, iat: claims.iat - 200, exp: claims.iat - 61 }),
    "unknown purpose": sign({ ...claims, purpose: "payment" }),
    "bad number matching": sign({ ...claims, nm: { type: "SELECT_NUMBER", options: ["12", "12", "56"] } }),
    "bad signature": sign(claims, { alg: "ES256", kid, typ: "JWT" }, other.privateKey),
    "not signed by the server's challenge key": sign(claims, { alg: "ES256", kid: "00".repeat(16) }),
    "a critical header extension": sign(claims, { alg: "ES256", kid, crit: ["exp"] }),
    "an unencoded payload": sign(claims, { alg: "ES256", kid, b64: false }),
    "a key named by the token itself": sign(claims, { alg: "ES256", kid, jku: "https://attacker.example/" }),
    "not a JWT": sign(claims, { alg: "ES256", kid, typ: "JOSE" }),
  };
  for (const [why, token] of Object.entries(cases)) {
    assert.deepEqual(await verifyChallenge(record, await token, now), { refused: why }, why);
  }
  const good = await sign(claims);
  const [h, c, s] = good.split(".");
  const flipped = fromBase64url(s);
  flipped[5] ^= 1;
  const malformed = ["", "a.b", `${h}.${c}`, `${h}.${c}.${s}.x`, `${h}.!!.${s}`, "x".repeat(9000), 42];
  for (const token of malformed) {
    assert.deepEqual(await verifyChallenge(record, token, now), { refused: "malformed" }, String(token).slice(0, 20));
  }
  assert.deepEqual(await verifyChallenge(record, `${h}.${c}.${base64url(flipped)}`, now), { refused: "bad signature" });
  const shortNonce = await sign({ ...claims, nonce: base64url(pattern(16)) });
  assert.deepEqual(await verifyChallenge(record, shortNonce, now), { refused: "malformed" });
});

test("a sender's words are shown without controls or bidi characters", async () => {
  const { record, claims, sign, now } = await challenger();
  const ctx = { ...claims.ctx, userAgent: "Chrome\u202Eexe.evil\u0007" };
  const { request } = await verifyChallenge(record, await sign({ ...claims, ctx }), now);
  assert.doesNotMatch(request.context.userAgent, /[\u202E\u0007]/);
});

test("the answer is an ES256 JWS by the authenticator's key, low S, with the decision", async () => {
  const signing = await keyPair("ECDSA");
  const record = { deviceId: "dev-auth", signing };
  const request = { issuer: "countersign:abc", txn: "txn-1", nonce: "n0nce" };
  const token = await answerToken(record, request, { approve: true, number: "34" }, 1_800_000_000_000);
  const [h, c, s] = token.split(".");
  assert.deepEqual(JSON.parse(new TextDecoder().decode(fromBase64url(h))), { alg: "ES256", typ: "JWT" });
  assert.deepEqual(JSON.parse(new TextDecoder().decode(fromBase64url(c))), {
    iss: "dev-auth",
    aud: "countersign:abc",
    txn: "txn-1",
    nonce: "n0nce",
    iat: 1_800_000_000,
    decision: "APPROVE",
    number: "34",
  });
  const signature = fromBase64url(s);
  assert.ok(BigInt(`0x${toHex(signature.subarray(32))}`) <= (Q - 1n) / 2n, "low S");
  const ecdsa = { name: "ECDSA", hash: "SHA-256" };
  const ok = await crypto.subtle.verify(ecdsa, signing.publicKey, signature, utf8(`${h}.${c}`));
  assert.ok(ok);
  const denied = await answerToken(record, request, { approve: false, report: true });
  const deniedClaims = JSON.parse(new TextDecoder().decode(fromBase64url(denied.split(".")[1])));
  assert.equal(deniedClaims.decision, "DENY");
  assert.equal(deniedClaims.report, true);
  assert.equal(deniedClaims.number, undefined);
});

test("the pairing statement is framed as DeviceProof.pairingMessage", async () => {
  const [a, b] = [pattern(91, 1), pattern(91, 2)];
  const content = concat(lv(utf8("ABCD-EFGH")), lv(a), lv(b));
  const digest = createHash("sha256").update(content).digest();
  const want = concat(utf8("countersign/v1 authenticator pairing"), Uint8Array.of(0), digest);
  assert.deepEqual(await pairingMessage("ABCD-EFGH", a, b), want);
});

test("a sign-in code is read typed or scanned, and one for another server is refused", () => {
  globalThis.location = { origin: "https://cs.example" };
  assert.equal(authCodeFrom(" abcd-2345 "), "ABCD2345");
  assert.equal(authCodeFrom("ABCD 2345"), "ABCD2345");
  const scanned = "countersign://auth?authentication_code=ABCD2345&server=https://cs.example";
  assert.equal(authCodeFrom(scanned), "ABCD2345");
  assert.throws(() => authCodeFrom(scanned.replace("cs.example", "evil.example")), /another server/);
  for (const bad of ["ABCD-234", "ABCD-23456", "ABCD-2341", "ABCD-O345", ""]) {
    assert.throws(() => authCodeFrom(bad), bad);
  }
});

test("an approval's number is one of the options, or of a number's shape when typed", () => {
  const select = { matching: { type: "SELECT_NUMBER", options: ["12", "34", "56"] } };
  assert.equal(numberAllowed(select, "34"), true);
  assert.equal(numberAllowed(select, "35"), false);
  const typed = { matching: { type: "ENTER_MANUALLY" } };
  for (const number of ["12", "123456"]) assert.equal(numberAllowed(typed, number), true, number);
  for (const number of ["", "1", "123", "1234567", "ab"]) assert.equal(numberAllowed(typed, number), false, number);
});

test("the pairing answer must pair every authenticator, for this account, naming one device", () => {
  const account = { id: "acc", username: "ada" };
  const good = { username: "ada", deviceId: "dev", session: { device: { id: "dev" } }, authenticators: [] };
  assert.equal(pairingAnswerProblem(good, account), null);
  assert.equal(pairingAnswerProblem({ ...good, session: {} }, account), null);
  const failed = { ...good, authenticators: [{ type: "PUSH", status: "FAILED", errorMessage: "no" }] };
  assert.equal(pairingAnswerProblem(failed, account), "Pairing PUSH: FAILED no.");
  assert.match(pairingAnswerProblem({ ...good, username: "bob" }, account), /for bob, not ada/);
  const two = { ...good, session: { device: { id: "other" } } };
  assert.equal(pairingAnswerProblem(two, account), "The server's pairing answer names two devices.");
});

test("the server's challenge key is taken only when its kid is its own key ID", async () => {
  const { kid, record } = await challenger();
  const ecdsa = { name: "ECDSA", namedCurve: "P-256" };
  const key = await crypto.subtle.importKey("spki", record.challengeKey.spki, ecdsa, true, ["verify"]);
  const jwk = { ...(await crypto.subtle.exportKey("jwk", key)), alg: "ES256", use: "sig", kid };
  assert.deepEqual(await challengeKey({ keys: [jwk] }), record.challengeKey);
  await assert.rejects(challengeKey({ keys: [{ ...jwk, kid: "00".repeat(16) }] }), /does not match its key ID/);
  await assert.rejects(challengeKey({ keys: [{ ...jwk, alg: "RS256" }] }), /no challenge key/);
  await assert.rejects(challengeKey({ keys: [{ ...jwk, x: jwk.y }] }), /not a P-256 point/);
  await assert.rejects(challengeKey(null), /no challenge key/);
});

test("the authenticator names itself after the browser and the platform", () => {
  const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36";
  assert.equal(browserBrand(chrome), "Chrome");
  assert.equal(browserBrand(`${chrome} Edg/140.0`), "Edge");
  assert.equal(browserBrand("Mozilla/5.0 Firefox/140.0"), "Firefox");
  assert.equal(browserBrand("Mozilla/5.0 Version/18 Safari/605.1.15"), "Safari");
  assert.equal(browserBrand("curl/8"), "Browser");
  const name = authenticatorName({ userAgent: chrome, platform: "Linux x86_64" });
  assert.equal(name, "Approvals in Chrome on Linux");
  assert.equal(authenticatorName({ userAgent: "", platform: "" }), "Approvals in Browser on the web");
  assert.equal(authenticatorName({ userAgent: "", platform: "Win32" }), "Approvals in Browser on Windows");
});
