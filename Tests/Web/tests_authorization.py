"""The authorization matrix (issue 23 §3): every operation of docs/openapi.yaml that needs a credential, called
with none, with the wrong kind of token, with an authenticator's device session where a messaging device's is
needed and the reverse, and with another account's credentials on this account's resources. Each answers
401, 403 or 404, as its entry in the document lists, and the victim's account, devices, second factors and
messages are the same afterwards. Runs against the web suite's server (no browser needed)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tempfile

import yaml

import support
from tests_messages import Cli

# The API tests' device-proof helpers (PROTOCOL §1), one copy for both.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "API"))
from countersign_api import b64url, load_key, session_message, sign, unb64url  # noqa: E402

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "openapi.yaml")
METHODS = ("get", "post", "put", "patch", "delete")
# Operations whose device session must be a messaging device's, and an authenticator's.
MESSAGING_ONLY = re.compile(
    r"^/v1/(devices/current/(keys|key-proof|messages|acks)|devices/\{id\}/(vouch|endorsement)|messages(/\{id\})?)$")
AUTHENTICATOR_ONLY = re.compile(r"^/v1/authenticator(/.*)?$")


def operations():
    doc = yaml.safe_load(open(DOC))
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method not in METHODS:
                continue
            security = op.get("security", doc.get("security")) or []
            # An empty requirement ({}) lets anyone call it: what a credential changes is the route's own rule
            # (the OpenID Connect authorization answers a signed-out browser too), not an authorization refusal.
            anyone = any(not requirement for requirement in security)
            kinds = set() if anyone else {name for requirement in security for name in requirement}
            yield method.upper(), path, kinds, set(op["responses"])


def pair_authenticator(server, owner):
    """An authenticator paired to `owner` (a Cli signed in): its device session token."""
    key = owner.run("account", "mfa", "pairing-key", "--password-file", owner.password_file).stdout.splitlines()[0].strip()
    config = tempfile.mkdtemp(prefix="cs-authn-")
    env = dict(owner.env, COUNTERSIGN_CONFIG_DIR=config)
    result = subprocess.run([support.BINARY, "authenticator", "pair", key, "--no-passphrase"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # The file keeps its session token sealed to the key (SPEC §10): a session of its own, signed with that key
    # (stored without a passphrase here), as PROTOCOL §1 says.
    state = json.load(open(os.path.join(config, "authenticator.json")))
    assert "sessionToken" not in state["state"] and "csd_" not in json.dumps(state), "the token is kept sealed"
    key = load_key(open(os.path.join(config, state["keyFile"])).read())
    device = state["state"]["deviceId"]
    status, challenge, _ = server.api("POST", "/v1/device-sessions/challenges", {"deviceId": device})
    assert status == 201, (status, challenge)
    nonce = unb64url(challenge["challenge"])
    body = {"deviceId": device, "nonce": b64url(nonce), "signature": b64url(sign(key, session_message(nonce, device)))}
    status, session, _ = server.api("POST", "/v1/device-sessions", body)
    assert status == 201 and session["token"].startswith("csd_"), (status, session)
    return session["token"], config


def tokens(cli):
    config = cli.env["COUNTERSIGN_CONFIG_DIR"]
    session = json.load(open(os.path.join(config, "session.json")))["token"]
    device = json.load(open(os.path.join(config, "device-session.json")))
    return session, device["token"], device["deviceId"]


def snapshot(server, session, device_session):
    """What the victim's credentials show of its account: compared before and after."""
    out = {}
    for path in ("/v1/me", "/v1/devices", "/v1/me/mfa", "/v1/me/passkeys"):
        status, body, _ = server.api("GET", path, token=session)
        assert status == 200, (path, status, body)
        out[path] = body
    status, body, _ = server.api("GET", "/v1/devices/current/messages", token=device_session)
    assert status == 200, (status, body)
    out["messages"] = sorted(m["id"] for m in body["messages"])
    for d in out["/v1/devices"]["devices"]:
        d.pop("lastSeenAt", None)
    return out


# Valid bodies where a resource's owner is checked after the body is read (a malformed body is a 400
# whoever asks, which tells nothing about the resource).
BODIES = {
    ("PATCH", "/v1/devices/{id}"): {"name": "mallory's now"},
    ("PUT", "/v1/devices/{id}/revocation-token"): {"token": "A" * 43, "signature": "A" * 86},
}


def call(server, method, path, token, template=None):
    body = BODIES.get((method, template), {}) if method in ("POST", "PUT", "PATCH") else None
    if (method, template) == ("POST", "/v1/devices/{id}/vouch"):
        # Signed now, so that only whose device it is decides the answer.
        body = {"signingKeyId": "0" * 32, "vouchedAt": int(time.time()), "signature": "A" * 86}
    if (method, template) == ("POST", "/v1/devices/{id}/endorsement"):
        body = {"signingKeyId": "0" * 32, "endorsedAt": int(time.time()), "signature": "A" * 86}
    status, answer, _ = server.api(method, path, body=body, token=token)
    return status, answer


def test_authorization_matrix_refuses_every_wrong_credential_and_changes_nothing(server, browser):
    victim = Cli(server).register("azvictim")
    mallory = Cli(server).register("azmallory")
    configs = []
    try:
        victim.run("send", "--to", "azvictim", "a note to self")
        v_session, v_device, v_device_id = tokens(victim)
        m_session, m_device, _ = tokens(mallory)
        m_authenticator, config = pair_authenticator(server, mallory)
        configs.append(config)
        v_authenticator, config = pair_authenticator(server, victim)
        configs.append(config)
        before = snapshot(server, v_session, v_device)
        assert len(before["messages"]) == 1, before["messages"]
        message_id = before["messages"][0]
        params = {"{id}": v_device_id, "{username}": "azvictim"}

        failures = []
        checked = 0

        def expect(method, path, token, allowed, why):
            nonlocal checked
            concrete = path
            if "/messages/{id}" in path:
                concrete = path.replace("{id}", message_id)
            for name, value in params.items():
                concrete = concrete.replace(name, value)
            status, answer = call(server, method, concrete, token, path)
            checked += 1
            if status not in allowed:
                failures.append(f"{method} {path} {why}: {status} {answer}, wanted one of {sorted(allowed)}")

        for method, path, kinds, documented in operations():
            if not kinds:
                continue
            codes = {int(c) for c in documented if c.isdigit()}
            refusals = {401, 403, 404} & codes
            # No credential at all.
            expect(method, path, None, {401} & codes, "without a credential")
            # The wrong kind of token.
            if "bearer" not in kinds:
                expect(method, path, m_session, {401} & codes, "with an account session")
            if "deviceBearer" not in kinds:
                expect(method, path, m_device, {401} & codes, "with a device session")
            # A messaging device's session where an authenticator's is needed, and the reverse.
            if AUTHENTICATOR_ONLY.match(path):
                expect(method, path, m_device, {403} & codes, "with a messaging device's session")
            if MESSAGING_ONLY.match(path):
                expect(method, path, m_authenticator, {403} & codes, "with an authenticator's session")
            # Another account's credentials on the victim's resources.
            if "{id}" in path and path.startswith("/v1/devices/"):
                theirs = m_device if "deviceBearer" in kinds else m_session
                expect(method, path, theirs, {404} & codes, "with another account's session")
            if "{id}" in path and path.startswith("/v1/messages/"):
                expect(method, path, m_device, refusals, "with another account's device")

        assert not failures, "\n".join(failures)
        assert checked >= 60, checked
        after = snapshot(server, v_session, v_device)
        assert after == before, json.dumps({"before": before, "after": after}, indent=1)
        # The victim's authenticator still answers as itself.
        status, _, _ = server.api("GET", "/v1/authenticator", token=v_authenticator)
        assert status == 200, status
    finally:
        victim.close()
        mallory.close()
        for config in configs:
            shutil.rmtree(config, ignore_errors=True)
