"""Two-factor sign-in in the browser: the QR encoder read back by zbarimg, the authenticator app enrolled
from its otpauth QR and checked with oathtool, recovery codes, pairing the CLI authenticator from the
pairing key's QR, number matching, and QR sign-in approved, denied and expired by the CLI authenticator.

Every QR code is read from a screenshot by `zbarimg` (Debian zbar-tools), an independent decoder.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse

import support
from support import Page, api_account, expect, page_function, sign_in, sign_up, totp

PASSWORD = "correct horse battery"


def decode(p, image, name):
    """The text of the QR code `image` (a locator) as the browser drew it, read by zbarimg."""
    path = os.path.join(support.ARTIFACTS, f"{name}.png")
    image.screenshot(path=path)
    result = subprocess.run(["zbarimg", "--quiet", "--raw", path], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"zbarimg read nothing in {path}: {result.stderr}"
    assert result.stdout.endswith("\n"), result.stdout
    return result.stdout[:-1]


class Authenticator:
    """The CLI authenticator in a config directory of its own; every command runs to its end."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cs-web-authenticator-")

    def run(self, *args, ok=True):
        result = subprocess.run(
            [support.BINARY, "authenticator", *args],
            env=dict(os.environ, COUNTERSIGN_CONFIG_DIR=self.dir),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, start_new_session=True,
        )
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def pending(self):
        """The first push challenge waiting for this authenticator (waits a few seconds for it)."""
        import json

        for _ in range(50):
            rows = json.loads(self.run("pending", "--json").stdout)
            if rows:
                return rows[0]
            time.sleep(0.2)
        raise AssertionError("no sign-in request reached the authenticator")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def other_code(secret):
    """A six-digit code that is none of the codes the server would accept now."""
    near = {totp(secret, when) for when in ("now - 30 seconds", "now", "now + 30 seconds", "now + 60 seconds")}
    return next(c for c in ("000000", "111111", "222222") if c not in near)


def open_settings(p, username):
    page = p.page
    expect(page.get_by_role("status").first).to_contain_text("Device ready", timeout=60_000)
    support.open_settings(page, "Two-factor")
    section = page.get_by_role("region", name="Two-factor sign-in")
    expect(section.get_by_text("Recovery codes left")).to_be_visible()
    return section


# ---------------------------------------------------------------------------------------------------------


def test_two_factor_qr_encoder_is_read_back_by_zbarimg(server, browser):
    """Texts from 1 byte to version 40's capacity at level M, each level, each forced mask, and UTF-8."""
    p = Page(browser, server)
    page = p.page
    page.set_viewport_size({"width": 900, "height": 900})
    safety = "".join(str((i * 7) % 10) for i in range(60))
    otpauth = "otpauth://totp/Countersign:ada?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Countersign&algorithm=SHA1&digits=6&period=30"
    filler = "".join("abcdefghijklmnopqrstuvwxyz0123456789/:?&=._-"[(i * 37) % 44] for i in range(2331))
    cases = [
        ("A", {}), (safety, {}), (otpauth, {}), ("countersign://auth?authentication_code=ABCDEFGH&server=http://localhost:1", {}),
        (filler[:100], {}), (filler[:400], {}), (filler[:1000], {}), (filler[:1700], {}), (filler, {}),
        ("Grüße aus Zürich — 安全 ✓", {}),
        (otpauth, {"level": "L"}), (otpauth, {"level": "Q"}), (otpauth, {"level": "H"}),
    ] + [(f"countersign://pair?key=ABCDEFGHJKMN&mask={m}", {"mask": m}) for m in range(8)]
    versions = page.evaluate(
        page_function("qr.js", "drawQrCodes"),
        cases,
    )
    assert versions[0] == 1 and versions[8] == 40, versions
    assert len(set(versions)) >= 8, versions
    for i, (text, options) in enumerate(cases):
        image = page.get_by_role("img", name=f"QR code of test {i}", exact=True)
        got = decode(p, image, f"two-factor-qr-test-{i}")
        assert got == text, (i, options, versions[i], got[:80], text[:80])
    # One byte more than version 40 holds is refused, and a QR code without words for it too.
    refusals = page.evaluate(
        page_function("qr.js", "qrRefusals"),
        len(filler) + 1,
    )
    assert refusals == ["RangeError", "TypeError"], refusals
    p.close()


def test_two_factor_app_enrollment_recovery_codes_and_sign_in(server, browser):
    p = Page(browser, server)
    page = p.page
    sign_up(p, "tina")
    section = open_settings(p, "tina")
    expect(section).to_contain_text("Off: the password alone signs in")
    p.shot("two-factor-settings")

    section.get_by_role("button", name="Set up authenticator app").click()
    image = section.get_by_role("img", name="QR code of the authenticator app's secret")
    expect(image).to_be_visible()
    p.shot("two-factor-app")
    uri = decode(p, image, "two-factor-app-qr")
    parsed = urllib.parse.urlparse(uri)
    query = dict(urllib.parse.parse_qsl(parsed.query))
    assert parsed.scheme == "otpauth" and parsed.netloc == "totp" and parsed.path == "/Countersign:tina", uri
    assert query["issuer"] == "Countersign" and query["digits"] == "6" and query["period"] == "30", query
    secret = query["secret"]
    # The same secret as text, in groups of four, for typing.
    shown = section.get_by_test_id("totp-secret").inner_text()
    assert re.fullmatch(r"([A-Z2-7]{4} )*[A-Z2-7]{1,4}", shown), shown
    assert shown.replace(" ", "") == secret

    # A wrong code: the server's words, and the form stays.
    section.get_by_label("Code from the app").fill(other_code(secret))
    section.get_by_role("button", name="Confirm app").click()
    expect(page.get_by_role("alert")).to_have_text(
        "The passcode is not the current one for this secret; check the device's clock and try the next code."
    )
    p.shot("two-factor-app-wrong-code")
    section.get_by_label("Code from the app").fill(totp(secret))
    section.get_by_role("button", name="Confirm app").click()
    expect(page.get_by_role("status")).to_have_text(
        "Authenticator app set up: signing in now asks for a passcode. Create recovery codes too, in case you lose the app."
    )
    expect(section).to_contain_text("On: signing in needs a second factor")
    expect(section.get_by_role("img", name="QR code of the authenticator app's secret")).to_have_count(0)

    # Recovery codes: ten, shown once with the warning, gone once saved.
    section.get_by_role("button", name="Create recovery codes").click()
    codes_list = section.get_by_role("list", name="Recovery codes")
    expect(codes_list.get_by_role("listitem")).to_have_count(10)
    expect(section.get_by_role("note")).to_contain_text("shown only this once")
    p.shot("two-factor-recovery-codes")
    codes = codes_list.get_by_role("listitem").all_inner_texts()
    assert all(re.fullmatch(r"[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}", c) for c in codes), codes
    assert len(set(codes)) == 10
    section.get_by_role("button", name="I have saved them").click()
    expect(codes_list).to_have_count(0)
    expect(page.get_by_role("status")).to_have_text("Recovery codes hidden. They are not shown again.")
    expect(section.get_by_role("definition").nth(3)).to_have_text("10")
    expect(section.get_by_role("button", name="Replace recovery codes")).to_be_visible()

    # A passcode signs in (the confirmation spent this step's code; the next step's is in the window).
    page.get_by_role("button", name="Back").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(p, "tina")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible(timeout=60_000)
    page.get_by_label("One-time passcode").fill(totp(secret, "now + 30 seconds"))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Signed in as tina")).to_be_visible(timeout=30_000)

    # A recovery code signs in once.
    page.get_by_role("button", name="Sign out").click()
    sign_in(p, "tina")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible(timeout=60_000)
    page.get_by_label("Recovery code").fill(codes[3].lower())
    page.get_by_role("button", name="Use recovery code").click()
    expect(page.get_by_role("heading", name="Signed in as tina")).to_be_visible(timeout=30_000)
    section = open_settings(p, "tina")
    expect(section.get_by_role("definition").nth(3)).to_have_text("9")

    # Turned off, after a second press: the password alone signs in again.
    section.get_by_role("button", name="Turn two-factor sign-in off").click()
    p.shot("two-factor-turn-off")
    section.get_by_role("button", name="Turn off", exact=True).click()
    expect(page.get_by_role("status")).to_have_text(
        "Two-factor sign-in is off: the password alone signs in again, and your authenticators were unpaired."
    )
    expect(section).to_contain_text("Off: the password alone signs in")
    expect(section.get_by_role("button", name="Set up authenticator app")).to_be_visible()
    page.get_by_role("button", name="Back").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(p, "tina")
    expect(page.get_by_role("heading", name="Signed in as tina")).to_be_visible(timeout=60_000)
    p.close()


def test_two_factor_pairing_key_qr_pairs_the_cli_authenticator_and_number_matching(server, browser):
    p = Page(browser, server)
    page = p.page
    authenticator = Authenticator()
    try:
        sign_up(p, "pia")
        section = open_settings(p, "pia")
        section.get_by_role("button", name="Create a pairing key").click()
        image = section.get_by_role("img", name="QR code of the pairing key")
        expect(image).to_be_visible()
        p.shot("two-factor-pairing-key")
        uri = decode(p, image, "two-factor-pairing-qr")
        parsed = urllib.parse.urlparse(uri)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        assert parsed.scheme == "countersign" and parsed.netloc == "pair", uri
        assert query["server"] == server.url, (query, server.url)
        key = query["key"]
        shown = section.get_by_test_id("pairing-key").inner_text()
        assert re.fullmatch(r"[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}", shown), shown
        assert shown.replace("-", "") == key

        paired = authenticator.run("pair", key, "--name", "Pia's phone", "--server", server.url, "--no-passphrase")
        assert "pia" in paired.stdout, paired.stdout
        # The page notices the new authenticator by itself.
        expect(page.get_by_role("status")).to_have_text(
            "Paired: Pia's phone. It now approves your sign-ins. Create recovery codes too, in case you lose it.", timeout=15_000
        )
        expect(section.get_by_role("img", name="QR code of the pairing key")).to_have_count(0)
        expect(section.get_by_role("list", name="Paired authenticators")).to_contain_text("Pia's phone")

        # Number matching: picked among three, six digits; kept by the server.
        section.get_by_label("Pick it among three").check()
        section.get_by_label("6 digits").check()
        section.get_by_role("button", name="Save number matching").click()
        expect(page.get_by_role("status")).to_have_text("Number matching saved.")
        p.shot("two-factor-paired")
        page.get_by_role("button", name="Back").click()
        support.open_settings(page, "Two-factor")
        section = page.get_by_role("region", name="Two-factor sign-in")
        expect(section.get_by_label("Pick it among three")).to_be_checked()
        expect(section.get_by_label("6 digits")).to_be_checked()

        # The next sign-in's push carries it: three 6-digit numbers to pick from, the page's among them.
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Sign out").click()
        sign_in(p, "pia")
        number = page.get_by_label("Number to match")
        expect(number).to_be_visible(timeout=60_000)
        digits = number.locator(".digits").inner_text()
        challenge = authenticator.pending()
        assert challenge["numberMatchingType"] == "SELECT_NUMBER", challenge
        assert len(challenge["options"]) == 3 and all(re.fullmatch(r"\d{6}", o) for o in challenge["options"]), challenge
        assert digits in challenge["options"], (digits, challenge)
        approved = authenticator.run("approve", challenge["id"], "--number", digits)
        assert "COMPLETED" in approved.stdout, approved.stdout
        expect(page.get_by_role("heading", name="Signed in as pia")).to_be_visible(timeout=30_000)

        # Unpaired from Settings: the list empties and the CLI's authenticator is told it is no longer paired.
        section = open_settings(p, "pia")
        section.get_by_role("button", name="Unpair Pia's phone").click()
        expect(page.get_by_role("status")).to_have_text("Pia's phone unpaired: it no longer approves your sign-ins.")
        expect(section.get_by_role("list", name="Paired authenticators")).to_be_hidden()
        expect(section).to_contain_text("None paired")
        assert authenticator.run("pending", "--json", ok=False).returncode != 0
        p.close()
    finally:
        authenticator.close()


def test_two_factor_qr_sign_in_completed_denied_and_expired(server, browser):
    token = api_account(server, "quinn", PASSWORD)
    status, body, _ = server.api("POST", "/v1/me/mfa/pairing-keys", {}, token)
    assert status == 201, (status, body)
    authenticator = Authenticator()
    try:
        authenticator.run("pair", body["key"], "--name", "Quinn's phone", "--server", server.url, "--no-passphrase")
        p = Page(browser, server)
        page = p.page

        def new_code():
            image = page.get_by_role("img", name="QR code of the sign-in code")
            expect(image).to_be_visible(timeout=15_000)
            uri = decode(p, image, "two-factor-auth-code-qr")
            parsed = urllib.parse.urlparse(uri)
            query = dict(urllib.parse.parse_qsl(parsed.query))
            assert parsed.scheme == "countersign" and parsed.netloc == "auth" and query["server"] == server.url, uri
            shown = page.get_by_test_id("auth-code").inner_text()
            assert shown.replace("-", "") == query["authentication_code"], (shown, uri)
            return uri, query["authentication_code"]

        # Approved: the page signs in by itself.
        p.shot("two-factor-sign-in-form")
        polls = []
        page.on("request", lambda r: "/v1/auth-codes/current" in r.url and "/session" not in r.url and polls.append(r.url))
        page.get_by_role("link", name="Sign in with a QR code").click()
        expect(page.get_by_role("heading", name="Sign in with a QR code")).to_be_visible()
        expect(page.get_by_role("status")).to_have_text("Waiting for your authenticator to scan the code.")
        uri, _ = new_code()
        p.shot("two-factor-qr-sign-in")
        # A long poll, not a request a second: one read at once, then one waiting request.
        page.wait_for_timeout(4000)
        assert len(polls) <= 2 and polls[-1].endswith("?wait=25"), polls
        assert authenticator.run("auth", uri, "--approve", "quinn").stdout == "COMPLETED\n"
        # The claim and the approval wake the waiting request: well before its 25 seconds.
        expect(page.get_by_role("heading", name="Signed in as quinn")).to_be_visible(timeout=15_000)
        # The server gives a QR session no device: the page says what it can and cannot do, no raw error.
        note = page.get_by_role("note", name="Signed in with a QR code")
        expect(note).to_contain_text("cannot yet make this browser one of your devices", timeout=30_000)
        expect(page.get_by_role("alert")).to_have_text("")
        p.shot("two-factor-qr-session")
        # Settings' two-factor changes ask for the password first too (withReauth); cancelling says so.
        support.open_settings(page, "Two-factor")
        section = page.get_by_role("region", name="Two-factor sign-in")
        section.get_by_role("button", name="Create recovery codes").click()
        expect(section.get_by_label("Password")).to_be_visible()
        p.shot("two-factor-reauth")
        section.get_by_role("button", name="Cancel").click()
        expect(page.get_by_role("alert")).to_have_text("Not confirmed.")
        expect(section.get_by_label("Password")).to_have_count(0)
        page.get_by_role("button", name="Back").click()
        note = page.get_by_role("note", name="Signed in with a QR code")
        expect(note).to_be_visible(timeout=30_000)
        # The password and the push approval make it a full session, and the browser a device.
        note.get_by_role("button", name="Confirm with password").click()
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Confirm", exact=True).click()
        number = page.get_by_label("Number to match")
        expect(number).to_be_visible(timeout=60_000)
        challenge = authenticator.pending()
        assert challenge["purpose"] == "reauthentication", challenge
        authenticator.run("approve", challenge["id"], "--number", number.locator(".digits").inner_text())
        expect(note).to_have_count(0, timeout=30_000)
        expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=30_000)
        page.get_by_role("button", name="Sign out").click()

        # Denied: said in words; a new code is one press away.
        page.get_by_role("link", name="Sign in with a QR code").click()
        uri, code = new_code()
        assert authenticator.run("auth", uri, "--deny").stdout == "DENIED\n"
        expect(page.get_by_role("status")).to_have_text("The sign-in was denied on your authenticator.", timeout=15_000)
        expect(page.get_by_role("img", name="QR code of the sign-in code")).to_have_count(0)
        p.shot("two-factor-qr-denied")

        # Claimed, then left to expire (the server's 60 seconds).
        page.get_by_role("button", name="New code").click()
        uri, code = new_code()
        assert authenticator.run("auth", code).stdout == "CLAIMED\n"
        expect(page.get_by_role("status")).to_have_text("Your authenticator has the code: approve the sign-in there.", timeout=15_000)
        p.shot("two-factor-qr-claimed")
        expect(page.get_by_role("status")).to_have_text("The code expired before it was approved.", timeout=90_000)
        expect(page.get_by_role("button", name="New code")).to_be_visible()
        p.shot("two-factor-qr-expired")
        # Too late for the authenticator that claimed it, too.
        assert authenticator.run("auth", code, "--approve", "quinn", ok=False).stdout == "EXPIRED\n"
        page.get_by_role("button", name="Back to sign in").click()
        expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
        p.close()
    finally:
        authenticator.close()
