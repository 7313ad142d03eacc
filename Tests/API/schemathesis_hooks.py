"""Schemathesis hooks for Countersign (loaded through SCHEMATHESIS_HOOKS by schemathesis_run.py).

- Credentials: one auth provider hands each operation the credential its security requirement names: an
  account session (`bearer`), a messaging device's session (`deviceBearer`), an authenticator's device
  session (`deviceBearer` on /v1/authenticator*), or a binding secret (`bindingBearer`: a sign-in's
  transaction, or an authentication code). A credential that a generated request ended (sign-out, sign-out
  everywhere, a closed device session) answers 401 from then on: the next request of that kind gets a
  new one (a sign-in, a signed device-session nonce; see `Credentials`).
- Proofs a generator cannot make: in positive cases, most registrations and sign-ins carry a solved
  captcha (the server runs with the captcha on), a device registration that carries a real challenge (from
  the stateful link) is signed with a fresh key for the account of the session it carries (a link's), a device-session nonce for a device registered that way
  is signed with its key, and half the sends carry a real envelope (one the CLI
  sealed at setup; resending the same bytes is the documented idempotent 200), so the stateful phase
  gets past them to the operations behind them.
- `status_code_listed`: the document gives every operation a `default` problem response, which would
  let any status conform; this check fails a status the operation does not list explicitly.
"""
import ast
import json
import os
import random
import sys
import threading
import time

import schemathesis

# CPython 3.11's AST constructor keeps its recursion depth in state shared by threads, so two of
# schemathesis's worker threads parsing at once (hypothesis describing a lambda) can fail with
# "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). One parse at a time.
_ast_parse = ast.parse
_ast_lock = threading.Lock()


def _serialized_parse(*args, **kwargs):
    with _ast_lock:
        return _ast_parse(*args, **kwargs)


ast.parse = _serialized_parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from countersign_api import API, b64url, load_key, new_key, registration_message, session_message, sign, spki, unb64url  # noqa: E402

STATE = json.load(open(os.environ["COUNTERSIGN_ST_STATE"]))
lock = threading.Lock()
_local = threading.local()


def api():
    """This thread's client (schemathesis's workers are threads; a requests session is not shared)."""
    if not hasattr(_local, "api"):
        _local.api = API(STATE["url"])
    return _local.api


# Devices registered by the hook below: device ID → private key.
hook_devices = {}


def security_of(operation):
    raw = operation.definition.raw
    requirements = raw.get("security", [])
    return [name for requirement in requirements for name in requirement]


def credential_kind(case, context=None):
    schemes = security_of(case.operation)
    path = case.operation.path
    if "bearer" in schemes:
        return "account"
    if "deviceBearer" in schemes:
        return "authenticator" if path.startswith("/v1/authenticator") else "device"
    if "bindingBearer" in schemes:
        return "authCode" if path.startswith("/v1/auth-codes") else "transaction"
    return "none"


def make(kind):
    """A working credential of this kind, made now."""
    if kind == "account":
        a = STATE["account"]
        return api().sign_in(a["username"], a["password"])["token"]
    if kind in ("device", "authenticator"):
        d = STATE[kind]
        return api().device_session(d["id"], load_key(d["key"]))
    if kind == "transaction":
        m = STATE["mfaAccount"]
        return api().sign_in(m["username"], m["password"], status=202, secondFactor="code")["binding"]
    if kind == "authCode":
        return api().expect(201, "POST", "/v1/auth-codes", {})["binding"]
    raise ValueError(kind)


class Credentials:
    """The current credential of each kind. One that a response showed dead (401 `unauthenticated`, or
    404 for a binding secret whose sign-in or code is gone) is made again before the next request needs
    it, at most every few seconds per kind: the server limits device-session nonces (60 a minute per
    address), open second-factor sign-ins per account and codes per address, and a credential that cannot
    be made now stays as it was (its requests then get their documented 401 or 404)."""

    RETRY_SECONDS = 2

    def __init__(self, tokens):
        self.tokens = dict(tokens)
        self.stale = set()
        self.tried = {}
        self.lock = threading.Lock()
        self.made = {kind: 0 for kind in tokens}
        self.last_error = None

    def get(self, kind):
        with self.lock:
            if kind in self.stale and time.monotonic() - self.tried.get(kind, 0) > self.RETRY_SECONDS:
                self.tried[kind] = time.monotonic()
                try:
                    self.tokens[kind] = make(kind)
                    self.stale.discard(kind)
                    self.made[kind] += 1
                except Exception as error:  # noqa: BLE001 (kept as it was; said once at the end)
                    self.last_error = f"{kind}: {error}"
            return self.tokens[kind]

    def saw(self, kind, token, status, code):
        # A new account session is also a recent sign-in, which `reauthentication-required` asks for.
        dead = (status == 401 and code in ("unauthenticated", "reauthentication-required")) or (
            kind in ("transaction", "authCode") and status == 404
        )
        with self.lock:
            if dead and self.tokens.get(kind) == token:
                self.stale.add(kind)


credentials = Credentials(STATE["tokens"])


@schemathesis.auth(refresh_interval=None, retry_on=[])
class CountersignAuth:
    def get(self, case, context):
        kind = credential_kind(case)
        return None if kind == "none" else credentials.get(kind)

    def set(self, case, data, context):
        case.headers = case.headers or {}
        # A link that carries a session the server gave out in an earlier step (a new account's, a new
        # device's) keeps it: the chain goes on as that account or device. Any other value (generated) is
        # replaced.
        sent = case.headers.get("Authorization", "")
        if not (sent.startswith("Bearer ") and sent[len("Bearer "):] in issued_tokens):
            case.headers["Authorization"] = f"Bearer {data}"


def positive(case):
    return not case.meta or not case.meta.generation.mode.is_negative


@schemathesis.hook
def before_call(context, case, kwargs):
    op = case.operation
    if not positive(case):
        return
    # Long polls (`wait`, up to 30 s) would spend the run's time waiting: positive cases wait at most 1 s.
    if isinstance(case.query, dict) and isinstance(case.query.get("wait"), int) and case.query["wait"] > 1:
        case.query["wait"] = 1
    if not isinstance(case.body, dict):
        return
    label = f"{op.method.upper()} {op.path}"
    if label in ("POST /v1/accounts", "POST /v1/sessions", "POST /v1/sessions/current/reauth"):
        # The captcha is on (as in production): most positive cases carry a solved one.
        if random.random() < 0.8:
            try:
                case.body["captcha"] = api().captcha()
            except (RuntimeError, OSError):
                pass  # the request goes as generated
        return
    if label == "POST /v1/devices":
        # A real challenge (32 bytes, from the link) gets a real proof; a generated one stays as it is.
        try:
            challenge = unb64url(case.body.get("challenge", ""))
        except (ValueError, TypeError):
            return
        if len(challenge) != 32:
            return
        key = new_key()
        public = spki(key)
        message = registration_message(challenge, account_id(case), public, public)
        case.body.update(
            signingKey=b64url(public), encryptionKey=b64url(public), signature=b64url(sign(key, message))
        )
        case.body.setdefault("name", "schemathesis")
        signed_keys[b64url(public)] = key
    elif label == "POST /v1/device-sessions":
        key = hook_devices.get(case.body.get("deviceId"))
        try:
            nonce = unb64url(case.body.get("nonce", ""))
        except (ValueError, TypeError):
            return
        if key is not None and len(nonce) == 32:
            case.body["signature"] = b64url(sign(key, session_message(nonce, case.body["deviceId"])))
    elif label == "POST /v1/messages" and random.random() < 0.5:
        case.body.update(STATE["send"])
        case.body.pop("deliverAfter", None)


# The private key of each signing key a registration was signed with, until its answer names the device.
signed_keys = {}
# Every session token a response gave out (sign-ins, device sessions), which links may carry on.
issued_tokens = set()
# The account of each session token a link carried: token → account ID.
link_accounts = {}


def account_id(case):
    """The account a device registration is for: the account of the session the request carries when a
    link gave it one (a new account's), otherwise the account session's."""
    sent = (case.headers or {}).get("Authorization", "")
    token = sent[len("Bearer "):] if sent.startswith("Bearer ") else None
    if token is None or token == credentials.tokens.get("account"):
        return STATE["account"]["id"]
    if token not in link_accounts:
        try:
            link_accounts[token] = api().expect(200, "GET", "/v1/me", token=token)["id"]
        except (RuntimeError, OSError, KeyError):
            return STATE["account"]["id"]
    return link_accounts[token]


@schemathesis.hook
def after_call(context, case, response):
    observe(case, response)


def observe(case, response):
    """What a response tells the hooks: a credential it showed dead, a device registered with a known key.
    Called by the `after_call` hook and, in the stateful phase (whose steps do not dispatch it), by the
    step counter below; seeing a response twice changes nothing."""
    kind = credential_kind(case)
    sent = (case.headers or {}).get("Authorization", "")
    if kind != "none" and sent.startswith("Bearer ") and response.status_code in (401, 404):
        try:
            code = response.json().get("code")
        except (ValueError, AttributeError):
            code = None
        credentials.saw(kind, sent[len("Bearer "):], response.status_code, code)
    if os.environ.get("COUNTERSIGN_ST_DEBUG"):
        with open(os.environ["COUNTERSIGN_ST_DEBUG"], "a") as f:
            body = json.dumps(case.body)[:200] if isinstance(case.body, (dict, list)) else ""
            f.write(f"{case.method} {case.operation.path} {response.status_code} {response.text[:160]} <- {body}\n")
    if response.status_code == 201:
        try:
            token = response.json().get("token")
        except (ValueError, AttributeError):
            token = None
        if isinstance(token, str):
            issued_tokens.add(token)
    if case.operation.path == "/v1/devices" and case.method.upper() == "POST" and response.status_code == 201:
        try:
            device = response.json()
            key = signed_keys.pop(device["signingKey"], None)
        except (ValueError, KeyError, TypeError):
            key = None
        if key is not None:
            hook_devices[device["id"]] = key


@schemathesis.check
def status_code_listed(ctx, response, case):
    """The status is listed for the operation itself, not only covered by its `default` response."""
    if case.method.upper() != case.operation.method.upper():
        return None  # a method the path does not take: the `unsupported_method` check's business
    responses = case.operation.definition.raw.get("responses", {})
    status = str(response.status_code)
    if status not in responses and f"{status[0]}XX" not in responses:
        listed = ", ".join(sorted(k for k in responses if k != "default"))
        raise AssertionError(f"{status} is not among the statuses the document lists for this operation ({listed})")


# The stateful phase's steps, each observed as `after_call` would be, and counted per link for the run's
# summary (schemathesis reports only how many links were covered): the link's name, how often it was
# followed, and how often its target answered 2xx.
followed = {}


def _count_steps():
    try:
        from schemathesis.generation.stateful.state_machine import APIStateMachine
    except ImportError:
        return
    step = APIStateMachine._step

    def counted(self, input):
        output = None
        try:
            output = step(self, input)
            return output
        finally:
            if output is not None:
                observe(output.case, output.response)
            name = input.transition.id if input.transition is not None else "(first step)"
            ok = output is not None and 200 <= output.response.status_code < 300
            with lock:
                seen = followed.setdefault(name, [0, 0])
                seen[0] += 1
                seen[1] += ok

    APIStateMachine._step = counted


_count_steps()

if os.environ.get("COUNTERSIGN_ST_LINKS"):
    import atexit

    def _save():
        summary = {
            "links": followed,
            "remade": credentials.made,
            "lastError": credentials.last_error,
            "chain": {"accounts": len(link_accounts), "devices": len(hook_devices)},
        }
        with open(os.environ["COUNTERSIGN_ST_LINKS"], "a") as f:
            f.write(json.dumps(summary) + "\n")

    atexit.register(_save)
