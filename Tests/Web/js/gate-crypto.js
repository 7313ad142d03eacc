// The key gate's cryptography (docs/SPEC.md §14, web/js/gate-crypto.js) in the page, for
// Tests/Web/tests_gate_crypto.py to check against Python's `cryptography` and hashlib. Bytes cross as hex.
// (How these files are run: page.js.)

/** What each function here starts from: hex both ways, the module, an outcome's class, a bit flipped. */
async function gateCryptoHelpers() {
  const h = (s) => Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));
  const x = (b) => Array.from(new Uint8Array(b), (c) => c.toString(16).padStart(2, "0")).join("");
  const g = await import("/js/gate-crypto.js");
  const outcome = async (f) => {
    try {
      await f();
      return "opened";
    } catch (e) {
      return e instanceof g.GateError ? e.kind : `${e.name}: ${e.message}`;
    }
  };
  const flip = (b, bit) => {
    const c = b.slice();
    c[bit >> 3] ^= 1 << (bit & 7);
    return c;
  };
  return { h, x, g, outcome, flip };
}

/** A known key wrapped under each wrapping key (the PRF's and each password's), with a fixed nonce and AAD, and
 *  what the PRF's wrapping key is (extractable, usages, algorithm, whether it exports). */
async function wrappingKeysWrap(v) {
  const { h, x, g, outcome } = await gateCryptoHelpers();
  const known = await crypto.subtle.importKey("raw", h(v.known), "AES-GCM", true, ["encrypt"]);
  const wrapWith = async (w) =>
    x(await crypto.subtle.wrapKey("raw", known, w, { name: "AES-GCM", iv: h(v.nonce), additionalData: h(v.aad) }));
  const prf = await g.prfWrappingKey(h(v.prf));
  const passwords = [];
  for (const [password, iterations] of v.cases) {
    passwords.push(await wrapWith(await g.passwordWrappingKey(password, h(v.salt), iterations)));
  }
  return {
    prf: await wrapWith(prf),
    passwords,
    extractable: prf.extractable,
    usages: [...prf.usages].sort(),
    algorithm: [prf.algorithm.name, prf.algorithm.length],
    exported: await outcome(() => crypto.subtle.exportKey("raw", prf)),
  };
}

/** A gate made by the passkey, the password added, and a signing and an encryption key wrapped under it: the
 *  gate and the wraps as hex, each key's SPKI and PKCS#8, and what the gate key is. */
async function createGateWithTwoMethods(v) {
  const { h, x, g, outcome } = await gateCryptoHelpers();
  const ctx = { accountId: v.account, deviceId: v.device };
  const w = await g.prfWrappingKey(h(v.prf));
  const { gate, gateKey } = await g.createGate(w, g.prfMethod(h(v.credential), h(v.prfSalt)), ctx);
  // The password added with one unlock by the passkey (OWASP's 600,000 iterations).
  const method = g.passwordMethod();
  const byPassword = await g.passwordWrappingKey(v.password, method.salt, method.iterations);
  const added = await g.rewrapMethod(w, gate.methods[0], byPassword, method, ctx);
  const full = g.checkGate({ ...gate, methods: [...gate.methods, added] });
  const hexed = (o) =>
    Object.fromEntries(Object.entries(o).map(([k, b]) => [k, b instanceof Uint8Array ? x(b) : b]));
  const key = async (algorithm, usages) => {
    const pair = await crypto.subtle.generateKey({ name: algorithm, namedCurve: "P-256" }, true, usages);
    return {
      ...hexed(await g.wrapPrivateKey(gateKey, pair, ctx)),
      spki: x(await crypto.subtle.exportKey("spki", pair.publicKey)),
      pkcs8: x(await crypto.subtle.exportKey("pkcs8", pair.privateKey)),
    };
  };
  return {
    gate: { ...hexed(full), methods: full.methods.map(hexed) },
    signing: await key("ECDSA", ["sign", "verify"]),
    encryption: await key("ECDH", ["deriveBits"]),
    gateKey: [
      gateKey.extractable,
      [...gateKey.usages].sort(),
      await outcome(() => crypto.subtle.exportKey("raw", gateKey)),
    ],
  };
}

/** A gate Python wrapped, unlocked here by passkey and by password; then every change to it refused by its
 *  class, every malformed input refused before any work, and failed attempts counted. */
async function unlockPythonWrapsAndRefuseChanges(v) {
  const { h, x, g, outcome, flip } = await gateCryptoHelpers();
  const ctx = { accountId: v.account, deviceId: v.device };
  const pub = (s, name) =>
    crypto.subtle.importKey("spki", h(s), { name, namedCurve: "P-256" }, true, name === "ECDSA" ? ["verify"] : []);
  const sPub = await pub(v.signing.spki, "ECDSA"),
    ePub = await pub(v.encryption.spki, "ECDH");
  const prfM = {
    kind: "prf",
    credentialId: h(v.cred),
    prfSalt: h(v.prfSalt),
    nonce: h(v.prfNonce),
    wrappedKey: h(v.prfWrapped),
  };
  const pwM = {
    kind: "password",
    salt: h(v.pwSalt),
    iterations: 600000,
    nonce: h(v.pwNonce),
    wrappedKey: h(v.pwWrapped),
  };
  const gate = g.checkGate({ version: 1, limit: 5, failures: 0, revocationToken: h(v.token), methods: [prfM, pwM] });
  const sW = { nonce: h(v.signing.nonce), ciphertext: h(v.signing.ciphertext) };
  const eW = { nonce: h(v.encryption.nonce), ciphertext: h(v.encryption.ciphertext) };

  // Unlocked by the passkey: the keys work (a signature, an ECDH secret) and none can be read back.
  const w = await g.prfWrappingKey(h(v.prf));
  const gk = await g.openGate(w, prfM, ctx);
  const sk = await g.unwrapPrivateKey(gk, sW, ctx, sPub, "signing");
  const ek = await g.unwrapPrivateKey(gk, eW, ctx, ePub, "encryption");
  const sign = async (key) => x(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, h(v.message)));
  const peer = await crypto.subtle.importKey("spki", h(v.peer), { name: "ECDH", namedCurve: "P-256" }, false, []);
  const shared = x(await crypto.subtle.deriveBits({ name: "ECDH", public: peer }, ek, 256));
  const exports = {};
  for (const [name, key] of Object.entries({ w, gk, sk, ek })) {
    for (const format of ["sk", "ek"].includes(name) ? ["pkcs8", "jwk"] : ["raw", "jwk"]) {
      exports[`${name} ${format}`] = (await outcome(() => crypto.subtle.exportKey(format, key))).split(":")[0];
    }
  }
  const props = Object.fromEntries(
    Object.entries({ w, gk, sk, ek }).map(([n, k]) => [n, [k.extractable, [...k.usages].sort()]]),
  );

  // Unlocked by the password instead: the same gate key opens the same signing key.
  const wPw = await g.passwordWrappingKey(v.password, h(v.pwSalt), 600000);
  const gkByPassword = await g.openGate(wPw, pwM, ctx);
  const byPassword = await sign(await g.unwrapPrivateKey(gkByPassword, sW, ctx, sPub, "signing"));

  // Every bit of the wrapped gate key and its nonce flipped, one at a time: each is refused.
  const bits = {};
  for (const field of ["nonce", "wrappedKey"]) {
    for (let i = 0; i < prfM[field].length * 8; i++) {
      const o = await outcome(() => g.openGate(w, { ...prfM, [field]: flip(prfM[field], i) }, ctx));
      bits[o] = (bits[o] || 0) + 1;
    }
  }
  // Every bit of a private key's nonce and one bit of each ciphertext byte, tag included.
  const unwrapSigning = (wrapped) => g.unwrapPrivateKey(gk, wrapped, ctx, sPub, "signing");
  for (let i = 0; i < 96; i++) {
    const o = await outcome(() => unwrapSigning({ ...sW, nonce: flip(sW.nonce, i) }));
    bits[o] = (bits[o] || 0) + 1;
  }
  for (let i = 0; i < sW.ciphertext.length; i++) {
    const o = await outcome(() => unwrapSigning({ ...sW, ciphertext: flip(sW.ciphertext, i * 8 + (i % 8)) }));
    bits[o] = (bits[o] || 0) + 1;
  }

  const last = (b) => b.length * 8 - 1;
  const { gateKey: otherGateKey } = await g.createGate(w, g.prfMethod(h(v.cred), h(v.prfSalt)), ctx);
  const wrongPassword = async () => g.passwordWrappingKey(v.password + "!", h(v.pwSalt), 600000);
  const refusals = {
    gateNonce: await outcome(() => g.openGate(w, { ...prfM, nonce: flip(prfM.nonce, 0) }, ctx)),
    gateCiphertext: await outcome(() => g.openGate(w, { ...prfM, wrappedKey: flip(prfM.wrappedKey, 0) }, ctx)),
    gateTag: await outcome(() =>
      g.openGate(w, { ...prfM, wrappedKey: flip(prfM.wrappedKey, last(prfM.wrappedKey)) }, ctx),
    ),
    otherAccount: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: v.account + "x" })),
    otherDevice: await outcome(() => g.openGate(w, prfM, { ...ctx, deviceId: v.device + "x" })),
    accountAndDeviceSwapped: await outcome(() => g.openGate(w, prfM, { accountId: v.device, deviceId: v.account })),
    otherCredential: await outcome(() =>
      g.openGate(w, { ...prfM, credentialId: flip(prfM.credentialId, 0) }, ctx),
    ),
    passkeyWrapFiledAsPassword: await outcome(() =>
      g.openGate(w, { ...pwM, nonce: prfM.nonce, wrappedKey: prfM.wrappedKey }, ctx),
    ),
    wrongPrfOutput: await outcome(async () => g.openGate(await g.prfWrappingKey(flip(h(v.prf), 0)), prfM, ctx)),
    passwordKeyForPasskey: await outcome(() => g.openGate(wPw, prfM, ctx)),
    wrongPassword: await outcome(async () => g.openGate(await wrongPassword(), pwM, ctx)),
    keyNonce: await outcome(() => unwrapSigning({ ...sW, nonce: flip(sW.nonce, 0) })),
    keyCiphertext: await outcome(() => unwrapSigning({ ...sW, ciphertext: flip(sW.ciphertext, 0) })),
    keyTag: await outcome(() => unwrapSigning({ ...sW, ciphertext: flip(sW.ciphertext, last(sW.ciphertext)) })),
    keyOtherAccount: await outcome(() =>
      g.unwrapPrivateKey(gk, sW, { ...ctx, accountId: v.account + "x" }, sPub, "signing"),
    ),
    keyOtherDevice: await outcome(() =>
      g.unwrapPrivateKey(gk, sW, { ...ctx, deviceId: v.device + "x" }, sPub, "signing"),
    ),
    keyUnderAnotherKeysId: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, ePub, "signing")),
    keysSwapped: await outcome(() => g.unwrapPrivateKey(gk, eW, ctx, sPub, "signing")),
    keyUnderAnotherGate: await outcome(() => g.unwrapPrivateKey(otherGateKey, sW, ctx, sPub, "signing")),
  };

  const method = (change) => outcome(() => g.checkMethod({ ...prfM, ...change }));
  const pwMethod = (change) => outcome(() => g.checkMethod({ ...pwM, ...change }));
  const gated = (change) => outcome(() => g.checkGate({ ...gate, ...change }));
  const p384 = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-384" }, true, ["sign", "verify"]);
  const { makeDeviceKeys } = await import("/js/device-keys.js");
  const today = await makeDeviceKeys();
  const encryptOnly = await crypto.subtle.importKey("raw", h(v.prf), "AES-GCM", false, ["encrypt"]);
  const twelveMethods = Array.from({ length: 12 }, (_, i) => ({ ...prfM, credentialId: new Uint8Array(16).fill(i) }));
  const malformed = {
    prfShort: await outcome(() => g.prfWrappingKey(h(v.prf).subarray(1))),
    prfLong: await outcome(() => g.prfWrappingKey(new Uint8Array(33).fill(1))),
    prfZeros: await outcome(() => g.prfWrappingKey(new Uint8Array(32))),
    prfNotBytes: await outcome(() => g.prfWrappingKey(Array.from(h(v.prf)))),
    passwordEmpty: await outcome(() => g.passwordWrappingKey("", h(v.pwSalt), 1000)),
    passwordSaltShort: await outcome(() => g.passwordWrappingKey("pw", h(v.pwSalt).subarray(1), 1000)),
    passwordIterationsZero: await outcome(() => g.passwordWrappingKey("pw", h(v.pwSalt), 0)),
    passwordIterationsFraction: await outcome(() => g.passwordWrappingKey("pw", h(v.pwSalt), 1000.5)),
    passwordIterationsHuge: await outcome(() => g.passwordWrappingKey("pw", h(v.pwSalt), 10000001)),
    nonceShort: await method({ nonce: new Uint8Array(11) }),
    nonceLong: await method({ nonce: new Uint8Array(13) }),
    nonceMissing: await method({ nonce: undefined }),
    wrappedKeyShort: await method({ wrappedKey: prfM.wrappedKey.subarray(1) }),
    wrappedKeyLong: await method({ wrappedKey: new Uint8Array(49) }),
    credentialShort: await method({ credentialId: new Uint8Array(15) }),
    credentialLong: await method({ credentialId: new Uint8Array(1024) }),
    prfSaltShort: await method({ prfSalt: new Uint8Array(31) }),
    kindOther: await method({ kind: "pin" }),
    iterationsBelowOwasp: await pwMethod({ iterations: 599999 }),
    iterationsAboveCap: await pwMethod({ iterations: 10000001 }),
    passwordSaltLong: await pwMethod({ salt: new Uint8Array(17) }),
    gateVersionZero: await gated({ version: 0 }),
    gateVersionTwo: await gated({ version: 2 }),
    limitTwo: await gated({ limit: 2 }),
    limitEleven: await gated({ limit: 11 }),
    limitFraction: await gated({ limit: 4.5 }),
    failuresNegative: await gated({ failures: -1 }),
    failuresPastLimit: await gated({ failures: 6 }),
    tokenShort: await gated({ revocationToken: new Uint8Array(31) }),
    noMethods: await gated({ methods: [] }),
    twelveMethods: await gated({ methods: twelveMethods }),
    twoPasswords: await gated({ methods: [prfM, pwM, pwM] }),
    onePasskeyTwice: await gated({ methods: [prfM, { ...prfM }] }),
    accountEmpty: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: "" })),
    accountTooLong: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: "a".repeat(256) })),
    deviceMissing: await outcome(() => g.openGate(w, prfM, { accountId: v.account })),
    roleOther: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, sPub, "hmac")),
    keyNonceShort: await outcome(() => unwrapSigning({ ...sW, nonce: sW.nonce.subarray(1) })),
    keyCiphertextShort: await outcome(() => unwrapSigning({ ...sW, ciphertext: new Uint8Array(16) })),
    publicKeyP384: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, p384.publicKey, "signing")),
    publicKeyMissing: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, undefined, "signing")),
    wrappingKeyOnlyEncrypts: await outcome(() => g.openGate(encryptOnly, prfM, ctx)),
    todaysKeysCannotBeWrapped: await outcome(() => g.wrapPrivateKey(gk, today.signing, ctx)),
    noKeyPair: await outcome(() => g.wrapPrivateKey(gk, undefined, ctx)),
  };
  let todaysKeys;
  try {
    await g.wrapPrivateKey(gk, today.signing, ctx);
  } catch (e) {
    todaysKeys = e.message;
  }

  // Failed attempts: counted ahead, capped at the limit, reset by a success.
  let counted = { ...gate, limit: 3 };
  const left = [];
  for (let i = 0; i < 4; i++) {
    left.push(g.attemptsLeft(counted));
    counted = g.countAttempt(counted);
  }
  left.push(g.attemptsLeft(counted), g.resetAttempts(counted).failures, counted.failures);

  return { byPasskey: await sign(sk), byPassword, shared, exports, props, bits, refusals, malformed, left, todaysKeys };
}
