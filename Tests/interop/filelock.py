#!/usr/bin/env python3
"""An independent FileLock package implementation on Python's `cryptography`, used by the CLI tests to
check that Countersign reads and writes the FileLock iOS app's format byte for byte (docs/SPEC.md §3).

  filelock.py seal PUBKEY.pem IN OUT     package IN to PUBKEY (FileLock raw-point or SPKI PEM)
  filelock.py open KEY.pem IN OUT        open a package with an unencrypted PKCS#8 key
  filelock.py apple-vector               open a ciphertext made by Apple's Security.framework
"""
import base64, os, struct, sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF


def x963_key(shared, ephemeral_point, algorithm):
    return X963KDF(algorithm=algorithm, length=16, sharedinfo=ephemeral_point).derive(shared)


def ecies_seal(pub, plaintext, algorithm=hashes.SHA256()):
    eph = ec.generate_private_key(ec.SECP256R1())
    point = eph.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    key = x963_key(eph.exchange(ec.ECDH(), pub), point, algorithm)
    return point + AESGCM(key).encrypt(bytes(16), plaintext, None)


def ecies_open(priv, blob, algorithm=hashes.SHA256()):
    point, body = blob[:65], blob[65:]
    eph = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    key = x963_key(priv.exchange(ec.ECDH(), eph), point, algorithm)
    return AESGCM(key).decrypt(bytes(16), body, None)


def load_public(path):
    text = open(path, "rb").read()
    body = b"".join(l.strip() for l in text.splitlines() if not l.startswith(b"-----"))
    der = base64.b64decode(body)
    if len(der) == 65 and der[0] == 4:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), der)
    return serialization.load_pem_public_key(text)


def seal(pub_path, in_path, out_path):
    data = open(in_path, "rb").read()
    file_key, nonce = os.urandom(32), os.urandom(12)
    sealed = AESGCM(file_key).encrypt(nonce, data, None)
    chunks = [ecies_seal(load_public(pub_path), file_key), nonce, sealed[:-16], sealed[-16:]]
    with open(out_path, "wb") as f:
        for c in chunks:
            f.write(struct.pack(">I", len(c)) + c)


def open_package(key_path, in_path, out_path):
    priv = serialization.load_pem_private_key(open(key_path, "rb").read(), None)
    blob, chunks, i = open(in_path, "rb").read(), [], 0
    for _ in range(4):
        (n,) = struct.unpack(">I", blob[i:i + 4])
        chunks.append(blob[i + 4:i + 4 + n])
        i += 4 + n
    assert i == len(blob), "trailing bytes"
    assert [len(c) for c in (chunks[0], chunks[1], chunks[3])] == [113, 12, 16], "chunk lengths"
    file_key = ecies_open(priv, chunks[0])
    open(out_path, "wb").write(AESGCM(file_key).decrypt(chunks[1], chunks[2] + chunks[3], None))


# Made by Apple's SecKeyCreateEncryptedData with .eciesEncryptionCofactorX963SHA224AESGCM on a P-256 key;
# published in the test suite of github.com/jedda/ECIES (MIT). It differs from FileLock's variant only
# in the KDF hash, so opening it with the code above (hash swapped) checks our reading of Apple's scheme.
APPLE_KEY = "MHcCAQEEIJyzfcyptwjYkgdcFhfJlztLPmcfyzyCFs7NoQuCbAAhoAoGCCqGSM49AwEHoUQDQgAE7WttwmG8qki5bU2utMaugBWbWD9Jx/UPzgnGxthgHteyqPGofBjBwPZTbxj+lrIGNyHRdbOkSusD7051WG8nmg=="
APPLE_CT = "BPIMheQOrz0l9wEjcOHQEQ16D9Go8Sm8bEM3LAgMEHUf/eHy3u0oVlfh2po9ocPCuKG2bQ28wlsQ0N6SNJ3O3auS/QeoUogLVcJ3+R1OOeixEJyqeUkn6zB8LcqoZ+Y2"


def apple_vector():
    priv = serialization.load_der_private_key(base64.b64decode(APPLE_KEY), None)
    pt = ecies_open(priv, base64.b64decode(APPLE_CT), hashes.SHA224())
    assert pt == b"P256-SHA224-0IV", pt
    print("apple vector ok")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"seal": seal, "open": open_package, "apple-vector": apple_vector}[cmd](*args)
