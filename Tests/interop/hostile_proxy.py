"""A hostile server for the CLI tests: a reverse proxy in front of a real `countersign serve` that lies the
way a compromised server could. Usage: hostile_proxy.py UPSTREAM RULES_JSON; prints its port on stdout.

Rules (all optional):
  {"alias": {"bob": "mallory"}}     GET /v1/users/bob/devices answers with mallory's directory, and a send to
                                    bob goes to mallory
  {"sent_id": TEXT}                 a send's answer names the message TEXT
  {"detail": TEXT}                  every problem response's detail is TEXT, and GET /v1/me names the account TEXT
  {"relabel": {"mallory": "alice"}} queue entries from mallory say they are from alice (and her device), and
                                    alice's key history gains mallory's keys as keys alice "rotated" away
  {"passkey_name": TEXT}            GET /v1/me/passkeys names every passkey TEXT
  {"number": TEXT}                  a sign-in's second-factor transaction gives TEXT as the number to match
"""
import json
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = sys.argv[1].rstrip("/")
RULES = json.loads(sys.argv[2])


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def upstream(method, path, headers, body=None):
    request = urllib.request.Request(UPSTREAM + path, data=body, method=method)
    for name in ("Authorization", "Content-Type", "User-Agent", "Accept"):
        if headers.get(name):
            request.add_header(name, headers[name])
    try:
        with OPENER.open(request, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def directory(user, headers):
    status, _, body = upstream("GET", f"/v1/users/{user}/devices", headers)
    return json.loads(body) if status == 200 else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        path = self.path
        if self.command == "POST" and path == "/v1/messages" and body:
            send = json.loads(body)
            send["to"] = [RULES.get("alias", {}).get(user, user) for user in send["to"]]
            body = json.dumps(send).encode()
        status, headers, data = upstream(self.command, path, self.headers, body)
        if self.command == "GET" and path.startswith("/v1/users/") and path.endswith("/devices") and status == 200:
            user = path.split("/")[3]
            if user in RULES.get("alias", {}):
                fake = directory(RULES["alias"][user], self.headers)
                data = json.dumps(fake).encode()
            for liar, victim in RULES.get("relabel", {}).items():
                if user == victim:
                    real = json.loads(data)
                    liars = directory(liar, self.headers)
                    device = real["devices"][0]["id"]
                    for entry in liars["history"]:
                        entry = dict(entry, deviceId=device, retiredAt="2099-01-01T00:00:00Z", retiredBecause="rotated")
                        real["history"].insert(0, entry)
                    data = json.dumps(real).encode()
        if self.command == "GET" and path.startswith("/v1/devices/current/messages") and status == 200:
            page = json.loads(data)
            for liar, victim in RULES.get("relabel", {}).items():
                victims = directory(victim, self.headers)
                for m in page["messages"]:
                    if m["from"] == liar:
                        m["from"] = victim
                        m["fromDevice"] = victims["devices"][0]["id"]
            data = json.dumps(page).encode()
        if "sent_id" in RULES and self.command == "POST" and path == "/v1/messages" and status in (200, 201):
            sent = json.loads(data)
            sent["id"] = RULES["sent_id"]
            data = json.dumps(sent).encode()
        if "detail" in RULES and status >= 400 and data.startswith(b"{"):
            problem = json.loads(data)
            problem["detail"] = RULES["detail"]
            data = json.dumps(problem).encode()
        if "detail" in RULES and self.command == "GET" and path == "/v1/me" and status == 200:
            me = json.loads(data)
            me["name"] = RULES["detail"]
            data = json.dumps(me).encode()
        if "passkey_name" in RULES and self.command == "GET" and path == "/v1/me/passkeys" and status == 200:
            listed = json.loads(data)
            for passkey in listed["passkeys"]:
                passkey["name"] = RULES["passkey_name"]
            data = json.dumps(listed).encode()
        if (
            "number" in RULES
            and (path == "/v1/sessions" or path.startswith("/v1/mfa/transactions/"))
            and status in (200, 202)
            and data.startswith(b"{")
        ):
            answer = json.loads(data)
            for view in (answer, answer.get("transaction") or {}):
                if view.get("numberMatching"):
                    view["numberMatching"]["number"] = RULES["number"]
            data = json.dumps(answer).encode()
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
