#!/usr/bin/env python3
"""WebAuthn bytes from code nobody here wrote, and a second opinion on them (issue 22).

    python3 webauthn_peer.py < request.json > answer.json

Each request is one JSON object with "op":
- "register": builds a registration response (RegistrationResponseJSON) as an authenticator and a
  browser would: python-fido2's CBOR and COSE encoders, a P-256 key from `cryptography`. Fields: rpId,
  origin, challenge (base64url), flags (int), signCount, seed (hex, 32 bytes: the credential key),
  credentialId (base64url), packed (bool: self attestation).
- "assert": an authentication response (AuthenticationResponseJSON) by the same key. Fields as above
  plus userHandle (base64url), type.
- "verify-registration" / "verify-authentication": py_webauthn 3.x's verdict on a response: {"ok": true,
  ...} or {"ok": false, "error": "..."}. Fields: credential (the response JSON), challenge, rpId, origin,
  and for authentication publicKey (base64url COSE) and signCount.
"""
import base64
import hashlib
import json
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cbor
from fido2.cose import ES256


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key(seed_hex: str):
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    return ec.derive_private_key(int(seed_hex, 16) % n or 1, ec.SECP256R1())


def client_data(kind: str, r: dict) -> bytes:
    return json.dumps({"type": r.get("type", kind), "challenge": r["challenge"], "origin": r["origin"], "crossOrigin": r.get("crossOrigin", False)}).encode()


def register(r: dict) -> dict:
    private = key(r["seed"])
    credential_id = unb64(r["credentialId"])
    cose = cbor.encode(ES256.from_cryptography_key(private.public_key()))
    auth_data = (
        hashlib.sha256(r["rpId"].encode()).digest()
        + bytes([r["flags"] | 0x40])
        + struct.pack(">I", r.get("signCount", 0))
        + bytes(16)
        + struct.pack(">H", len(credential_id))
        + credential_id
        + cose
    )
    cdj = client_data("webauthn.create", r)
    statement = {}
    fmt = "none"
    if r.get("packed"):
        fmt = "packed"
        # "packedOver": "other" signs other bytes than authData ‖ SHA-256(clientDataJSON): a bad self-attestation.
        signed = auth_data + hashlib.sha256(cdj).digest()
        if r.get("packedOver") == "other":
            signed = b"x" + signed
        statement = {"alg": -7, "sig": private.sign(signed, ec.ECDSA(hashes.SHA256()))}
    attestation = cbor.encode({"fmt": fmt, "attStmt": statement, "authData": auth_data})
    return {
        "id": b64(credential_id),
        "rawId": b64(credential_id),
        "type": "public-key",
        "response": {"clientDataJSON": b64(cdj), "attestationObject": b64(attestation), "transports": ["internal"]},
        "clientExtensionResults": {},
        "publicKey": b64(cose),
    }


def assertion(r: dict) -> dict:
    private = key(r["seed"])
    auth_data = hashlib.sha256(r["rpId"].encode()).digest() + bytes([r["flags"]]) + struct.pack(">I", r.get("signCount", 0))
    cdj = client_data("webauthn.get", r)
    signature = private.sign(auth_data + hashlib.sha256(cdj).digest(), ec.ECDSA(hashes.SHA256()))
    return {
        "id": r["credentialId"],
        "rawId": r["credentialId"],
        "type": "public-key",
        "response": {
            "clientDataJSON": b64(cdj),
            "authenticatorData": b64(auth_data),
            "signature": b64(signature),
            "userHandle": r.get("userHandle"),
        },
        "clientExtensionResults": {},
    }


def verify(r: dict, registration: bool) -> dict:
    from webauthn import verify_authentication_response, verify_registration_response

    try:
        if registration:
            v = verify_registration_response(
                credential=r["credential"], expected_challenge=unb64(r["challenge"]), expected_rp_id=r["rpId"],
                expected_origin=r["origin"], require_user_verification=True,
            )
            return {"ok": True, "credentialId": b64(v.credential_id), "publicKey": b64(v.credential_public_key), "signCount": v.sign_count}
        v = verify_authentication_response(
            credential=r["credential"], expected_challenge=unb64(r["challenge"]), expected_rp_id=r["rpId"],
            expected_origin=r["origin"], credential_public_key=unb64(r["publicKey"]),
            credential_current_sign_count=r["signCount"], require_user_verification=True,
        )
        return {"ok": True, "signCount": v.new_sign_count}
    except Exception as e:  # py_webauthn raises one exception type per check; the verdict is what matters
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def main():
    r = json.load(sys.stdin)
    op = r["op"]
    answer = {
        "register": lambda: register(r),
        "assert": lambda: assertion(r),
        "verify-registration": lambda: verify(r, True),
        "verify-authentication": lambda: verify(r, False),
    }[op]()
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
