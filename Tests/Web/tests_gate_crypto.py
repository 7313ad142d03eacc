"""The key gate's cryptography (docs/SPEC.md §14, web/js/gate-crypto.js) in the browser, checked against
Python's `cryptography` and hashlib: the wrapping keys (HKDF of a PRF output, PBKDF2 of a password), the two
AES-256-GCM layers and their associated data both ways between the browser and Python, that nothing
unwrapped can be read back, and every refusal by its class (every bit of a wrapped gate key flipped)."""
import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from support import Page

ACCOUNT = "gate-0b8f4c2e-account"
DEVICE = "gate-5d1a7e90-device"
PASSWORD = "correct horse battery"


def lv(b):
    return len(b).to_bytes(2, "big") + b


def gate_key_aad(account, device, kind, credential=b""):
    return b"countersign/v1 gate key\x00" + lv(account.encode()) + lv(device.encode()) + lv(kind.encode()) + lv(credential)


def private_key_aad(account, device, spki):
    return b"countersign/v1 gate private key\x00" + lv(account.encode()) + lv(device.encode()) + lv(hashlib.sha256(spki).digest()[:16])


def prf_wrapping_key(prf):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"countersign/v1 gate prf").derive(prf)


def password_wrapping_key(password, salt, iterations):
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations, 32)


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def pkcs8(key):
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def refused(key, nonce, ciphertext, aad):
    try:
        AESGCM(key).decrypt(nonce, ciphertext, aad)
    except InvalidTag:
        return True
    return False


HELPERS = """
    const h = (s) => Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));
    const x = (b) => Array.from(new Uint8Array(b), (c) => c.toString(16).padStart(2, "0")).join("");
    const g = await import("/js/gate-crypto.js");
    const outcome = async (f) => {
        try { await f(); return "opened"; }
        catch (e) { return e instanceof g.GateError ? e.kind : `${e.name}: ${e.message}`; }
    };
    const flip = (b, bit) => { const c = b.slice(); c[bit >> 3] ^= 1 << (bit & 7); return c; };
"""


def test_gate_wrapping_keys_match_hkdf_and_pbkdf2_in_python(server, browser):
    # A wrapping key cannot be read (non-extractable), so each is checked by what it does: it wraps a known
    # 32-byte key under a fixed nonce and AAD, which Python's AES-GCM under its own derivation must match.
    prf = bytes(range(1, 33))
    salt = bytes.fromhex("a1b2c3d4e5f60718293a4b5c6d7e8f90")
    known, nonce, aad = bytes(range(100, 132)), bytes(12), b"gate vector"
    cases = [(PASSWORD, 1000), ("p\u00e4ssw\u00f6rd \u2603 \U0001F511", 1), (PASSWORD, 600_000)]
    p = Page(browser, server)
    r = p.page.evaluate(
        "async (v) => {" + HELPERS + """
            const known = await crypto.subtle.importKey("raw", h(v.known), "AES-GCM", true, ["encrypt"]);
            const wrapWith = async (w) => x(await crypto.subtle.wrapKey("raw", known, w, { name: "AES-GCM", iv: h(v.nonce), additionalData: h(v.aad) }));
            const prf = await g.prfWrappingKey(h(v.prf));
            const passwords = [];
            for (const [password, iterations] of v.cases) passwords.push(await wrapWith(await g.passwordWrappingKey(password, h(v.salt), iterations)));
            return {
                prf: await wrapWith(prf), passwords,
                extractable: prf.extractable, usages: [...prf.usages].sort(), algorithm: [prf.algorithm.name, prf.algorithm.length],
                exported: await outcome(() => crypto.subtle.exportKey("raw", prf)),
            };
        }""",
        {"prf": prf.hex(), "salt": salt.hex(), "known": known.hex(), "nonce": nonce.hex(), "aad": aad.hex(), "cases": cases},
    )
    assert r["prf"] == AESGCM(prf_wrapping_key(prf)).encrypt(nonce, known, aad).hex(), r
    for (password, iterations), got in zip(cases, r["passwords"]):
        assert got == AESGCM(password_wrapping_key(password, salt, iterations)).encrypt(nonce, known, aad).hex(), (password, iterations)
    assert r["extractable"] is False and r["usages"] == ["unwrapKey", "wrapKey"] and r["algorithm"] == ["AES-GCM", 256], r
    assert r["exported"].startswith("InvalidAccessError"), r
    p.close()


def test_gate_browser_wraps_open_in_python_only_under_their_own_ids(server, browser):
    prf, credential, prf_salt = os.urandom(32), os.urandom(20), os.urandom(32)
    p = Page(browser, server)
    r = p.page.evaluate(
        "async (v) => {" + HELPERS + """
            const ctx = { accountId: v.account, deviceId: v.device };
            const w = await g.prfWrappingKey(h(v.prf));
            const { gate, gateKey } = await g.createGate(w, g.prfMethod(h(v.credential), h(v.prfSalt)), ctx);
            // The password added with one unlock by the passkey (OWASP's 600,000 iterations).
            const method = g.passwordMethod();
            const added = await g.rewrapMethod(w, gate.methods[0], await g.passwordWrappingKey(v.password, method.salt, method.iterations), method, ctx);
            const full = g.checkGate({ ...gate, methods: [...gate.methods, added] });
            const hexed = (o) => Object.fromEntries(Object.entries(o).map(([k, b]) => [k, b instanceof Uint8Array ? x(b) : b]));
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
                signing: await key("ECDSA", ["sign", "verify"]), encryption: await key("ECDH", ["deriveBits"]),
                gateKey: [gateKey.extractable, [...gateKey.usages].sort(), await outcome(() => crypto.subtle.exportKey("raw", gateKey))],
            };
        }""",
        {"account": ACCOUNT, "device": DEVICE, "prf": prf.hex(), "credential": credential.hex(), "prfSalt": prf_salt.hex(), "password": PASSWORD},
    )
    gate = r["gate"]
    assert (gate["version"], gate["limit"], gate["failures"], len(gate["revocationToken"])) == (1, 5, 0, 64), gate
    by_prf, by_password = gate["methods"]
    assert by_prf["kind"] == "prf" and by_prf["credentialId"] == credential.hex() and by_prf["prfSalt"] == prf_salt.hex(), by_prf
    assert by_password["kind"] == "password" and by_password["iterations"] == 600_000 and len(by_password["salt"]) == 32, by_password
    assert r["gateKey"][:2] == [False, ["unwrapKey", "wrapKey"]] and r["gateKey"][2].startswith("InvalidAccessError"), r["gateKey"]

    # The passkey's copy and the password's copy hold the same gate key.
    w_prf = prf_wrapping_key(prf)
    b = {k: bytes.fromhex(v) for k, v in by_prf.items() if k != "kind"}
    gate_key = AESGCM(w_prf).decrypt(b["nonce"], b["wrappedKey"], gate_key_aad(ACCOUNT, DEVICE, "prf", credential))
    pw = {k: bytes.fromhex(v) for k, v in by_password.items() if k not in ("kind", "iterations")}
    w_password = password_wrapping_key(PASSWORD, pw["salt"], 600_000)
    assert AESGCM(w_password).decrypt(pw["nonce"], pw["wrappedKey"], gate_key_aad(ACCOUNT, DEVICE, "password")) == gate_key
    # Under any other account, device, credential or kind, neither opens.
    other_credential = credential[:-1] + bytes([credential[-1] ^ 1])
    for aad in [
        gate_key_aad(ACCOUNT + "x", DEVICE, "prf", credential),
        gate_key_aad(ACCOUNT, DEVICE + "x", "prf", credential),
        gate_key_aad(ACCOUNT, DEVICE, "prf", other_credential),
        gate_key_aad(ACCOUNT, DEVICE, "password"),
        gate_key_aad(DEVICE, ACCOUNT, "prf", credential),
        b"countersign/v1 gate key\x00",
    ]:
        assert refused(w_prf, b["nonce"], b["wrappedKey"], aad), aad
    for aad in [gate_key_aad(ACCOUNT + "x", DEVICE, "password"), gate_key_aad(ACCOUNT, DEVICE, "password", credential), gate_key_aad(ACCOUNT, DEVICE, "prf")]:
        assert refused(w_password, pw["nonce"], pw["wrappedKey"], aad), aad

    # Each private key: its PKCS#8, under the gate key, bound to its own key ID.
    nonces = {b["nonce"], pw["nonce"]}
    for role, curve_key in (("signing", r["signing"]), ("encryption", r["encryption"])):
        k = {name: bytes.fromhex(value) for name, value in curve_key.items()}
        nonces.add(k["nonce"])
        inner = AESGCM(gate_key).decrypt(k["nonce"], k["ciphertext"], private_key_aad(ACCOUNT, DEVICE, k["spki"]))
        assert inner == k["pkcs8"], role
        assert spki(serialization.load_der_private_key(inner, None)) == k["spki"], role
        other = r["encryption" if role == "signing" else "signing"]["spki"]
        for aad in [
            private_key_aad(ACCOUNT + "x", DEVICE, k["spki"]),
            private_key_aad(ACCOUNT, DEVICE + "x", k["spki"]),
            private_key_aad(ACCOUNT, DEVICE, bytes.fromhex(other)),
            gate_key_aad(ACCOUNT, DEVICE, "prf", credential),
        ]:
            assert refused(gate_key, k["nonce"], k["ciphertext"], aad), (role, aad)
    assert len(nonces) == 4, "every wrap has a nonce of its own"
    p.close()


def test_gate_python_wraps_unlock_in_the_browser_and_each_change_is_refused(server, browser):
    prf, credential, prf_salt, pw_salt, token = os.urandom(32), os.urandom(16), os.urandom(32), os.urandom(16), os.urandom(32)
    gate_key = os.urandom(32)
    v = {"account": ACCOUNT, "device": DEVICE, "password": PASSWORD, "prf": prf.hex(), "cred": credential.hex(),
         "prfSalt": prf_salt.hex(), "pwSalt": pw_salt.hex(), "token": token.hex(), "message": b"gate unlocked".hex()}
    n = os.urandom(12)
    v["prfNonce"], v["prfWrapped"] = n.hex(), AESGCM(prf_wrapping_key(prf)).encrypt(n, gate_key, gate_key_aad(ACCOUNT, DEVICE, "prf", credential)).hex()
    n = os.urandom(12)
    w_password = password_wrapping_key(PASSWORD, pw_salt, 600_000)
    v["pwNonce"], v["pwWrapped"] = n.hex(), AESGCM(w_password).encrypt(n, gate_key, gate_key_aad(ACCOUNT, DEVICE, "password")).hex()
    keys = {"signing": ec.generate_private_key(ec.SECP256R1()), "encryption": ec.generate_private_key(ec.SECP256R1())}
    for role, key in keys.items():
        n = os.urandom(12)
        v[role] = {"spki": spki(key).hex(), "nonce": n.hex(),
                   "ciphertext": AESGCM(gate_key).encrypt(n, pkcs8(key), private_key_aad(ACCOUNT, DEVICE, spki(key))).hex()}
    peer = ec.generate_private_key(ec.SECP256R1())
    v["peer"] = spki(peer).hex()
    p = Page(browser, server)
    r = p.page.evaluate(
        "async (v) => {" + HELPERS + """
            const ctx = { accountId: v.account, deviceId: v.device };
            const pub = (s, name) => crypto.subtle.importKey("spki", h(s), { name, namedCurve: "P-256" }, true, name === "ECDSA" ? ["verify"] : []);
            const sPub = await pub(v.signing.spki, "ECDSA"), ePub = await pub(v.encryption.spki, "ECDH");
            const prfM = { kind: "prf", credentialId: h(v.cred), prfSalt: h(v.prfSalt), nonce: h(v.prfNonce), wrappedKey: h(v.prfWrapped) };
            const pwM = { kind: "password", salt: h(v.pwSalt), iterations: 600000, nonce: h(v.pwNonce), wrappedKey: h(v.pwWrapped) };
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
            const props = Object.fromEntries(Object.entries({ w, gk, sk, ek }).map(([n, k]) => [n, [k.extractable, [...k.usages].sort()]]));

            // Unlocked by the password instead: the same gate key opens the same signing key.
            const wPw = await g.passwordWrappingKey(v.password, h(v.pwSalt), 600000);
            const byPassword = await sign(await g.unwrapPrivateKey(await g.openGate(wPw, pwM, ctx), sW, ctx, sPub, "signing"));

            // Every bit of the wrapped gate key and its nonce flipped, one at a time: each is refused.
            const bits = {};
            for (const field of ["nonce", "wrappedKey"]) {
                for (let i = 0; i < prfM[field].length * 8; i++) {
                    const o = await outcome(() => g.openGate(w, { ...prfM, [field]: flip(prfM[field], i) }, ctx));
                    bits[o] = (bits[o] || 0) + 1;
                }
            }
            // Every bit of a private key's nonce and one bit of each ciphertext byte, tag included.
            for (let i = 0; i < 96; i++) {
                const o = await outcome(() => g.unwrapPrivateKey(gk, { ...sW, nonce: flip(sW.nonce, i) }, ctx, sPub, "signing"));
                bits[o] = (bits[o] || 0) + 1;
            }
            for (let i = 0; i < sW.ciphertext.length; i++) {
                const o = await outcome(() => g.unwrapPrivateKey(gk, { ...sW, ciphertext: flip(sW.ciphertext, i * 8 + (i % 8)) }, ctx, sPub, "signing"));
                bits[o] = (bits[o] || 0) + 1;
            }

            const last = (b) => b.length * 8 - 1;
            const { gateKey: otherGateKey } = await g.createGate(w, g.prfMethod(h(v.cred), h(v.prfSalt)), ctx);
            const refusals = {
                gateNonce: await outcome(() => g.openGate(w, { ...prfM, nonce: flip(prfM.nonce, 0) }, ctx)),
                gateCiphertext: await outcome(() => g.openGate(w, { ...prfM, wrappedKey: flip(prfM.wrappedKey, 0) }, ctx)),
                gateTag: await outcome(() => g.openGate(w, { ...prfM, wrappedKey: flip(prfM.wrappedKey, last(prfM.wrappedKey)) }, ctx)),
                otherAccount: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: v.account + "x" })),
                otherDevice: await outcome(() => g.openGate(w, prfM, { ...ctx, deviceId: v.device + "x" })),
                accountAndDeviceSwapped: await outcome(() => g.openGate(w, prfM, { accountId: v.device, deviceId: v.account })),
                otherCredential: await outcome(() => g.openGate(w, { ...prfM, credentialId: flip(prfM.credentialId, 0) }, ctx)),
                passkeyWrapFiledAsPassword: await outcome(() => g.openGate(w, { ...pwM, nonce: prfM.nonce, wrappedKey: prfM.wrappedKey }, ctx)),
                wrongPrfOutput: await outcome(async () => g.openGate(await g.prfWrappingKey(flip(h(v.prf), 0)), prfM, ctx)),
                passwordKeyForPasskey: await outcome(() => g.openGate(wPw, prfM, ctx)),
                wrongPassword: await outcome(async () => g.openGate(await g.passwordWrappingKey(v.password + "!", h(v.pwSalt), 600000), pwM, ctx)),
                keyNonce: await outcome(() => g.unwrapPrivateKey(gk, { ...sW, nonce: flip(sW.nonce, 0) }, ctx, sPub, "signing")),
                keyCiphertext: await outcome(() => g.unwrapPrivateKey(gk, { ...sW, ciphertext: flip(sW.ciphertext, 0) }, ctx, sPub, "signing")),
                keyTag: await outcome(() => g.unwrapPrivateKey(gk, { ...sW, ciphertext: flip(sW.ciphertext, last(sW.ciphertext)) }, ctx, sPub, "signing")),
                keyOtherAccount: await outcome(() => g.unwrapPrivateKey(gk, sW, { ...ctx, accountId: v.account + "x" }, sPub, "signing")),
                keyOtherDevice: await outcome(() => g.unwrapPrivateKey(gk, sW, { ...ctx, deviceId: v.device + "x" }, sPub, "signing")),
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
                twelveMethods: await gated({ methods: Array.from({ length: 12 }, (_, i) => ({ ...prfM, credentialId: new Uint8Array(16).fill(i) })) }),
                twoPasswords: await gated({ methods: [prfM, pwM, pwM] }),
                onePasskeyTwice: await gated({ methods: [prfM, { ...prfM }] }),
                accountEmpty: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: "" })),
                accountTooLong: await outcome(() => g.openGate(w, prfM, { ...ctx, accountId: "a".repeat(256) })),
                deviceMissing: await outcome(() => g.openGate(w, prfM, { accountId: v.account })),
                roleOther: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, sPub, "hmac")),
                keyNonceShort: await outcome(() => g.unwrapPrivateKey(gk, { ...sW, nonce: sW.nonce.subarray(1) }, ctx, sPub, "signing")),
                keyCiphertextShort: await outcome(() => g.unwrapPrivateKey(gk, { ...sW, ciphertext: new Uint8Array(16) }, ctx, sPub, "signing")),
                publicKeyP384: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, p384.publicKey, "signing")),
                publicKeyMissing: await outcome(() => g.unwrapPrivateKey(gk, sW, ctx, undefined, "signing")),
                wrappingKeyOnlyEncrypts: await outcome(() => g.openGate(encryptOnly, prfM, ctx)),
                todaysKeysCannotBeWrapped: await outcome(() => g.wrapPrivateKey(gk, today.signing, ctx)),
                noKeyPair: await outcome(() => g.wrapPrivateKey(gk, undefined, ctx)),
            };
            let todaysKeys;
            try { await g.wrapPrivateKey(gk, today.signing, ctx); } catch (e) { todaysKeys = e.message; }

            // Failed attempts: counted ahead, capped at the limit, reset by a success.
            let counted = { ...gate, limit: 3 };
            const left = [];
            for (let i = 0; i < 4; i++) { left.push(g.attemptsLeft(counted)); counted = g.countAttempt(counted); }
            left.push(g.attemptsLeft(counted), g.resetAttempts(counted).failures, counted.failures);

            return { byPasskey: await sign(sk), byPassword, shared, exports, props, bits, refusals, malformed, left,
                     todaysKeys };
        }""",
        v,
    )
    public = keys["signing"].public_key()
    for signature in (r["byPasskey"], r["byPassword"]):
        raw = bytes.fromhex(signature)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, b"gate unlocked", ec.ECDSA(hashes.SHA256()))  # raises when it does not verify
    assert r["shared"] == peer.exchange(ec.ECDH(), keys["encryption"].public_key()).hex(), r["shared"]
    assert set(r["exports"].values()) == {"InvalidAccessError"} and len(r["exports"]) == 8, r["exports"]
    assert r["props"] == {
        "w": [False, ["unwrapKey", "wrapKey"]], "gk": [False, ["unwrapKey", "wrapKey"]],
        "sk": [False, ["sign"]], "ek": [False, ["deriveBits"]],
    }, r["props"]
    ciphertext_bytes = len(bytes.fromhex(v["signing"]["ciphertext"]))
    assert r["bits"] == {"unlock failed": 96 + 384 + 96 + ciphertext_bytes}, r["bits"]
    assert r["refusals"] == {name: "unlock failed" for name in r["refusals"]}, r["refusals"]
    expected = {name: "malformed" for name in r["malformed"]}
    expected["gateVersionTwo"] = "unknown version"
    assert r["malformed"] == expected, {k: got for k, got in r["malformed"].items() if got != expected[k]}
    assert r["left"] == [3, 2, 1, 0, 0, 0, 3], r["left"]
    assert r["todaysKeys"] == "malformed: a non-extractable key cannot be wrapped: rotate to keys made for the gate", r["todaysKeys"]
    p.close()
