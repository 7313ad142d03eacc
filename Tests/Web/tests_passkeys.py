"""Passkeys in the browser: registered in Settings, a discoverable sign-in by the button and by the
username field's autofill (conditional mediation), the second factor after a password, the
re-authentication of a sensitive action, rename and remove, and refusals said in words.

The authenticator is Chromium's virtual one over CDP (ctap2, internal, resident keys, user verification,
PRF). Every registration and assertion the server accepts in these tests (and in the key gate's,
tests_gate.py) is verified again, from the options the server sent and the JSON the page posted, by two
verifiers nobody here wrote: py_webauthn and python-fido2 (`Ceremonies`).
"""
import base64
import json
import os
import re
import sqlite3
import urllib.parse

from fido2.server import Fido2Server
from fido2.webauthn import PublicKeyCredentialRpEntity
from webauthn import verify_authentication_response, verify_registration_response

import support
from support import SLOW, Page, api_account, api_sign_in, expect, page_script, sign_in, totp

SIGN_IN_AGAIN = "Try again, or sign in with your password."

# A browser without passkey autofill: the sign-in screen makes no conditional request (the virtual
# authenticator answers one at once, which would sign in before the test clicks anything).
NO_AUTOFILL = "PublicKeyCredential.isConditionalMediationAvailable = async () => false;"
# Every WebAuthn call the page makes: its kind, mediation, whether it was aborted, and how it ended.
SPY = page_script("webauthn.js", "spyOnWebAuthn")


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PasskeyPage:
    """A recorded page (support.Page) with a virtual authenticator, the WebAuthn spy, and the passkey
    routes' requests and answers kept for the independent checks."""

    def __init__(self, browser, server, autofill=True, **options):
        self.p = Page(browser, server)
        self.page = self.p.page
        if not autofill:
            self.p.context.add_init_script(NO_AUTOFILL)
        self.p.context.add_init_script(SPY)
        self.cdp = self.p.context.new_cdp_session(self.page)
        self.cdp.send("WebAuthn.enable")
        self.id = self.cdp.send(
            "WebAuthn.addVirtualAuthenticator",
            {"options": {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
                         "isUserVerified": True, "hasPrf": True, **options}},
        )["authenticatorId"]
        self.traffic = []
        # Every ceremony of this context, re-verified by py_webauthn and python-fido2 before close().
        self.ceremonies = Ceremonies(self.p.context, self.page)

        def keep(r):
            # The body is read at once: after the page moves on, Chromium no longer has it.
            if "passkey" in r.url:
                try:
                    body = r.body()
                except Exception:
                    body = None
                self.traffic.append((r, body))

        self.page.on("response", keep)
        self.page.reload()

    def calls(self):
        return self.page.evaluate("window.__webauthn")

    def credentials(self):
        return self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.id})["credentials"]

    def exchanges(self, method, path, expect_some=True):
        """(request JSON, status, answer JSON) of each call to a path matching `path`, oldest first. The
        response events can reach Python after the page has moved on: wait (10 s at most) for one."""
        for _ in range(100):
            if not expect_some or self._exchanges(method, path):
                break
            self.page.wait_for_timeout(100)
        return self._exchanges(method, path)

    def options_answered(self, path, sent):
        """The options (from POST `path`) whose challenge the assertion `sent` signed. Picked by challenge,
        not by position: Playwright has once reported an extra options response here in CI (the WebAuthn
        calls the page made, asserted separately, show whether the page itself asked twice), and once one
        whose body could no longer be read."""
        client_data = json.loads(unb64(sent["credential"]["response"]["clientDataJSON"]))
        seen = self.exchanges("POST", path)
        # An answer whose body Chromium had already dropped (None) cannot be the one signed; if it was,
        # the assertion below says so with everything seen.
        matching = [answer for _, status, answer in seen
                    if status in (200, 201) and answer is not None and answer["publicKey"]["challenge"] == client_data["challenge"]]
        assert len(matching) == 1, ([(status, answer) for _, status, answer in seen], client_data, self.calls())
        return matching[0]

    def _exchanges(self, method, path):
        out = []
        for r, body in self.traffic:
            if r.request.method == method and re.fullmatch(path, urllib.parse.urlparse(r.url).path):
                out.append((r.request.post_data_json, r.status, json.loads(body) if body else None))
        return out

    def token(self):
        return self.page.evaluate("async () => (await import('/js/session.js')).session.token")

    def close(self):
        assert self.ceremonies.verified, "the test did not call ceremonies.verify()"
        self.p.close()


def open_passkeys(page):
    """Settings' Passkeys section, once the home screen has made this browser a device."""
    expect(page.get_by_role("status").first).to_contain_text("Device ready", timeout=60_000)
    support.open_settings(page, "Passkeys")
    section = page.get_by_role("region", name="Passkeys")
    expect(section.get_by_role("button", name="Add a passkey")).to_be_visible()
    return section


def add_passkey(page, section, name=""):
    section.get_by_label("Passkey name").fill(name)
    section.get_by_role("button", name="Add a passkey").click()
    expect(page.get_by_role("status")).to_contain_text("added: you can sign in with it instead of your password.", timeout=30_000)


def sign_out(page):
    page.get_by_role("button", name="Back").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_be_visible()


def audit(server, token):
    status, body, _ = server.api("GET", "/v1/me/audit?limit=100", token=token)
    assert status == 200, (status, body)
    return [(e["kind"], e["outcome"]) for e in body["events"]]


def fido2_server(server):
    return Fido2Server(PublicKeyCredentialRpEntity(name="Countersign", id="localhost"), verify_origin=lambda o: o == server.url)


def verify_registration(server, options, sent):
    """py_webauthn's and python-fido2's verdicts on the registration the server accepted: the same
    credential from both, and a wrong challenge refused by both."""
    public_key = options["publicKey"]
    challenge = public_key["challenge"]
    assert public_key["rp"]["id"] == "localhost" and public_key["attestation"] == "none", public_key
    assert public_key["authenticatorSelection"]["residentKey"] == "required", public_key
    assert public_key["authenticatorSelection"]["userVerification"] == "required", public_key
    assert sent["ceremonyId"] == options["ceremonyId"], (sent["ceremonyId"], options["ceremonyId"])
    verdict = verify_registration_response(
        credential=sent["credential"], expected_challenge=unb64(challenge), expected_rp_id="localhost",
        expected_origin=server.url, require_user_verification=True,
    )
    state = {"challenge": challenge, "user_verification": "required"}
    auth_data = fido2_server(server).register_complete(state, sent["credential"])
    assert auth_data.credential_data.credential_id == verdict.credential_id
    assert auth_data.is_user_verified() and auth_data.is_user_present()
    assert unb64(sent["credential"]["rawId"]) == verdict.credential_id
    wrong = base64.urlsafe_b64encode(bytes(32)).rstrip(b"=").decode()
    for check in (
        lambda: verify_registration_response(credential=sent["credential"], expected_challenge=bytes(32), expected_rp_id="localhost", expected_origin=server.url),
        lambda: fido2_server(server).register_complete({"challenge": wrong, "user_verification": "required"}, sent["credential"]),
    ):
        try:
            check()
        except Exception:
            continue
        raise AssertionError("a wrong challenge was accepted")
    return verdict, auth_data.credential_data


def verify_assertion(server, options, sent, registration, sign_count):
    """Both verifiers' verdicts on an assertion the server accepted; returns the new sign count."""
    verdict, credential_data = registration
    challenge = options["publicKey"]["challenge"]
    assert options["publicKey"]["userVerification"] == "required", options
    assert sent["ceremonyId"] == options["ceremonyId"]
    checked = verify_authentication_response(
        credential=sent["credential"], expected_challenge=unb64(challenge), expected_rp_id="localhost",
        expected_origin=server.url, credential_public_key=verdict.credential_public_key,
        credential_current_sign_count=sign_count, require_user_verification=True,
    )
    state = {"challenge": challenge, "user_verification": "required"}
    assert fido2_server(server).authenticate_complete(state, [credential_data], sent["credential"]).credential_id == verdict.credential_id
    return checked.new_sign_count


# The passkey routes, by what their answer is: the options a ceremony starts with, and the JSON it ends with.
CEREMONY_KINDS = {
    r"/v1/me/passkeys": "registration",
    r"/v1/sessions/passkey": "sign_in",
    r"/v1/mfa/transactions/[^/]+/passkey": "second_factor",
    r"/v1/sessions/current/reauth/passkey": "reauth",
}
CEREMONY_ROUTE = re.compile(r"^[^?#]*(" + "|".join(CEREMONY_KINDS) + r")(/options)?(\?.*)?$")


class Ceremony:
    """One answer a page posted to a passkey route: its kind, the JSON sent, the server's status and answer."""

    def __init__(self, kind, sent, status, answer):
        self.kind, self.sent, self.status, self.answer = kind, sent, status, answer

    @property
    def accepted(self):
        if not 200 <= self.status < 300:
            return False
        # A second factor's refused passkey is a 200 too: the transaction, not COMPLETED, with fewer attempts.
        return self.kind != "second_factor" or (self.answer or {}).get("status") == "COMPLETED"

    def __repr__(self):
        return f"<{self.kind} {self.status} {self.sent.get('ceremonyId') if isinstance(self.sent, dict) else self.sent!r}>"


class Ceremonies:
    """Every WebAuthn ceremony the pages of a browser context run with the server, kept to be verified again
    by py_webauthn and python-fido2. The passkey routes are routed through here (fetched, kept, and answered
    as the server answered: the bodies are kept whole, which the response events do not promise), so the
    options the server sent are paired with the answer the page posted, by ceremony ID.

    `verify(server, …)` then checks, in the order they were posted, each registration the server accepted
    (verify_registration: both verifiers, and a wrong challenge refused by both) and each assertion it
    accepted, under the public key that registration gave and the sign count it has reached (which must
    grow), by both verifiers; and that the server's database holds, for each of those passkeys, the same
    public key and the last sign count. It fails when it saw none, and when the kinds seen are not the ones
    the test names. `rewrite(options)` (optional) changes the options the page gets, not those kept."""

    def __init__(self, context, page, rewrite=None):
        self.page, self.rewrite = page, rewrite
        self.options = {}
        self.posted = []
        self.verified = False
        self.registered = {}
        context.route(CEREMONY_ROUTE, self._route)

    def _route(self, route):
        request = route.request
        match = CEREMONY_ROUTE.match(urllib.parse.urlparse(request.url).path)
        if request.method != "POST" or not match:
            route.fallback()
            return
        kind = CEREMONY_KINDS[next(k for k in CEREMONY_KINDS if re.fullmatch(k, match.group(1)))]
        response = route.fetch()
        text = response.text()
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        if match.group(2):
            if response.status in (200, 201) and body:
                self.options[body["ceremonyId"]] = (kind, json.loads(json.dumps(body)))
                if self.rewrite:
                    route.fulfill(response=response, json=self.rewrite(body))
                    return
        else:
            self.posted.append(Ceremony(kind, request.post_data_json, response.status, body))
        route.fulfill(response=response)

    def accepted(self, kind=None):
        return [c for c in self.posted if c.accepted and kind in (None, c.kind)]

    def refused(self, kind=None):
        return [c for c in self.posted if not c.accepted and kind in (None, c.kind)]

    def verify(self, server, removed=0, **counts):
        """`counts`: for each kind (registration, sign_in, second_factor, reauth) the number of accepted
        ceremonies the test made, an int or a range (a kind not named: none). `removed`: how many of the
        passkeys registered here the account no longer has (their database rows are gone)."""
        assert not self.verified, "verify() once: it keeps the registrations and counts it checked"
        want = {k: range(v, v + 1) if isinstance(v, int) else v for k, v in counts.items()}
        assert set(want) <= set(CEREMONY_KINDS.values()), want

        def seen():
            return {k: len(self.accepted(k)) for k in CEREMONY_KINDS.values()}

        # The answers are kept as the route handler runs, which the page waits for: a moment at most.
        for _ in range(50):
            if all(n in want.get(k, range(0, 1)) for k, n in seen().items()):
                break
            self.page.wait_for_timeout(100)
        got = seen()
        assert all(n in want.get(k, range(0, 1)) for k, n in got.items()), (got, counts, self.posted)
        assert self.accepted(), "no ceremony was seen: nothing was verified"
        assert self.accepted("registration"), "no registration was seen: no assertion can be checked"
        for ceremony in self.accepted():
            sent = ceremony.sent
            assert sent["ceremonyId"] in self.options, ("no options were seen for", ceremony, sorted(self.options))
            kind, options = self.options[sent["ceremonyId"]]
            assert kind == ceremony.kind, (kind, ceremony)
            if kind == "registration":
                verdict, credential_data = verify_registration(server, options, sent)
                assert verdict.credential_id not in self.registered, "a credential registered twice"
                self.registered[verdict.credential_id] = {
                    "registration": (verdict, credential_data), "count": verdict.sign_count, "user": options["publicKey"]["user"]["id"],
                }
                continue
            credential_id = unb64(sent["credential"]["rawId"])
            assert credential_id in self.registered, ("an assertion by a passkey no registration here gave", ceremony)
            known = self.registered[credential_id]
            allowed = [c["id"] for c in options["publicKey"]["allowCredentials"]]
            assert not allowed or sent["credential"]["id"] in allowed, (allowed, sent["credential"]["id"])
            # A discoverable sign-in names the account by the user handle the registration gave it.
            assert sent["credential"]["response"].get("userHandle") in (None, known["user"]), (sent, known["user"])
            count = verify_assertion(server, options, sent, known["registration"], known["count"])
            assert count > known["count"], ("the sign count did not grow", count, known["count"])
            known["count"] = count
        # The server's record of each passkey: the public key the registration gave, the last count.
        db = sqlite3.connect(os.path.join(server.dir, "web.sqlite"), timeout=10)
        try:
            rows = {}
            for credential_id in self.registered:
                row = db.execute("SELECT public_key, sign_count FROM passkeys WHERE credential_id = ?", (credential_id,)).fetchone()
                if row:
                    rows[credential_id] = row
        finally:
            db.close()
        assert len(self.registered) - len(rows) == removed, (len(self.registered), len(rows), removed)
        for credential_id, (public_key, sign_count) in rows.items():
            known = self.registered[credential_id]
            assert bytes(public_key) == known["registration"][0].credential_public_key, ("the server's public key", credential_id.hex())
            assert sign_count == known["count"], ("the server's sign count", sign_count, known["count"])
        self.verified = True
        return got

    def check_held(self, cdp, authenticator_id):
        """The virtual authenticator's own view of the passkeys it holds that were registered here: the
        public half of its private key is the registration's public key, and its counter is at least the last
        sign count verified (it also counts the answers the page did not send). Returns how many it checked."""
        from cryptography.hazmat.primitives import serialization
        from fido2.cose import CoseKey
        from fido2 import cbor

        checked = 0
        for held in cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})["credentials"]:
            known = self.registered.get(base64.b64decode(held["credentialId"]))
            if not known:
                continue
            private = serialization.load_der_private_key(base64.b64decode(held["privateKey"]), None)
            cose = CoseKey.for_alg(-7).from_cryptography_key(private.public_key())
            assert cbor.decode(known["registration"][0].credential_public_key) == dict(cose), held["credentialId"]
            assert held["signCount"] >= known["count"], (held["signCount"], known["count"])
            checked += 1
        return checked

    def refused_by_py_webauthn(self, server, ceremony):
        """py_webauthn's refusal (the exception) of an assertion the server refused, under the registration's
        public key and the sign count reached; fails when py_webauthn accepts it."""
        assert self.verified, "verify() first: it records the registrations and counts"
        _, options = self.options[ceremony.sent["ceremonyId"]]
        known = self.registered[unb64(ceremony.sent["credential"]["rawId"])]
        try:
            verify_authentication_response(
                credential=ceremony.sent["credential"], expected_challenge=unb64(options["publicKey"]["challenge"]),
                expected_rp_id="localhost", expected_origin=server.url,
                credential_public_key=known["registration"][0].credential_public_key,
                credential_current_sign_count=known["count"], require_user_verification=True,
            )
        except Exception as error:
            return error
        raise AssertionError(f"py_webauthn accepted what the server refused: {ceremony}")


# ---------------------------------------------------------------------------------------------------------


def test_passkey_registered_in_settings_signs_in_by_its_button(server, browser):
    api_account(server, "wpkann")
    b = PasskeyPage(browser, server, autofill=False)
    page = b.page
    sign_in(b.p, "wpkann")
    section = open_passkeys(page)
    expect(section).to_contain_text("No passkeys yet")
    add_passkey(page, section, "Ann's laptop")
    items = section.get_by_role("list", name="Passkeys").get_by_role("listitem")
    expect(items).to_have_count(1)
    # The virtual authenticator's AAGUID (01020304-…) is no known provider's: "Passkey", device-bound.
    expect(items.first).to_contain_text("Ann's laptop")
    expect(items.first).to_contain_text("Passkey · Device-bound (not synced)")
    expect(items.first).to_contain_text("Last used never")
    b.p.shot("passkeys-settings")
    section.screenshot(path=os.path.join(support.ARTIFACTS, "passkeys-section.png"))
    token = b.token()
    [listed] = server.api("GET", "/v1/me/passkeys", token=token)[1]["passkeys"]
    assert listed["name"] == "Ann's laptop" and listed["synced"] is False and "lastUsedAt" not in listed, listed
    [held] = b.credentials()
    assert held["isResidentCredential"] and held["rpId"] == "localhost", held

    # The registration the server accepted (201), checked again by py_webauthn and python-fido2.
    [(_, status, created)] = b.exchanges("POST", "/v1/me/passkeys/options")
    [(sent, status, summary)] = b.exchanges("POST", "/v1/me/passkeys")
    assert status == 201 and summary["id"] == listed["id"], (status, summary)
    assert created["publicKey"]["user"]["name"] == "wpkann", created
    registration = verify_registration(server, created, sent)
    assert base64.b64decode(held["credentialId"]) == registration[0].credential_id
    sign_count = registration[0].sign_count

    # Signed out: the button signs in with no username (a discoverable passkey names the account).
    sign_out(page)
    expect(page.get_by_label("Username")).to_have_attribute("autocomplete", "username webauthn")
    b.p.shot("passkeys-sign-in")
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Signed in as wpkann")).to_be_visible(timeout=30_000)
    [(sent, status, signed_in)] = b.exchanges("POST", "/v1/sessions/passkey")
    assert status == 201 and signed_in["account"]["username"] == "wpkann", (status, signed_in)
    options = b.options_answered("/v1/sessions/passkey/options", sent)
    assert options["publicKey"]["allowCredentials"] == [], options
    assert sent["credential"]["response"]["userHandle"] == created["publicKey"]["user"]["id"], sent
    assert verify_assertion(server, options, sent, registration, sign_count) > sign_count
    # One modal request each: no autofill in this browser, nothing left pending.
    assert [(c["kind"], c["mediation"], c["state"]) for c in b.calls()] == [("create", "optional", "resolved"), ("get", "optional", "resolved")], b.calls()
    token = b.token()
    [listed] = server.api("GET", "/v1/me/passkeys", token=token)[1]["passkeys"]
    assert listed.get("lastUsedAt"), listed
    events = audit(server, token)
    assert ("passkey", "created") in events and ("sign-in", "success-passkey") in events, events
    b.ceremonies.verify(server, registration=1, sign_in=1)
    assert b.ceremonies.check_held(b.cdp, b.id) == 1
    b.close()


def test_passkey_autofill_on_the_username_field(server, browser):
    """Headless Chromium offers conditional mediation (isConditionalMediationAvailable() is true). Its
    virtual authenticator refuses a conditional request at once when it holds no passkey for the site,
    answers it at once when it holds one, and keeps it pending while presence simulation is off: each
    of the page's paths is seen through that."""
    api_account(server, "wpkbea")
    b = PasskeyPage(browser, server)
    page = b.page
    expect(page.get_by_label("Username")).to_have_attribute("autocomplete", "username webauthn")
    page.wait_for_function("() => window.__webauthn.length === 1 && window.__webauthn[0].state !== 'pending'")
    # Refused by the browser (no passkey here yet): not the user's answer, so the page says nothing.
    assert [(c["mediation"], c["state"]) for c in b.calls()] == [("conditional", "NotAllowedError")], b.calls()
    expect(page.get_by_role("alert")).to_have_text("")
    sign_in(b.p, "wpkbea")
    expect(page.get_by_role("heading", name="Signed in as wpkbea")).to_be_visible(timeout=SLOW)
    section = open_passkeys(page)
    add_passkey(page, section, "Bea's phone")

    # The authenticator waits for a touch: the autofill's request stays pending on the sign-in screen.
    b.cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": b.id, "enabled": False})
    # The index (+1) of the autofill's pending request, once there is one.
    pending = "() => window.__webauthn.findIndex((c) => c.mediation === 'conditional' && c.state === 'pending' && !c.aborted) + 1"
    sign_out(page)
    before = page.wait_for_function(pending).json_value()
    # Sending the password aborts it, and nothing is said about it.
    sign_in(b.p, "wpkbea")
    expect(page.get_by_role("heading", name="Signed in as wpkbea")).to_be_visible(timeout=SLOW)
    calls = b.calls()
    assert [(c["mediation"], c["aborted"], c["state"]) for c in calls[before - 1:]] == [("conditional", True, "AbortError")], calls
    # The button aborts it too, before its own request (answered once the authenticator is touched).
    page.get_by_role("button", name="Sign out").click()
    before = page.wait_for_function(pending).json_value()
    b.cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": b.id, "enabled": True})
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Signed in as wpkbea")).to_be_visible(timeout=30_000)
    calls = b.calls()
    assert [(c["mediation"], c["aborted"], c["state"]) for c in calls[before - 1:]] == [("conditional", True, "AbortError"), ("optional", False, "resolved")], calls
    # And the autofill itself: the passkey chosen (the authenticator answers at once) signs in, no click.
    before = len(b.calls())
    page.get_by_role("button", name="Sign out").click()
    # (The home screen's heading stays until the sign-out is done: wait for the request's answer first.)
    page.wait_for_function("(n) => window.__webauthn.slice(n).some((c) => c.state !== 'pending')", arg=before)
    expect(page.get_by_role("heading", name="Signed in as wpkbea")).to_be_visible(timeout=30_000)
    calls = b.calls()
    assert [(c["mediation"], c["state"]) for c in calls[before:]] == [("conditional", "resolved")], calls
    statuses = [status for _, status, _ in b.exchanges("POST", "/v1/sessions/passkey")]
    assert statuses == [201, 201], statuses
    events = audit(server, b.token())
    assert events.count(("sign-in", "success-passkey")) == 2, events
    b.ceremonies.verify(server, registration=1, sign_in=2)
    assert b.ceremonies.check_held(b.cdp, b.id) == 1
    b.close()


def test_passkey_finishes_the_second_factor_after_the_password(server, browser):
    token = api_account(server, "wpkcyd")
    status, enrollment, _ = server.api("POST", "/v1/me/mfa/totp", {}, token)
    assert status in (200, 201), (status, enrollment)
    secret = enrollment["secret"]
    assert server.api("POST", "/v1/me/mfa/totp/confirm", {"code": totp(secret)}, token)[0] == 200
    b = PasskeyPage(browser, server, autofill=False)
    page = b.page
    sign_in(b.p, "wpkcyd")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible(timeout=SLOW)
    # No passkey yet: the choice is the passcode's (and no passkey button).
    expect(page.get_by_role("button", name="Use a passkey")).to_be_hidden()
    page.get_by_label("One-time passcode").fill(totp(secret, "now + 30 seconds"))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Signed in as wpkcyd")).to_be_visible(timeout=30_000)
    section = open_passkeys(page)
    add_passkey(page, section, "Cyd's key")
    sign_out(page)
    sign_in(b.p, "wpkcyd")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible(timeout=SLOW)
    expect(page.get_by_role("button", name="Use a passkey")).to_be_visible()
    expect(page.get_by_label("One-time passcode")).to_be_visible()
    b.p.shot("passkeys-second-factor")
    page.get_by_role("button", name="Use a passkey").click()
    expect(page.get_by_role("heading", name="Signed in as wpkcyd")).to_be_visible(timeout=30_000)
    [(_, status, view)] = b.exchanges("POST", "/v1/mfa/transactions/[^/]+/passkey")
    assert status == 200 and view["status"] == "COMPLETED", (status, view)
    events = audit(server, b.token())
    assert ("mfa", "approved-passkey") in events and ("sign-in", "success-passkey") in events, events
    b.ceremonies.verify(server, registration=1, second_factor=1)
    assert b.ceremonies.check_held(b.cdp, b.id) == 1
    b.close()


def test_passkey_re_authenticates_a_sensitive_action(server, browser):
    api_account(server, "wpkdee")
    b = PasskeyPage(browser, server, autofill=False)
    page = b.page
    sign_in(b.p, "wpkdee")
    section = open_passkeys(page)
    add_passkey(page, section, "Dee's laptop")
    # The last full authentication, 11 minutes ago: past the 10 minutes a change of factors allows.
    db = sqlite3.connect(os.path.join(server.dir, "web.sqlite"), timeout=10)
    with db:
        db.execute(
            "UPDATE sessions SET authenticated_at = authenticated_at - 660000 WHERE account_id = (SELECT id FROM accounts WHERE username = ?)",
            ("wpkdee",),
        )
    db.close()
    support.settings_section(page, "Two-factor")
    two_factor = page.get_by_role("region", name="Two-factor sign-in")
    two_factor.get_by_role("button", name="Create recovery codes").click()
    confirm = two_factor.get_by_role("button", name="Confirm with a passkey")
    expect(confirm).to_be_visible()
    expect(two_factor).to_contain_text("Enter your password to confirm. Or use one of your passkeys.")
    b.p.shot("passkeys-reauth")
    confirm.click()
    expect(two_factor.get_by_role("list", name="Recovery codes").get_by_role("listitem")).to_have_count(10, timeout=30_000)
    expect(confirm).to_have_count(0)
    events = audit(server, b.token())
    assert ("reauth", "success-passkey") in events, events
    b.ceremonies.verify(server, registration=1, reauth=1)
    assert b.ceremonies.check_held(b.cdp, b.id) == 1
    b.close()


def test_passkey_rename_remove_and_the_authenticators_name(server, browser):
    api_account(server, "wpkeve")
    # A synced passkey (backup eligible, backed up), as a password manager's.
    b = PasskeyPage(browser, server, autofill=False, defaultBackupEligibility=True, defaultBackupState=True)
    page = b.page
    sign_in(b.p, "wpkeve")
    section = open_passkeys(page)
    add_passkey(page, section)
    items = section.get_by_role("list", name="Passkeys").get_by_role("listitem")
    # No name typed and an unknown AAGUID: named "Passkey".
    expect(items.first.locator("strong")).to_have_text("Passkey")
    expect(items.first).to_contain_text("Passkey · Synced (backed up)")
    # A known AAGUID (Google Password Manager's, answered in place of the virtual one) is named.
    google = "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"

    def known(route):
        answer = route.fetch()
        body = answer.json()
        for p in body["passkeys"]:
            p["aaguid"] = google
        route.fulfill(response=answer, json=body)

    page.route("**/v1/me/passkeys", lambda route: known(route) if route.request.method == "GET" else route.fallback())
    page.get_by_role("button", name="Back").click()
    support.open_settings(page, "Passkeys")
    expect(items.first).to_contain_text("Google Password Manager · Synced (backed up)")
    section.screenshot(path=os.path.join(support.ARTIFACTS, "passkeys-section-known.png"))
    page.unroute("**/v1/me/passkeys")
    # Rename.
    section.get_by_role("button", name="Rename passkey Passkey").click()
    section.get_by_label("New passkey name").fill("Eve's vault")
    section.get_by_role("button", name="Save passkey name").click()
    expect(page.get_by_role("status")).to_have_text("Passkey renamed.")
    expect(items.first.locator("strong")).to_have_text("Eve's vault")
    token = b.token()
    assert [p["name"] for p in server.api("GET", "/v1/me/passkeys", token=token)[1]["passkeys"]] == ["Eve's vault"]
    # Remove: a second press; "Keep it" keeps it.
    section.get_by_role("button", name="Remove passkey Eve's vault").click()
    expect(section).to_contain_text("Remove Eve's vault? It stops signing you in here")
    section.get_by_role("button", name="Keep it").click()
    expect(items).to_have_count(1)
    section.get_by_role("button", name="Remove passkey Eve's vault").click()
    section.get_by_role("button", name="Remove passkey", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Passkey Eve's vault removed")
    expect(section).to_contain_text("No passkeys yet")
    assert server.api("GET", "/v1/me/passkeys", token=token)[1]["passkeys"] == []
    events = audit(server, token)
    assert {("passkey", "created"), ("passkey", "renamed"), ("passkey", "removed")} <= set(events), events
    # The authenticator still holds it: a sign-in with it is refused by the server, in words.
    sign_out(page)
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("alert")).to_have_text(
        f"This passkey is not registered for your account here (it may have been removed). {SIGN_IN_AGAIN}", timeout=30_000)
    [(_, status, problem)] = b.exchanges("POST", "/v1/sessions/passkey")
    assert status == 422 and problem["code"] == "passkey-refused" and problem["reason"] == "unknown-credential", (status, problem)
    # The registration, re-verified; the passkey is gone from the server, and the sign-in by it was refused.
    b.ceremonies.verify(server, registration=1, removed=1)
    assert [c.status for c in b.ceremonies.refused()] == [422], b.ceremonies.posted
    b.close()


def test_passkey_unverified_user_and_a_copied_passkey_are_refused(server, browser):
    api_account(server, "wpkfay")
    b = PasskeyPage(browser, server, autofill=False)
    page = b.page
    sign_in(b.p, "wpkfay")
    section = open_passkeys(page)
    add_passkey(page, section, "Fay's laptop")
    sign_out(page)
    # The authenticator cannot verify the user: the browser refuses before anything reaches the server.
    b.cdp.send("WebAuthn.setUserVerified", {"authenticatorId": b.id, "isUserVerified": False})
    page.get_by_role("button", name="Sign in with a passkey").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("your authenticator did not verify you (its PIN, fingerprint or face)", timeout=30_000)
    expect(alert).to_contain_text(SIGN_IN_AGAIN)
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_be_enabled()
    b.p.shot("passkeys-sign-in-unverified")
    assert b.exchanges("POST", "/v1/sessions/passkey", expect_some=False) == [], "no answer was sent"
    token = api_sign_in(server, "wpkfay")
    events = audit(server, token)
    assert ("sign-in", "success-passkey") not in events and ("sign-in", "wrong-passkey") not in events, events
    [listed] = server.api("GET", "/v1/me/passkeys", token=token)[1]["passkeys"]
    assert "lastUsedAt" not in listed, listed
    # A copy of this device-bound passkey on another authenticator, whose counter starts again (this
    # Chromium's virtual authenticator keeps refusing after a failed verification, so the copy is the
    # way on): the server refuses it, says why, and audits it.
    [held] = b.credentials()
    b.cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": b.id})
    b.id = b.cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {"options": {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True, "isUserVerified": True}},
    )["authenticatorId"]
    b.cdp.send("WebAuthn.addCredential", {"authenticatorId": b.id, "credential": {**held, "signCount": 0}})
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(alert).to_contain_text("signature counter did not increase: it may have been copied", timeout=30_000)
    b.p.shot("passkeys-sign-in-counter")
    [(_, status, problem)] = b.exchanges("POST", "/v1/sessions/passkey")
    assert status == 422 and problem["reason"] == "counter", (status, problem)
    events = audit(server, token)
    assert ("sign-in", "wrong-passkey") in events and ("sign-in", "passkey-counter-not-increasing") in events, events
    # The registration, re-verified; the copy's answer is refused by py_webauthn too, for its sign count.
    b.ceremonies.verify(server, registration=1)
    [copied] = b.ceremonies.refused("sign_in")
    assert copied.status == 422, copied
    refusal = b.ceremonies.refused_by_py_webauthn(server, copied)
    assert "sign count" in str(refusal), refusal
    b.close()
