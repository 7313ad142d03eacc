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

from support import Page, page_function

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


def test_gate_wrapping_keys_match_hkdf_and_pbkdf2_in_python(server, browser):
    # A wrapping key cannot be read (non-extractable), so each is checked by what it does: it wraps a known
    # 32-byte key under a fixed nonce and AAD, which Python's AES-GCM under its own derivation must match.
    prf = bytes(range(1, 33))
    salt = bytes.fromhex("a1b2c3d4e5f60718293a4b5c6d7e8f90")
    known, nonce, aad = bytes(range(100, 132)), bytes(12), b"gate vector"
    cases = [(PASSWORD, 1000), ("p\u00e4ssw\u00f6rd \u2603 \U0001F511", 1), (PASSWORD, 600_000)]
    p = Page(browser, server)
    r = p.page.evaluate(
        page_function("gate-crypto.js", "wrappingKeysWrap"),
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
        page_function("gate-crypto.js", "createGateWithTwoMethods"),
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
        page_function("gate-crypto.js", "unlockPythonWrapsAndRefuseChanges"),
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
