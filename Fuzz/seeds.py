#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpus, Fuzz/corpus/<target>/, from the project's committed inputs:
the vectors in Tests/CountersignCryptoTests/Vectors (sealed files, FileLock packages, envelopes, key
files, OTP secrets), the CBOR, otpauth and clientDataJSON cases the Swift tests spell out, and the
OpenAPI document's schemas (docs/openapi.yaml) for the API's JSON bodies. What no file holds (COSE keys,
authenticator data, ALTCHA payloads, device JWTs) is built here from the vectors' keys.

    python3 Fuzz/seeds.py          rewrites Fuzz/corpus (deterministic: the same files each run)

Needs Python's `cryptography` (scripts/test.sh installs it) and PyYAML for the device JWTs and the
API seeds."""

import base64
import hashlib
import hmac
import json
import re
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "Tests/CountersignCryptoTests/Vectors"
CORPUS = ROOT / "Fuzz/corpus"
corpus: dict[str, dict[str, bytes]] = {}


def seed(target: str, name: str, data: bytes) -> None:
    corpus.setdefault(target, {})[name] = data


def vector(path: Path) -> tuple[dict[str, str], bytes]:
    """A vector file: `key: value` lines, a blank line, the bytes in hex."""
    head, _, body = path.read_text().partition("\n\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    return fields, bytes.fromhex("".join(body.split()))


def armor(envelope: bytes) -> bytes:
    b64 = base64.b64encode(envelope).decode()
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return ("-----BEGIN COUNTERSIGN MESSAGE-----\n" + "\n".join(lines) + "\n-----END COUNTERSIGN MESSAGE-----\n").encode()


def pem_der(text: str) -> bytes:
    return base64.b64decode("".join(line for line in text.splitlines() if not line.startswith("-----")))


# Sealed files, FileLock packages and envelopes: every vector, the refused ones too (their bytes sit next
# to the accepted ones, where a parser's edge cases are).
for path in sorted(VECTORS.glob("*.txt")):
    fields, data = vector(path)
    if len(data) > 8192:
        continue
    name = path.stem
    if name.startswith("countersign_") or name == "unknown_format":
        seed("sealed-file", name, data)
        seed("sealed-file-roundtrip", name, data)
    if name.startswith("filelock_") or name == "unknown_format":
        seed("filelock", name, data)
        seed("filelock-roundtrip", name, data)
    if name.startswith("message_") or name == "unknown_format":
        seed("envelope", name, data)
        seed("envelope-roundtrip", name, data)
        seed("armor", name, armor(data))
    if "identity" in fields:
        key = base64.b64decode(fields["identity"])
        seed("pem", "identity_" + hashlib.sha256(key).hexdigest()[:8], key)
        seed("pkcs8", "identity_" + hashlib.sha256(key).hexdigest()[:8], pem_der(key.decode()))
    if "from" in fields:
        spki = base64.b64decode(fields["from"])
        seed("pkcs8", "from_" + hashlib.sha256(spki).hexdigest()[:8], spki)
# Plaintexts for the sealing roundtrips: flags byte (bit 0 signed, bit 1 a name up to the first 0x00).
seed("sealed-file-roundtrip", "plain_signed_named", b"\x03report.pdf\x00hello")
seed("filelock-roundtrip", "plain_short", b"hello, world")
seed("armor", "crlf", armor(vector(VECTORS / "message_basic.txt")[1]).replace(b"\n", b"\r\n"))

# Key files: PEM as read, and their DER for the DER parsers.
for path in sorted((VECTORS / "keys").glob("*.pem")):
    text = path.read_text()
    seed("pem", path.stem, text.encode())
    seed("pkcs8", path.stem, pem_der(text))
    if "rsa" in path.stem:
        seed("pingidentity", path.stem, text.encode())
seed("pem", "crlf", (VECTORS / "keys/openssl-p256.pub.pem").read_text().replace("\n", "\r\n").encode())
# PingIdentity's payload JSON: the two base64 fields (content is the format's, bytes are placeholders).
for i, (n, m) in enumerate([(128, 128), (16, 64), (1, 1)]):
    payload = {"encryptedString": base64.b64encode(bytes(range(n))).decode(),
               "signature": base64.b64encode(bytes(range(255, 255 - m, -1))).decode()}
    seed("pingidentity", f"payload_{i}", json.dumps(payload).encode())

# otpauth URIs: every one the Swift tests write, and the RFC vectors' secrets as URIs.
uris = set()
for path in sorted((ROOT / "Tests").rglob("*.swift")):
    for uri in re.findall(r'"(otpauth://[^"\\]*)"', path.read_text()):
        uris.add(uri)
for algorithm, secret in [("SHA1", b"12345678901234567890"), ("SHA256", b"12345678901234567890" * 2),
                          ("SHA512", b"1234567890" * 6 + b"1234")]:
    b32 = base64.b32encode(secret).decode().rstrip("=")
    uris.add(f"otpauth://totp/RFC%206238:alice?secret={b32}&issuer=RFC%206238&algorithm={algorithm}&digits=8&period=30")
    uris.add(f"otpauth://hotp/RFC%204226:bob?secret={b32}&issuer=RFC%204226&algorithm={algorithm}&digits=6&counter=0")
for i, uri in enumerate(sorted(uris)):
    seed("otpauth", f"uri_{i:02}", uri.encode())

# CBOR: every hex string CBORTests spells out, accepted and refused.
cbor_tests = (ROOT / "Tests/CountersignCryptoTests/CBORTests.swift").read_text()
for i, h in enumerate(sorted(set(re.findall(r'"((?:[0-9a-f]{2})+)"', cbor_tests)))):
    seed("cbor-cose", f"test_{i:02}", bytes.fromhex(h))


def cbor(v) -> bytes:
    """Canonical CBOR of ints, bytes, text, lists and dicts (in the order given)."""
    def head(major: int, n: int) -> bytes:
        if n < 24:
            return bytes([major << 5 | n])
        for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
            if n < 1 << (8 * struct.calcsize(fmt)):
                return bytes([major << 5 | info]) + struct.pack(fmt, n)
        raise ValueError(n)
    if isinstance(v, bool):
        return b"\xf5" if v else b"\xf4"
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        return head(3, len(v.encode())) + v.encode()
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(cbor(x) for x in v)
    if isinstance(v, dict):
        return head(5, len(v)) + b"".join(cbor(k) + cbor(x) for k, x in v.items())
    raise TypeError(v)


# WebAuthn: the vectors' P-256 key as a COSE key, in authenticator data and attestation objects.
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402

vector_key = serialization.load_pem_private_key(base64.b64decode(vector(VECTORS / "message_basic.txt")[0]["identity"]),
                                                password=None)
numbers = vector_key.public_key().public_numbers()
cose = cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
rsa_pub = serialization.load_pem_public_key((VECTORS / "keys/rsa1024.pub.pem").read_bytes()).public_numbers()
cose_rsa = cbor({1: 3, 3: -257, -1: rsa_pub.n.to_bytes(256, "big"), -2: b"\x01\x00\x01"})
rp = hashlib.sha256(b"localhost").digest()
credential_id = hashlib.sha256(b"credential").digest()
attested = rp + bytes([0x45]) + struct.pack(">I", 1) + bytes(16) + struct.pack(">H", 32) + credential_id + cose
assertion = rp + bytes([0x05]) + struct.pack(">I", 7)
extended = rp + bytes([0xC5]) + struct.pack(">I", 2) + bytes(16) + struct.pack(">H", 32) + credential_id + cose \
    + cbor({"credProtect": 2})
for name, data in [("cose_es256", cose), ("cose_rsa", cose_rsa)]:
    seed("cbor-cose", name, data)
client_hash = bytes(32)  # the target checks packed statements against 32 zero bytes
sig = vector_key.sign(attested + client_hash, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
seed("cbor-cose", "attestation_none", cbor({"fmt": "none", "attStmt": {}, "authData": attested}))
seed("cbor-cose", "attestation_packed", cbor({"fmt": "packed", "attStmt": {"alg": -7, "sig": sig}, "authData": attested}))
seed("cbor-cose", "attestation_x5c",
     cbor({"fmt": "packed", "attStmt": {"alg": -7, "sig": sig, "x5c": [b"\x30\x00"]}, "authData": attested}))
for name, data in [("attested", attested), ("assertion", assertion), ("extensions", extended)]:
    seed("authenticator-data", name, data)
for i, text in enumerate([
    '{"type":"webauthn.create","challenge":"Y2hhbGxlbmdl","origin":"http://localhost:8080","crossOrigin":false}',
    '{"type":"webauthn.get","challenge":"Y2hhbGxlbmdl","origin":"http://localhost:8080"}',
    '{"type":"webauthn.get","challenge":"c","origin":"https://a.example","crossOrigin":true,"topOrigin":"https://b.example"}',
    '{"type":"webauthn.get","challenge":"c","origin":"o","other_keys_can_be_added_here":"do not compare clientDataJSON"}',
]):
    seed("client-data", f"client_{i}", text.encode())

# ALTCHA: solved challenges signed with the target's key (FuzzServer.captcha), expiring in 2033.
for i, number in enumerate([0, 7, 100_000]):
    salt = f"{i:02x}a1b2c3d4e5f6?expires=2000000000"
    challenge = hashlib.sha256(f"{salt}{number}".encode()).hexdigest()
    signature = hmac.new(b"countersign fuzz altcha key", challenge.encode(), "sha256").hexdigest()
    solution = {"algorithm": "SHA-256", "challenge": challenge, "number": number, "salt": salt, "signature": signature}
    seed("altcha", f"solution_{i}", base64.b64encode(json.dumps(solution).encode()))

# Device JWTs: ES256 by the fixed signer (FuzzKeys.signer, scalar 01 02 … 20), answers and challenges.
signer = ec.derive_private_key(int.from_bytes(bytes(range(1, 33)), "big"), ec.SECP256R1())


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(claims: dict) -> bytes:
    signing_input = b64url(json.dumps({"alg": "ES256", "typ": "JWT"}).encode()) + "." + \
        b64url(json.dumps(claims, separators=(",", ":")).encode())
    r, s = decode_dss_signature(signer.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
    return (signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))).encode()


answer = {"iss": "device-1", "aud": "countersign", "txn": "txn-1", "nonce": "bm9uY2U", "iat": 1_800_000_000,
          "decision": "approve", "number": "42"}
challenge_claims = {"iss": "countersign", "aud": "device-1", "sub": "alice", "txn": "txn-1", "nonce": "bm9uY2U",
                    "iat": 1_800_000_000, "exp": 1_800_000_120,
                    "ctx": {"address": "192.0.2.1", "userAgent": "Firefox", "time": 1_800_000_000},
                    "nm": {"type": "choose", "options": ["12", "42", "77"]}}
seed("device-jwt", "answer", jwt(answer))
seed("device-jwt", "answer_deny_report", jwt({**answer, "decision": "deny", "report": True, "number": None}))
seed("device-jwt", "challenge", jwt(challenge_claims))

# The API's JSON bodies: an example of each type's OpenAPI schema, after the byte that picks the type
# (its index in FuzzAPI.types).
import yaml  # noqa: E402

api_swift = (ROOT / "Fuzz/Sources/countersign-fuzz/FuzzAPI.swift").read_text()
types = re.findall(r"^        check\((\w+)\.self\),$", api_swift, re.M)
schemas = yaml.safe_load((ROOT / "docs/openapi.yaml").read_text())["components"]["schemas"]
aliases = {"ProblemDetails": "Problem", "CaptchaChallenge": "Challenge", "SignedInSession": "Session",
           "AccountSettings": "Settings"}


def example(schema: dict, depth: int = 0):
    if "$ref" in schema:
        return example(schemas[schema["$ref"].rsplit("/", 1)[1]], depth + 1) if depth < 6 else None
    for key in ("allOf", "oneOf", "anyOf"):
        if key in schema:
            return example(schema[key][0], depth)
    if "example" in schema:
        return schema["example"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {k: example(v, depth + 1) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example(schema.get("items", {}), depth + 1)]
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "string":
        if schema.get("format") == "date-time":
            return "2026-11-26T04:52:06.123Z"
        return "AAECAw" if "base64" in (schema.get("description", "") + schema.get("format", "")).lower() else "x"
    return None


for i, name in enumerate(types):
    schema = schemas.get(aliases.get(name, name))
    body = json.dumps(example(schema), sort_keys=True).encode() if schema else b"{}"
    seed("api-json", f"{i:02}_{name}", bytes([i]) + body)
for i, frame in enumerate([
    {"type": "hello", "ticket": "dGlja2V0"}, {"type": "ready", "deviceId": "d1", "window": 64, "pingInterval": 25},
    {"type": "message", "seq": 3, "message": {"seq": 3, "id": "m1", "direction": "incoming", "from": "alice",
                                              "fromDevice": "d0", "to": ["bob"], "envelope": "Q1NNU0c",
                                              "acceptedAt": "2026-11-26T04:52:06.123Z",
                                              "deliverAt": "2026-11-26T04:52:21.123Z"}},
    {"type": "queueEmpty"}, {"type": "ack", "seqs": [1, 2, 3]},
    {"type": "mfaChallenge", "jwt": jwt(challenge_claims).decode()}, {"type": "later"},
]):
    seed("push-frame", f"frame_{i}", json.dumps(frame, sort_keys=True).encode())

shutil.rmtree(CORPUS, ignore_errors=True)
total = 0
for target, files in sorted(corpus.items()):
    (CORPUS / target).mkdir(parents=True)
    for name, data in sorted(files.items()):
        (CORPUS / target / name).write_bytes(data)
        total += len(data)
    print(f"{target:24} {len(files):3} seeds")
print(f"{'total':24} {sum(map(len, corpus.values())):3} seeds, {total} bytes")
