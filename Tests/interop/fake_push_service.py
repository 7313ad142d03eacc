"""A Web Push service for the tests (RFC 8030), written here, checking what Countersign sends with peers
nobody here wrote: PyJWT verifies each push's VAPID token (RFC 8292: ES256 under the `k` key, `aud` this
service's origin, `exp` at most 24 hours away, `sub`), and http_ece opens each body (RFC 8291 aes128gcm)
with a subscription whose keys this script made.

Usage: fake_push_service.py; prints its port on stdout, then serves until killed.
  GET  /subscription?name=N   makes (once) the subscription N: {"endpoint", "p256dh", "auth"} as a browser's
                              PushSubscription.toJSON() gives them. N's prefix sets how its pushes are answered:
                              gone- 410, missing- 404, flaky- 429 (Retry-After: 1) the first time then 201,
                              down- 503 always, hang- no answer for 60 seconds, anything else 201.
  POST /push/N                a push: checked, opened, recorded, answered as N says.
  GET  /log                   every push received, in order: [{name, status, payload, length, ttl, urgency,
                              topic, encoding, claims, token, error, at}].
"""
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

lock = threading.Lock()
subscriptions = {}
log = []
answered = {}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/log":
            with lock:
                body = json.dumps(log).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        if url.path == "/subscription":
            name = parse_qs(url.query)["name"][0]
            with lock:
                if name not in subscriptions:
                    subscriptions[name] = (ec.generate_private_key(ec.SECP256R1()), __import__("os").urandom(16))
                key, auth = subscriptions[name]
            public = key.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
            port = self.server.server_address[1]
            body = json.dumps(
                {"endpoint": f"http://127.0.0.1:{port}/push/{name}", "p256dh": b64(public), "auth": b64(auth)}
            ).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        self.reply(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        name = urlparse(self.path).path.removeprefix("/push/")
        entry = {
            "name": name,
            "length": len(body),
            "ttl": self.headers.get("TTL"),
            "urgency": self.headers.get("Urgency"),
            "topic": self.headers.get("Topic"),
            "encoding": self.headers.get("Content-Encoding"),
            "at": time.time(),
            "error": None,
            "payload": None,
            "claims": None,
            "token": None,
        }
        port = self.server.server_address[1]
        try:
            authorization = self.headers["Authorization"]
            scheme, _, params = authorization.partition(" ")
            assert scheme == "vapid", "not the vapid scheme"
            fields = dict(p.strip().split("=", 1) for p in params.split(","))
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(fields["k"]))
            entry["token"] = fields["t"]
            claims = jwt.decode(
                fields["t"],
                public,
                algorithms=["ES256"],
                audience=f"http://127.0.0.1:{port}",
                options={"require": ["exp", "aud"]},
            )
            assert claims["exp"] - time.time() <= 24 * 3600, "exp more than 24 hours away"
            entry["claims"] = claims
            with lock:
                key, auth = subscriptions[name]
            plain = http_ece.decrypt(body, private_key=key, auth_secret=auth, version="aes128gcm")
            entry["payload"] = json.loads(plain)
        except Exception as error:  # recorded for the test to read, and refused
            entry["error"] = f"{type(error).__name__}: {error}"
        with lock:
            n = answered.get(name, 0)
            answered[name] = n + 1
        if entry["error"]:
            status, headers = 401, []
        elif name.startswith("gone-"):
            status, headers = 410, []
        elif name.startswith("missing-"):
            status, headers = 404, []
        elif name.startswith("flaky-") and n == 0:
            status, headers = 429, [("Retry-After", "1")]
        elif name.startswith("down-"):
            status, headers = 503, []
        elif name.startswith("hang-"):
            time.sleep(60)
            status, headers = 201, []
        else:
            status, headers = 201, [("Location", f"/message/{name}/{n}")]
        entry["status"] = status
        with lock:
            log.append(entry)
        self.reply(status, b"", headers)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
