"""Approvals: the browser paired as an authenticator answers the CLI's sign-ins (number matching,
"Approve", "Deny", "This wasn't me", a wrong number), shows a passcode the server accepts, ignores a
tampered challenge; and the browser signs in with a push approved by the CLI authenticator."""
import base64
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time

import support
from support import SLOW, Page, api_account, api_sign_in, expect, page_function, sign_in, sign_up, solve_captcha
from tests_messages import Cli


class Login:
    """`countersign account login USER` in the background, in its own process group (stopped by close(),
    whatever happened), waiting on its second factor."""

    def __init__(self, cli, username, *extra):
        self.process = subprocess.Popen(
            [support.BINARY, "account", "login", username, "--password-file", cli.password_file, *extra],
            env=cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        self.lines = queue.Queue()
        self.out = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)

    def number(self, timeout=SLOW / 1000):
        """The "Number to match: NN" the CLI prints."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.process.poll() is not None:
                    raise AssertionError(f"login exited {self.process.returncode} before a number: {self.process.stderr.read()}")
                continue
            self.out.append(line)
            match = re.fullmatch(r"Number to match: (\d{2}|\d{6})\n", line)
            if match:
                return match.group(1)
        raise AssertionError(f"no number to match within {timeout} s: {self.out}")

    def wait(self, timeout=60):
        code = self.process.wait(timeout)
        time.sleep(0.2)
        while not self.lines.empty():
            self.out.append(self.lines.get())
        return code, "".join(self.out), self.process.stderr.read()

    def close(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def requests_list(page):
    return page.get_by_role("list", name="Sign-in requests")


def b64url_json(part):
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def b64url(value):
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def audit(server, token):
    return [(e["kind"], e["outcome"]) for e in server.api("GET", "/v1/me/audit?limit=50", token=token)[1]["events"]]


def test_approvals_the_browser_pairs_and_answers_cli_sign_ins(server, browser):
    p = Page(browser, server)
    page = p.page
    cli = Cli(server)
    other = Cli(server)
    logins = []

    def login(*extra):
        logins.append(Login(cli, "iona", *extra))
        return logins[-1]

    # Every challenge the browser's sockets receive, to tamper with one later.
    challenges = []
    page.on("websocket", lambda ws: ws.on(
        "framereceived",
        lambda frame: isinstance(frame, str) and '"mfaChallenge"' in frame and challenges.append(json.loads(frame)["jwt"]),
    ))
    try:
        sign_up(p, "iona")
        expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        # A full authentication before the second factor exists, for the policy changes below.
        token = api_sign_in(server, "iona")
        support.open_settings(page, "Two-factor")
        # As the only second factor, a browser that answers only while signed in could lock iona out.
        page.get_by_role("button", name="Pair this browser as an authenticator").click()
        expect(page.get_by_text(re.compile("cannot be your only second factor")).first).to_be_visible(timeout=30_000)
        assert server.api("GET", "/v1/me/mfa", token=token)[1]["authenticators"] == []
        status, codes, _ = server.api("POST", "/v1/me/mfa/recovery-codes", None, token)
        assert status == 201, (status, codes)
        page.get_by_role("button", name="Pair this browser as an authenticator").click()
        expect(page.get_by_text(re.compile(r"^Paired\. Sign-in requests for iona"))).to_be_visible(timeout=30_000)
        expect(page.get_by_role("button", name="Unpair this browser")).to_be_visible()
        p.shot("approvals-settings-paired")
        mfa = server.api("GET", "/v1/me/mfa", token=token)[1]
        assert mfa["enabled"] and len(mfa["authenticators"]) == 1, mfa
        assert mfa["authenticators"][0]["name"].startswith("Approvals in "), mfa
        # Two devices on the server: the messaging device and the authenticator.
        devices = server.api("GET", "/v1/devices", token=token)[1]["devices"]
        assert sorted(d["kind"] for d in devices) == ["authenticator", "messaging"], devices
        # Settings tells them apart too (after a return to the screen, which lists them afresh).
        page.get_by_role("button", name="Back").click()
        support.open_settings(page, "Devices")
        listed = page.get_by_role("list", name="Devices").get_by_role("listitem")
        expect(listed).to_have_count(2)
        expect(listed.filter(has_text="This browser")).to_contain_text("Messaging device")
        expect(listed.filter(has_text="Authenticator: approves sign-ins")).to_have_count(1)
        listed.first.scroll_into_view_if_needed()
        p.shot("settings-device-kinds")
        # Its keys and the TOTP secret are non-extractable CryptoKeys in IndexedDB.
        kept = page.evaluate(page_function("storage.js", "authenticatorKeys"))
        assert kept == [[False, False, False, "HMAC", "SHA-1", "sign"]], kept
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Approvals", exact=True).click()
        expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
        expect(page.get_by_test_id("approvals-state")).to_have_text("Sign-in requests arrive live.", timeout=30_000)
        expect(page.get_by_test_id("passcode")).to_have_text(re.compile(r"^\d{6}$"))
        p.shot("approvals-empty")
        page.get_by_role("button", name="Back").click()
        expect(page.get_by_role("heading", name="Signed in as iona")).to_be_visible()

        # 1. The default policy (ENTER_MANUALLY): the number is typed; who, where, when are shown. On
        # another screen, a bar says a request is waiting.
        first = login()
        number = first.number()
        expect(page.get_by_text("A sign-in request for iona is waiting for your answer.")).to_be_visible(timeout=30_000)
        p.shot("approvals-waiting")
        page.get_by_role("button", name="Open Approvals").click()
        expect(page.get_by_role("button", name="Open Approvals")).to_be_hidden()
        request = requests_list(page).get_by_role("listitem")
        expect(request).to_have_count(1, timeout=30_000)
        expect(request).to_contain_text("Sign-in request for iona")
        expect(request).to_contain_text("127.0.0.1")
        for fact in ("From", "Browser or app", "When", "Expires"):
            expect(request.get_by_text(fact, exact=True)).to_be_visible()
        # ENTER_MANUALLY carries no number: nothing to pick, a field to type it.
        expect(request.get_by_role("group", name="Number to match")).to_have_count(0)
        p.shot("approvals-request-typed")
        request.get_by_label("Number shown on the sign-in screen").fill(number)
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_text("Approved: iona's sign-in from 127.0.0.1 is complete.")).to_be_visible(timeout=30_000)
        code, out, err = first.wait()
        assert code == 0 and "signed in as iona" in out, (code, out, err)
        expect(request).to_have_count(0)

        # A tampered challenge (its claims changed under the server's signature) and one for another
        # authenticator are not shown: injected as the pending list the browser polls.
        assert challenges, "the challenge came over the push channel"
        header, payload, signature = challenges[0].split(".")
        claims = b64url_json(payload)
        forged = [
            f"{header}.{b64url(dict(claims, ctx=dict(claims['ctx'], address='203.0.113.66'), exp=int(time.time()) + 120))}.{signature}",
            f"{header}.{payload}.{signature[:-4]}AAAA",
        ]
        page.route("**/v1/authenticator/challenges", lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps({"challenges": [{"jwt": j} for j in forged]}),
        ))
        expect(page.get_by_role("alert").filter(has_text="did not verify")).to_be_visible(timeout=30_000)
        expect(request).to_have_count(0)
        assert "203.0.113.66" not in page.locator("main").inner_text()
        page.unroute("**/v1/authenticator/challenges")

        # 2. SELECT_NUMBER: the three numbers as buttons named by their number; the right one approves.
        status, body, _ = server.api("PUT", "/v1/me/mfa/settings", {"numberMatching": "SELECT_NUMBER", "numberDigits": 2}, token)
        assert status == 200, (status, body)
        second = login()
        number = second.number()
        expect(request).to_have_count(1, timeout=30_000)
        choices = request.get_by_role("group", name="Number to match").get_by_role("button")
        expect(choices).to_have_count(3)
        assert number in [c.inner_text() for c in choices.all()]
        # Approve before picking: asked to pick first, nothing sent.
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("alert").filter(has_text="Pick the number")).to_be_visible()
        request.get_by_role("button", name=number, exact=True).click()
        expect(request.get_by_role("button", name=number, exact=True)).to_have_attribute("aria-pressed", "true")
        p.shot("approvals-request")
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_text("Approved: iona's sign-in from 127.0.0.1 is complete.")).to_be_visible(timeout=30_000)
        code, out, err = second.wait()
        assert code == 0 and "signed in as iona" in out, (code, out, err)

        # A re-authentication's push says it is no new sign-in; approving it confirms that session.
        status, pending, _ = server.api(
            "POST", "/v1/sessions/current/reauth", {"password": "correct horse battery", "captcha": solve_captcha(server)}, token
        )
        assert status == 202, (status, pending)
        number = pending["transaction"]["numberMatching"]["number"]
        expect(request).to_have_count(1, timeout=30_000)
        expect(request).to_contain_text("Confirm a change for iona")
        expect(request).to_contain_text("Already signed in: not a new sign-in")
        expect(request).to_contain_text("Python-urllib")
        request.get_by_role("button", name=number, exact=True).click()
        p.shot("approvals-reauthentication")
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_text("Approved: iona's confirmation of a change from 127.0.0.1 is complete.")).to_be_visible(timeout=30_000)
        path = f"/v1/mfa/transactions/{pending['transaction']['id']}/session"
        assert server.api("POST", path, None, pending["binding"])[0] == 204

        # 3. "Deny": the CLI's sign-in fails; audited.
        third = login()
        third.number()
        expect(request).to_have_count(1, timeout=30_000)
        request.get_by_role("button", name="Deny").click()
        expect(page.get_by_text("Denied: iona's sign-in from 127.0.0.1 was refused.")).to_be_visible(timeout=30_000)
        code, out, err = third.wait()
        assert code != 0 and "FAILED" in err, (code, out, err)
        assert ("sign-in", "second-factor-denied") in audit(server, token), audit(server, token)

        # 4. The passcode the browser shows is accepted by the server (a sign-in with it resets the
        # failure count, so the two failures below stay under the lockout's delay).
        passcode = page.get_by_test_id("passcode").inner_text()
        assert re.fullmatch(r"\d{6}", passcode), passcode
        cli.run("account", "login", "iona", "--password-file", cli.password_file, "--otp", passcode)

        # 5. A wrong number fails the sign-in, with words.
        fifth = login()
        number = fifth.number()
        assert len(number) == 6, "after a denial the numbers have 6 digits"
        expect(request).to_have_count(1, timeout=30_000)
        wrong = next(c for c in [c.inner_text() for c in choices.all()] if c != number)
        request.get_by_role("button", name=wrong, exact=True).click()
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("alert").filter(has_text="The number did not match")).to_be_visible(timeout=30_000)
        p.shot("approvals-wrong-number")
        code, out, err = fifth.wait()
        assert code != 0 and "FAILED" in err, (code, out, err)

        # 6. "This wasn't me": refused, and push is suspended for the account.
        sixth = login()
        sixth.number()
        expect(request).to_have_count(1, timeout=30_000)
        request.get_by_role("button", name="This wasn't me").click()
        expect(page.get_by_text(re.compile(r"^Reported as not you: iona's sign-in"))).to_be_visible(timeout=30_000)
        p.shot("approvals-reported")
        code, out, err = sixth.wait()
        assert code != 0 and "FAILED" in err, (code, out, err)
        assert server.api("GET", "/v1/me/mfa", token=token)[1]["pushSuspended"] is True
        events = audit(server, token)
        assert ("sign-in", "second-factor-reported") in events and ("sign-in", "second-factor-wrong-number") in events, events

        # The account's only second factor is not unpaired from here: the server's words say why.
        page.get_by_role("button", name="Unpair this browser").click()
        expect(page.get_by_text(re.compile("only second factor"))).to_be_visible(timeout=15_000)
        assert len(server.api("GET", "/v1/me/mfa", token=token)[1]["authenticators"]) == 1
        # With another authenticator paired (the CLI), it is: revoked on the server, forgotten here.
        status, issued, _ = server.api("POST", "/v1/me/mfa/pairing-keys", None, token)
        assert status == 201, (status, issued)
        other.run("authenticator", "pair", issued["key"], "--server", server.url, "--no-passphrase", "--name", "iona's terminal")
        page.get_by_role("button", name="Unpair this browser").click()
        expect(page.get_by_text("This browser is not an authenticator for your account.")).to_be_visible(timeout=15_000)
        expect(page.get_by_role("button", name="Pair this browser as an authenticator")).to_be_visible()
        left = server.api("GET", "/v1/me/mfa", token=token)[1]["authenticators"]
        assert [a["name"] for a in left] == ["iona's terminal"], left
        assert ("mfa-unpair", "success") in audit(server, token), audit(server, token)
        count = page.evaluate(page_function("storage.js", "countRecords"), ["countersign", "authenticators"])
        assert count == 0, count
        p.shot("approvals-unpaired")
        p.close()
    finally:
        for each in logins:
            each.close()
        cli.close()
        other.close()


def test_approvals_sign_in_with_push_approval_from_the_cli_authenticator(server, browser):
    token = api_account(server, "kit")
    status, issued, _ = server.api("POST", "/v1/me/mfa/pairing-keys", None, token)
    assert status == 201, (status, issued)
    authenticator = Cli(server)
    try:
        paired = authenticator.run("authenticator", "pair", issued["key"], "--server", server.url, "--no-passphrase", "--name", "kit's terminal")
        assert "push: COMPLETED" in paired.stdout, paired.stdout

        def pending():
            for _ in range(30):
                listed = json.loads(authenticator.run("authenticator", "pending", "--json").stdout)
                if listed:
                    return listed
                time.sleep(1)
            raise AssertionError("no pending request on the CLI authenticator")

        p = Page(browser, server)
        page = p.page
        # A wrong number on the authenticator fails the sign-in, and the browser says so.
        sign_in(p, "kit")
        shown = page.locator(".number .digits")
        expect(shown).to_have_text(re.compile(r"^\d{2}$"), timeout=SLOW)
        number = shown.inner_text()
        wrong = f"{(int(number) + 1) % 100:02d}"
        [request] = pending()
        assert request["user"] == "kit" and request["numberMatchingType"] == "ENTER_MANUALLY", request
        result = authenticator.run("authenticator", "approve", request["id"], "--number", wrong, check=False)
        assert result.returncode != 0 and "FAILED" in result.stdout, (result.stdout, result.stderr)
        expect(page.get_by_role("status")).to_have_text("The wrong number was chosen on your authenticator.", timeout=30_000)
        # Not a dead end: "Try again" (a new push) and the account's other ways are offered.
        expect(page.get_by_text("Nothing was signed in. Try again for a new request on your authenticator, or use a passcode from your authenticator.")).to_be_visible()
        expect(page.get_by_role("button", name="Try again")).to_be_focused()
        p.shot("approvals-browser-wrong-number")
        # Again: the browser shows "Number to match" large; the authenticator approves with it, and the
        # browser finishes signing in by itself.
        page.get_by_role("button", name="Try again").click()
        expect(shown).to_have_text(re.compile(r"^\d{6}$"), timeout=SLOW)
        expect(page.get_by_text("Number to match")).to_be_visible()
        p.shot("approvals-browser-number-to-match")
        number = shown.inner_text()
        [request] = pending()
        result = authenticator.run("authenticator", "approve", request["id"], "--number", number)
        assert result.stdout.strip() == "COMPLETED", result.stdout
        expect(page.get_by_role("heading", name="Signed in as kit")).to_be_visible(timeout=30_000)
        # A wrong number again, then another way: the authenticator's passcode, with no new push.
        page.get_by_role("button", name="Sign out").click()
        sign_in(p, "kit")
        expect(shown).to_have_text(re.compile(r"^\d{6}$"), timeout=SLOW)
        [request] = pending()
        wrong = f"{(int(shown.inner_text()) + 1) % 1_000_000:06d}"
        authenticator.run("authenticator", "approve", request["id"], "--number", wrong, check=False)
        page.get_by_role("button", name="Use another way").click()
        expect(page.get_by_label("One-time passcode")).to_be_visible(timeout=SLOW)
        expect(shown).to_be_hidden()
        assert json.loads(authenticator.run("authenticator", "pending", "--json").stdout) == [], "no new push"
        p.shot("approvals-browser-another-way")
        page.get_by_label("One-time passcode").fill(authenticator.run("authenticator", "otp").stdout.split()[0])
        page.get_by_role("button", name="Verify").click()
        expect(page.get_by_role("heading", name="Signed in as kit")).to_be_visible(timeout=30_000)
        p.close()
    finally:
        authenticator.close()


def test_approvals_passcodes_match_rfc_6238(server, browser):
    """The browser's TOTP against RFC 6238's SHA-1 vectors, through a non-extractable HMAC key."""
    p = Page(browser, server)
    got = p.page.evaluate(page_function("vectors.js", "totpVectors"))
    assert got == {
        "out": ["94287082", "07081804", "14050471", "89005924", "69279037", "65353130"],
        "six": {"passcode": "287082", "validFrom": 30, "validUntil": 60, "timeWindowSize": 30},
    }, got
    p.close()


def test_approvals_a_qr_sign_in_is_completed_from_the_browsers_approvals(server, browser):
    """A web-only user finishes PingOne's QR flow: a QR sign-in started in one browser is claimed in the
    other's Approvals by its 8 characters, typed, and approved; another by its QR code (the camera and
    BarcodeDetector stood in for) and denied. A malformed code, another server's and an unknown one are
    refused with words."""
    phone = Page(browser, server)  # the authenticator
    page = phone.page
    laptops = []
    try:
        sign_up(phone, "rosa")
        expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        token = api_sign_in(server, "rosa")
        assert server.api("POST", "/v1/me/mfa/recovery-codes", None, token)[0] == 201
        support.open_settings(page, "Two-factor")
        page.get_by_role("button", name="Pair this browser as an authenticator").click()
        expect(page.get_by_text(re.compile(r"^Paired\. Sign-in requests for rosa"))).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Approvals", exact=True).click()
        panel = page.get_by_role("region", name="Sign in with a QR code")
        typed = panel.get_by_label("Code from the sign-in page")
        alert = page.get_by_role("alert")
        for given, words in (
            ("hello", "A sign-in code is 8 letters and digits, as the sign-in page shows them (like ABCD-2345)."),
            ("countersign://auth?authentication_code=ABCD2345&server=https://elsewhere.example",
             "This code is for another server (https://elsewhere.example), not this one: sign in there with its own authenticator."),
        ):
            typed.fill(given)
            panel.get_by_role("button", name="Continue").click()
            expect(alert).to_have_text(words)
        typed.fill("ABCD-2345")
        panel.get_by_role("button", name="Continue").click()
        expect(alert).to_have_text("The code is unknown, expired, or claimed by another authenticator; ask the sign-in screen for a new one.", timeout=15_000)

        def qr_sign_in():
            laptop = Page(browser, server)
            laptops.append(laptop)
            laptop.page.get_by_role("link", name="Sign in with a QR code").click()
            shown = laptop.page.get_by_test_id("auth-code")
            expect(shown).to_have_text(re.compile(r"^[2-9A-Z]{4}-[2-9A-Z]{4}$"), timeout=15_000)
            return laptop, shown.inner_text()

        # Typed (in lower case, as someone might): claimed, shown as a push is, approved.
        laptop, code = qr_sign_in()
        typed.fill(code.lower())
        panel.get_by_role("button", name="Continue").click()
        request = panel.get_by_role("listitem", name=re.compile("^QR sign-in request from "))
        expect(request).to_contain_text("QR sign-in request for rosa")
        expect(request).to_contain_text("rosa (Ada Lovelace)")
        expect(request.get_by_role("button", name="Approve")).to_be_focused()
        expect(laptop.page.get_by_role("status")).to_have_text("Your authenticator has the code: approve the sign-in there.", timeout=15_000)
        phone.shot("approvals-qr-request")
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("status")).to_contain_text("Approved: rosa's sign-in from ")
        expect(request).to_have_count(0)
        expect(laptop.page.get_by_role("heading", name="Signed in as rosa")).to_be_visible(timeout=15_000)

        # Scanned: the camera and the detector stood in for (this Chromium has no BarcodeDetector), then denied.
        page.evaluate(page_function("page.js", "standInCamera"))
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Approvals", exact=True).click()
        laptop, code = qr_sign_in()
        panel.get_by_role("button", name="Scan the QR code").click()
        expect(page.get_by_role("status")).to_have_text("Point the camera at the QR code on the sign-in page.")
        expect(panel.get_by_label("Camera")).to_be_visible()
        phone.shot("approvals-qr-scanning")
        page.evaluate("(uri) => (window.__qr = uri)", f"countersign://auth?authentication_code={code.replace('-', '')}&server={server.url}")
        request.get_by_role("button", name="Deny").click()
        expect(page.get_by_role("status")).to_contain_text("Denied: the sign-in from ")
        expect(panel.get_by_label("Camera")).to_be_hidden()
        assert page.evaluate("document.querySelector('video').srcObject") is None, "the camera is off"
        expect(laptop.page.get_by_role("status")).to_have_text("The sign-in was denied on your authenticator.", timeout=15_000)
        for each in laptops:
            each.close()
        phone.close()
    finally:
        for each in laptops:
            each.context.close()


def test_approvals_a_wrong_number_while_confirming_it_is_you_offers_try_again(server, browser):
    """The re-authentication's second factor (the privacy overlay after the interval) is no dead end
    either: a wrong number, then "Try again" sends a new push, and the right number unlocks."""
    token = api_account(server, "lex")
    status, issued, _ = server.api("POST", "/v1/me/mfa/pairing-keys", None, token)
    assert status == 201, (status, issued)
    authenticator = Cli(server)
    try:
        authenticator.run("authenticator", "pair", issued["key"], "--server", server.url, "--no-passphrase", "--name", "lex's terminal")

        def approve(number):
            for _ in range(30):
                listed = json.loads(authenticator.run("authenticator", "pending", "--json").stdout)
                if listed:
                    return authenticator.run("authenticator", "approve", listed[0]["id"], "--number", number, check=False).stdout.strip()
                time.sleep(1)
            raise AssertionError("no pending request on the CLI authenticator")

        p = Page(browser, server)
        page = p.page
        sign_in(p, "lex")
        shown = page.locator(".number .digits")
        expect(shown).to_have_text(re.compile(r"^\d{2}$"), timeout=SLOW)
        assert approve(shown.inner_text()) == "COMPLETED"
        expect(page.get_by_role("heading", name="Signed in as lex")).to_be_visible(timeout=30_000)
        support.open_settings(page, "Security")
        page.get_by_label("5 min").check()
        page.get_by_role("button", name="Save interval").click()
        expect(page.get_by_role("status").first).to_have_text("Re-authentication interval saved.")
        set_visibility = page_function("page.js", "setVisibility")
        page.evaluate(set_visibility, "hidden")
        page.evaluate("() => { const real = Date.now.bind(Date); Date.now = () => real() + 6 * 60 * 1000; }")
        page.evaluate(set_visibility, "visible")
        overlay = page.get_by_role("dialog", name="Countersign is hidden")
        overlay.get_by_label("Password").fill("correct horse battery")
        overlay.get_by_role("button", name="Unlock").click()
        expect(overlay.get_by_role("heading", name="Confirm it is you")).to_be_visible(timeout=SLOW)
        expect(shown).to_have_text(re.compile(r"^\d{2}$"), timeout=SLOW)
        assert approve(f"{(int(shown.inner_text()) + 1) % 100:02d}") == "FAILED"
        expect(overlay.get_by_role("status")).to_have_text("The wrong number was chosen on your authenticator.", timeout=30_000)
        overlay.get_by_role("button", name="Try again").click()
        # After a wrong number the account's numbers have 6 digits for a day.
        expect(shown).to_have_text(re.compile(r"^\d{6}$"), timeout=SLOW)
        assert approve(shown.inner_text()) == "COMPLETED"
        expect(overlay).to_have_count(0, timeout=30_000)
        expect(page.get_by_role("heading", name="Settings")).to_be_visible()
        p.close()
    finally:
        authenticator.close()
