"""The few Countersign API exchanges the schemathesis phase does for itself: the captcha, accounts,
sign-in, device proofs (docs/PROTOCOL.md §1) and authenticator pairing (§3.2). Shared by the runner
(schemathesis_run.py), which makes the credentials, and the hooks (schemathesis_hooks.py), which make them
again when a generated request ended one (a sign-out, a device session closed)."""
import base64
import hashlib
import json

import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

# The order of the P-256 group, for low-S signatures (docs/SPEC.md §1).
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
TIMEOUT = 30


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def lv(data):
    """SPEC §1: u16(byte length) || bytes."""
    if isinstance(data, str):
        data = data.encode()
    return len(data).to_bytes(2, "big") + data


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def sign(key, message):
    """A low-S r || s signature (64 bytes) over `message`, ECDSA P-256 SHA-256."""
    r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
    if s > P256_ORDER // 2:
        s = P256_ORDER - s
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def new_key():
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key):
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def load_key(pem):
    return serialization.load_pem_private_key(pem.encode(), password=None)


def registration_message(challenge, account_id, signing_spki, encryption_spki):
    digest = hashlib.sha256(challenge + lv(account_id) + lv(signing_spki) + lv(encryption_spki)).digest()
    return b"countersign/v1 device registration\x00" + digest


def session_message(nonce, device_id):
    return b"countersign/v1 device session\x00" + hashlib.sha256(nonce + lv(device_id)).digest()


def pairing_message(pairing_key, signing_spki, encryption_spki):
    digest = hashlib.sha256(lv(pairing_key) + lv(signing_spki) + lv(encryption_spki)).digest()
    return b"countersign/v1 authenticator pairing\x00" + digest


class API:
    def __init__(self, url):
        self.url = url.rstrip("/")
        self.http = requests.Session()

    def call(self, method, path, body=None, token=None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = self.http.request(method, self.url + path, json=body, headers=headers, timeout=TIMEOUT)
        try:
            data = r.json() if r.content else None
        except ValueError:
            data = r.text
        return r.status_code, data

    def expect(self, status, method, path, body=None, token=None):
        got, data = self.call(method, path, body, token)
        if got != status:
            raise RuntimeError(f"{method} {path}: expected {status}, got {got}: {json.dumps(data)[:500]}")
        return data

    def captcha(self):
        """Solves an ALTCHA v1 challenge (docs/PROTOCOL.md §4): SHA-256(salt + number) = challenge."""
        c = self.expect(200, "GET", "/v1/captcha")
        salt, target = c["salt"].encode(), c["challenge"]
        for number in range(c["maxnumber"] + 1):
            if hashlib.sha256(salt + str(number).encode()).hexdigest() == target:
                payload = {k: c[k] for k in ("algorithm", "challenge", "salt", "signature")}
                payload["number"] = number
                return base64.b64encode(json.dumps(payload).encode()).decode()
        raise RuntimeError("the captcha has no solution up to maxnumber")

    def register(self, username, password):
        body = {"username": username, "password": password, "name": "Schema", "lastname": "Thesis"}
        body["captcha"] = self.captcha()
        return self.expect(201, "POST", "/v1/accounts", body)

    def sign_in(self, username, password, status=201, **extra):
        body = {"username": username, "password": password, "captcha": self.captcha(), **extra}
        return self.expect(status, "POST", "/v1/sessions", body)

    def register_device(self, token, account_id, name):
        """A new messaging device of the session's account: (device, private key)."""
        key = new_key()
        challenge = unb64url(self.expect(201, "POST", "/v1/devices/challenges", token=token)["challenge"])
        public = spki(key)
        body = {
            "name": name,
            "signingKey": b64url(public),
            "encryptionKey": b64url(public),
            "challenge": b64url(challenge),
            "signature": b64url(sign(key, registration_message(challenge, account_id, public, public))),
        }
        return self.expect(201, "POST", "/v1/devices", body, token), key

    def device_session(self, device_id, key):
        nonce = unb64url(self.expect(201, "POST", "/v1/device-sessions/challenges", {"deviceId": device_id})["challenge"])
        body = {"deviceId": device_id, "nonce": b64url(nonce), "signature": b64url(sign(key, session_message(nonce, device_id)))}
        return self.expect(201, "POST", "/v1/device-sessions", body)["token"]

    def pair_authenticator(self, token, name):
        """Pairs a new authenticator to the session's account: (PairingInfo, private key)."""
        pairing_key = self.expect(201, "POST", "/v1/me/mfa/pairing-keys", token=token)["key"]
        key = new_key()
        public = spki(key)
        body = {
            "pairingKey": pairing_key,
            "name": name,
            "signingKey": b64url(public),
            "encryptionKey": b64url(public),
            "signature": b64url(sign(key, pairing_message(pairing_key, public, public))),
        }
        return self.expect(201, "POST", "/v1/authenticators", body), key
