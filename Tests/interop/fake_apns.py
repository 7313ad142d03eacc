"""An APNs for the tests: HTTP/2 over TLS (Python's `h2` and `ssl`, ALPN h2) with a certificate from a CA this
script makes, two endpoints (production and sandbox) on two ports. It checks each push's provider token with
PyJWT against the public half of the test's .p8 key (ES256, `kid`, `iss`, `iat` within the hour) and records
each push's path, headers, token and payload.

Usage: fake_apns.py DIR KEY_ID TEAM_ID PUBLIC_KEY.pem; writes DIR/ca.pem, prints "PRODUCTION_PORT SANDBOX_PORT",
then serves until killed. Every push is one JSON line of DIR/log.jsonl: {env, token, topic, pushType, priority,
expiration, collapseId, jwt, claims, kid, payload, status, reason, error}; every connection one line {env,
connection: true}. The device token's first four hex digits choose the answer: dead 410 Unregistered, bad0
400 BadDeviceToken, 4290 429 TooManyRequests the first time then 200, 5030 503 always, e403 403
ExpiredProviderToken the first time then 200, anything else 200.
"""
import datetime
import json
import os
import socket
import ssl
import sys
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.events
import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

DIR, KEY_ID, TEAM_ID, PUBLIC = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
public_key = serialization.load_pem_public_key(open(PUBLIC, "rb").read())
lock = threading.Lock()
seen = {}


def certificates():
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Countersign test APNs CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    with open(os.path.join(DIR, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(DIR, "server.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(DIR, "server.key"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def record(entry):
    with lock:
        with open(os.path.join(DIR, "log.jsonl"), "a") as f:
            f.write(json.dumps(entry) + "\n")


def answer(env, headers, body):
    path = headers.get(":path", "")
    token = path.removeprefix("/3/device/")
    entry = {
        "env": env, "token": token, "method": headers.get(":method"), "topic": headers.get("apns-topic"),
        "pushType": headers.get("apns-push-type"), "priority": headers.get("apns-priority"),
        "expiration": headers.get("apns-expiration"), "collapseId": headers.get("apns-collapse-id"),
        "jwt": None, "claims": None, "kid": None, "payload": None, "error": None, "reason": None,
    }
    try:
        scheme, _, provider = headers.get("authorization", "").partition(" ")
        assert scheme == "bearer", "not a bearer provider token"
        entry["jwt"] = provider
        entry["kid"] = jwt.get_unverified_header(provider).get("kid")
        assert entry["kid"] == KEY_ID, f"kid {entry['kid']}"
        claims = jwt.decode(provider, public_key, algorithms=["ES256"], options={"require": ["iss", "iat"], "verify_iat": False})
        assert claims["iss"] == TEAM_ID, f"iss {claims['iss']}"
        assert 0 <= time.time() - claims["iat"] < 3600 + 60, "iat not within the hour"
        entry["claims"] = claims
        entry["payload"] = json.loads(body)
    except Exception as error:  # recorded for the test to read, and refused as APNs would
        entry["error"] = f"{type(error).__name__}: {error}"
    with lock:
        n = seen.get(token, 0)
        seen[token] = n + 1
    prefix = token[:4]
    if entry["error"]:
        status, reason = 403, "InvalidProviderToken"
    elif prefix == "dead":
        status, reason = 410, "Unregistered"
    elif prefix == "bad0":
        status, reason = 400, "BadDeviceToken"
    elif prefix == "4290" and n == 0:
        status, reason = 429, "TooManyRequests"
    elif prefix == "5030":
        status, reason = 503, "ServiceUnavailable"
    elif prefix == "e403" and n == 0:
        status, reason = 403, "ExpiredProviderToken"
    else:
        status, reason = 200, None
    entry["status"], entry["reason"] = status, reason
    record(entry)
    return status, reason


def serve(sock, env):
    record({"env": env, "connection": True})
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    streams = {}
    try:
        while True:
            data = sock.recv(65535)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    streams[event.stream_id] = (dict(event.headers), bytearray())
                elif isinstance(event, h2.events.DataReceived):
                    streams[event.stream_id][1].extend(event.data)
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    headers, body = streams.pop(event.stream_id)
                    status, reason = answer(env, headers, bytes(body))
                    out = json.dumps({"reason": reason}).encode() if reason else b""
                    conn.send_headers(
                        event.stream_id,
                        [(":status", str(status)), ("apns-id", str(uuid.uuid4()))]
                        + ([("content-type", "application/json"), ("content-length", str(len(out)))] if out else []),
                        end_stream=not out,
                    )
                    if out:
                        conn.send_data(event.stream_id, out, end_stream=True)
            pending = conn.data_to_send()
            if pending:
                sock.sendall(pending)
    except (OSError, ssl.SSLError):
        pass
    finally:
        sock.close()


def listen(env):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(DIR, "server.pem"), os.path.join(DIR, "server.key"))
    context.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def accept():
        while True:
            raw, _ = listener.accept()
            try:
                tls = context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            threading.Thread(target=serve, args=(tls, env), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


certificates()
production, sandbox = listen("production"), listen("sandbox")
print(production, sandbox, flush=True)
threading.Event().wait()
