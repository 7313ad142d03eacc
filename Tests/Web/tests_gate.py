"""The key gate in the browser (docs/SPEC.md §14; web/js/gate.js, gate-keys.js, screens/gate.js): a PRF
passkey on Chromium's virtual authenticator turns it on, the keys in IndexedDB are then only ciphertext, one
prompt re-authenticates and unlocks, a passkey without user verification opens nothing, the page hidden or
the interval run out locks again; a passkey whose PRF output does not open the gate counts to the limit,
which wipes the browser and revokes the device; an authenticator without PRF falls back to the password,
whose wrong guesses do the same; a device revoked elsewhere deletes its data on next contact; turning the
gate off asks for the passkey and stores the keys unwrapped again. Every passkey ceremony the server accepts
here is verified again by py_webauthn and python-fido2 (tests_passkeys.Ceremonies)."""
import base64
import hashlib
import json
import os
import re
import sqlite3
import time

from cryptography.hazmat.primitives import serialization

import support
from support import SLOW, Page, api_account, api_sign_in, expect, page_function, page_script, sign_in, sign_up, totp
from tests_messages import Cli, compose
from tests_passkeys import NO_AUTOFILL, Ceremonies, add_passkey, open_passkeys

SET_VISIBILITY = page_function("page.js", "setVisibility")

# The account's device record as IndexedDB holds it: bytes as hex, CryptoKeys as what they are.
READ_RECORD = page_function("storage.js", "deviceRecords")

COUNT_STORES = page_function("storage.js", "countStores")

# Flips one bit of the record's first method's PRF salt (again: flips it back). The wrap stays, the salt
# the passkey is asked at does not: the PRF output is another, so the gate key does not open.
FLIP_PRF_SALT = page_function("storage.js", "flipPrfSalt")

UNLOCKED = page_function("gate.js", "isUnlockedNow")


def hidden_past_the_grace(page):
    """The page hidden for longer than gate-keys.js's grace (its clock moved on 31 s): the keys are dropped,
    whether its timer ran or not (a sleeping machine, a frozen tab)."""
    page.evaluate(SET_VISIBILITY, "hidden")
    page.evaluate("() => { const real = Date.now.bind(Date); Date.now = () => real() + 31_000; }")

# Registers a passkey through the API as the passkey screens do: the server's options parsed (they ask
# whether the passkey has a PRF, `prf: {}`, and evaluate nothing: SPEC §14.7), create(), and toJSON() posted
# without its extension outputs. Returns what the browser said of the PRF.
REGISTER_PASSKEY = page_function("webauthn.js", "registerPasskey")


def authenticator(page, prf=True, cdp=None, transport="internal"):
    """Chromium's virtual authenticator on this page: CTAP2, internal (one a page; another: usb), resident keys,
    user verification."""
    if cdp is None:
        cdp = page.context.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
    options = {
        "protocol": "ctap2", "transport": transport, "hasResidentKey": True,
        "hasUserVerification": True, "isUserVerified": True, "hasPrf": prf,
    }
    added = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
    return cdp, added["authenticatorId"]


def witnessed(browser, server, rewrite=None, autofill=True):
    """A recorded page whose WebAuthn ceremonies with the server are kept from its first load on, to be
    verified again by py_webauthn and python-fido2 (tests_passkeys.Ceremonies)."""
    p = Page(browser, server)
    if not autofill:
        p.context.add_init_script(NO_AUTOFILL)
    ceremonies = Ceremonies(p.context, p.page, rewrite)
    p.page.reload()
    return p, ceremonies


def ready(p, username):
    sign_up(p, username)
    expect(p.page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)


def record(page):
    records = page.evaluate(READ_RECORD)
    assert len(records) == 1, records
    return records[0]


def audit(server, token):
    status, body, _ = server.api("GET", "/v1/me/audit?limit=100", token=token)
    assert status == 200, (status, body)
    return [f"{e['kind']} {e['outcome']}" for e in body["events"]]


def settings_gate(page):
    support.open_settings(page, "Key gate")
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    return page.get_by_role("switch", name="Biometric Enable")


def reopen(p, username):
    """Reloads the page at its home screen. It stays signed in (docs/PROTOCOL.md §1.1): the home screen, or
    "Locked" when the key gate is on, whose one prompt (the one `prompt` finds) unlocks and signs back in."""
    p.page.evaluate("history.replaceState(null, '', '/#/home')")
    p.page.reload()
    signed_in = p.page.get_by_role("heading", name=f"Signed in as {username}")
    expect(signed_in.or_(p.page.get_by_role("heading", name="Locked", exact=True))).to_be_visible(timeout=SLOW)


def audit_until(server, username, want, tries=60):
    """The account's audit once it holds every event of `want` (event → count): a locked reload's key gate
    events are held in the browser and sent once it has a session again (gate.js sendHeldReports)."""
    events = []
    for _ in range(tries):
        events = audit(server, api_sign_in(server, username))
        if all(events.count(e) >= n for e, n in want.items()):
            return events
        time.sleep(1)
    raise AssertionError((want, events))


def prompt(page):
    return page.get_by_role("region", name="Unlock this browser's keys")


def assert_only_ciphertext(page, rec):
    """No private key in the record, and each wrapped one is bytes that import as no key, in the page and in
    Python (the ciphertext, and it without its tag, as long as a PKCS#8 key)."""
    halves = [rec["signing"], rec["encryption"]]
    for half in halves:
        assert set(half) == {"publicKey", "wrapped"}, half
        assert half["publicKey"]["cryptoKey"] == "public", half
    assert '"cryptoKey": "private"' not in str(rec).replace("'", '"'), rec
    wrapped = [bytes.fromhex(h["wrapped"]["ciphertext"]["hex"]) for h in halves]
    for ciphertext in wrapped:
        for candidate in (ciphertext, ciphertext[:-16]):
            try:
                serialization.load_der_private_key(candidate, password=None)
            except (ValueError, TypeError):
                continue
            raise AssertionError("a wrapped private key loads as a key in Python")
    imported = page.evaluate(
        page_function("gate.js", "importWrappedKeys"),
        [w.hex() for w in wrapped],
    )
    assert imported and all(r != "imported" for r in imported), imported


def test_key_gate_passkey_prf_locks_the_keys_and_unlocks_to_open_messages(server, browser):
    cli = Cli(server).register("wgcli")
    try:
        p, ceremonies = witnessed(browser, server)
        page = p.page
        cdp, auth = authenticator(page)
        sent = []
        page.on("request", lambda r: "/reauth/passkey" in r.url and r.post_data and sent.append(r.post_data))
        ready(p, "wgada")
        assert page.evaluate(REGISTER_PASSKEY) == {"enabled": True, "results": False}
        # A message sealed to the keys from before the gate.
        cli.run("send", "--to", "wgada", "sealed before the gate")
        page.get_by_role("button", name="Messages", exact=True).click()
        # A first message from someone never written to: a request; its link opens the conversation.
        conversation = page.get_by_role("region", name="Requests").get_by_role("link", name=re.compile("^wgcli"))
        expect(conversation).to_be_visible(timeout=30_000)
        page.get_by_role("button", name="Back").click()

        # Off: said so; the switch warns before it turns the gate on.
        switch = settings_gate(page)
        expect(switch).not_to_be_checked()
        expect(page.get_by_test_id("gate-state")).to_contain_text("Off.")
        expect(page.get_by_label("Failed Attempts Limit")).to_have_value("5")
        p.shot("gate-settings-off")
        switch.click()
        expect(page.get_by_text("re-sealed to the new keys first, so they still open")).to_be_visible()
        expect(switch).not_to_be_checked()
        page.get_by_role("button", name="Turn on with passkey").click()
        expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your passkey", timeout=60_000)
        expect(switch).to_be_checked()
        expect(page.get_by_test_id("gate-state")).to_contain_text("On, with your passkey.")
        expect(page.get_by_test_id("gate-state")).to_contain_text("5 of 5 attempts left")
        p.shot("gate-settings-on")
        rec = record(page)
        assert rec["gate"]["version"] == 1 and rec["gate"]["limit"] == 5 and rec["gate"]["failures"] == 0, rec["gate"]
        assert [m["kind"] for m in rec["gate"]["methods"]] == ["prf"], rec["gate"]
        assert rec.get("previous") == [], "turning the gate on deletes the old private keys"
        assert_only_ciphertext(page, rec)

        # Reloaded: "Locked" (the session is bound to the locked device key), and only ciphertext is stored.
        reopen(p, "wgada")
        gate = prompt(page)
        expect(gate).to_be_visible(timeout=SLOW)
        expect(gate.get_by_role("heading", name="This browser's keys are locked")).to_be_visible()
        expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^5 of 5 attempts left"))
        p.shot("gate-unlock-prompt")
        assert_only_ciphertext(page, record(page))
        assert page.evaluate(UNLOCKED) is False

        expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible()
        assert page.evaluate("async () => (await import('/js/session.js')).session.token") is None

        # One prompt signs in with the passkey and unlocks; the device session follows.
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=60_000)
        expect(gate).to_have_count(0)
        assert page.evaluate(UNLOCKED) is True
        cli.run("send", "--to", "wgada", "sealed under the gate")
        page.get_by_role("button", name="Messages", exact=True).click()
        expect(conversation).to_contain_text("sealed under the gate", timeout=30_000)
        conversation.click()
        opened = page.get_by_role("list", name="Messages with wgcli")
        # What was sealed to the keys from before the gate still opens here: re-sealed to the new keys first.
        expect(opened.get_by_label("Message text")).to_have_text(
            ["sealed before the gate", "sealed under the gate"], timeout=30_000
        )
        expect(opened.get_by_role("alert")).to_have_count(0)

        # Hidden for a moment, the keys stay (going from one tab to another carries the unlock); hidden past
        # the grace, they are dropped, and opening asks again.
        page.evaluate(SET_VISIBILITY, "hidden")
        page.evaluate(SET_VISIBILITY, "visible")
        assert page.evaluate(UNLOCKED) is True
        hidden_past_the_grace(page)
        assert page.evaluate(UNLOCKED) is False
        page.evaluate(SET_VISIBILITY, "visible")
        # The text went with the hidden page; shown again, the conversation asks for the keys.
        page.get_by_role("button", name="Show them again").click()
        gate = prompt(page)
        expect(gate).to_contain_text("Unlock them to read this conversation.")
        p.shot("gate-unlock-message")
        # A record whose PRF salt was changed: the passkey's output does not open it, counted, in words.
        page.evaluate(FLIP_PRF_SALT)
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(gate.get_by_role("alert")).to_contain_text("Wrong passkey: it does not unlock the keys kept here. 4 attempts left", timeout=60_000)
        expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^4 of 5 attempts left"))
        p.shot("gate-wrong-passkey")
        assert record(page)["gate"]["failures"] == 1
        page.evaluate(FLIP_PRF_SALT)
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(opened.get_by_label("Message text").last).to_have_text("sealed under the gate", timeout=60_000)
        assert record(page)["gate"]["failures"] == 0, "a success resets the count"

        # The interval run out: the overlay's return asks for the passkey, which unlocks too.
        page.get_by_role("button", name="All conversations").click()
        page.get_by_role("button", name="Back").click()
        support.open_settings(page, "Security")
        page.get_by_label("5 min").check()
        page.get_by_role("button", name="Save interval").click()
        expect(page.get_by_role("status").first).to_have_text("Re-authentication interval saved.")
        page.evaluate(SET_VISIBILITY, "hidden")
        page.evaluate("() => { const real = Date.now.bind(Date); Date.now = () => real() + 6 * 60 * 1000; }")
        page.evaluate(SET_VISIBILITY, "visible")
        overlay = page.get_by_role("dialog", name="Countersign is hidden")
        expect(overlay.get_by_role("heading", name="Welcome back")).to_be_visible()
        expect(overlay).to_contain_text("Unlock with your passkey to show Countersign again.")
        p.shot("gate-overlay-unlock")
        overlay.get_by_role("button", name="Unlock with passkey").click()
        expect(overlay).to_have_count(0, timeout=60_000)
        assert page.evaluate(UNLOCKED) is True

        # Without user verification nothing is tried, nothing counted, nothing opened. (Last: Chromium's
        # virtual authenticator verifies no one again after a refusal.)
        hidden_past_the_grace(page)
        page.evaluate(SET_VISIBILITY, "visible")
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Messages", exact=True).click()
        cdp.send("WebAuthn.setUserVerified", {"authenticatorId": auth, "isUserVerified": False})
        conversation.click()
        gate = prompt(page)
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(gate.get_by_role("alert")).to_contain_text(re.compile("could not verify you|did not verify you"), timeout=60_000)
        expect(opened.get_by_label("Message text")).to_have_count(0)
        assert page.evaluate(UNLOCKED) is False
        assert record(page)["gate"]["failures"] == 0

        # The PRF output never went to the server; the audit has every step.
        assert sent and all("clientExtensionResults" not in body and "prf" not in body for body in sent), sent
        events = audit(server, api_sign_in(server, "wgada"))
        for want in ("key-gate revocation-token-set", "key-gate enabled-prf", "key-gate unlocked-prf", "key-gate unlock-failed-prf"):
            assert want in events, (want, events)
        # Every ceremony the server accepted, the wrong passkey's included (its assertion was good), re-verified:
        # turning the gate on, the wrong and the right one, the overlay's; the unlock after the reload signed in.
        ceremonies.verify(server, registration=1, reauth=4, sign_in=1)
        assert ceremonies.check_held(cdp, auth) == 1
        p.close()
    finally:
        cli.close()


def test_key_gate_opens_with_each_of_several_passkeys_and_the_password(server, browser):
    p, ceremonies = witnessed(browser, server)
    page = p.page
    cdp, first = authenticator(page)
    ready(p, "wgsev")
    page.evaluate(REGISTER_PASSKEY, "Phone key")
    switch = settings_gate(page)
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(switch).to_be_checked(timeout=60_000)
    ways = page.get_by_role("list", name="Ways to unlock the keys")
    expect(ways.get_by_role("listitem")).to_have_count(1)
    expect(ways).to_contain_text("Passkey “Phone key”")
    expect(ways.get_by_role("button", name=re.compile("^Remove"))).to_have_count(0)
    alert = page.get_by_role("alert").first
    status = page.get_by_role("status").first

    # Every passkey of the account unlocks already: said so (after the first prompt, which unlocks).
    page.get_by_role("button", name="Add a passkey to the gate").click()
    expect(alert).to_contain_text("Every passkey of your account already unlocks the keys here", timeout=60_000)

    # A second authenticator and passkey; the first one does not answer while it is made.
    _, second = authenticator(page, cdp=cdp, transport="usb")
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": first, "enabled": False})
    assert page.evaluate(REGISTER_PASSKEY, "Laptop key") == {"enabled": True, "results": False}
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": first, "enabled": True})
    page.get_by_role("button", name="Back").click()
    settings_gate(page)
    page.get_by_role("button", name="Add a passkey to the gate").click()
    expect(status).to_contain_text("Passkey added: it unlocks the keys here too.", timeout=60_000)
    expect(ways.get_by_role("listitem")).to_have_count(2)
    expect(ways).to_contain_text("Passkey “Laptop key”")

    # The password beside them: checked with the server first (a wrong one adds nothing).
    page.get_by_role("button", name="Add your password to the gate").click()
    page.get_by_label("Account password", exact=True).fill("not the password")
    page.get_by_role("button", name="Continue").click()
    expect(alert).to_contain_text("The current password is wrong.", timeout=SLOW)
    assert [m["kind"] for m in record(page)["gate"]["methods"]] == ["prf", "prf"]
    page.get_by_label("Account password", exact=True).fill("correct horse battery")
    page.get_by_role("button", name="Continue").click()
    expect(status).to_contain_text("Password added: it unlocks the keys here too.", timeout=60_000)
    expect(ways.get_by_role("listitem")).to_have_count(3)
    expect(page.get_by_role("button", name="Add your password to the gate")).to_be_hidden()
    p.shot("gate-ways-to-unlock")
    rec = record(page)
    assert [m["kind"] for m in rec["gate"]["methods"]] == ["prf", "prf", "password"], rec["gate"]
    assert_only_ciphertext(page, rec)

    # Each one alone opens the keys: the first passkey (the second authenticator silent), the second (the
    # first authenticator gone), then the password.
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": second, "enabled": False})
    reopen(p, "wgsev")
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(gate).to_have_count(0, timeout=60_000)
    assert page.evaluate(UNLOCKED) is True
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": second, "enabled": True})
    cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": first})
    hidden_past_the_grace(page)
    page.evaluate(SET_VISIBILITY, "visible")
    assert page.evaluate(UNLOCKED) is False
    reopen(p, "wgsev")
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(gate).to_have_count(0, timeout=60_000)
    assert page.evaluate(UNLOCKED) is True
    reopen(p, "wgsev")
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    gate.get_by_label("Password", exact=True).fill("correct horse battery")
    gate.get_by_role("button", name="Unlock with password").click()
    expect(gate).to_have_count(0, timeout=60_000)
    assert page.evaluate(UNLOCKED) is True

    # Removing the first passkey from the account drops its entry here; the gate keeps the others.
    support.open_settings(page, "Passkeys")
    page.get_by_role("button", name="Remove passkey Phone key").click()
    page.get_by_role("button", name="Remove passkey", exact=True).click()
    expect(status).to_contain_text("Passkey Phone key removed", timeout=60_000)
    page.get_by_role("button", name="Back").click()
    settings_gate(page)
    expect(ways.get_by_role("listitem")).to_have_count(2)
    # The password removed from the gate; the last passkey is then its only way, and is not removed.
    ways.get_by_role("button", name="Remove Your password from the key gate").click()
    gate = prompt(page)
    expect(gate.get_by_role("heading", name="Remove a way to unlock")).to_be_visible()
    assert len(record(page)["gate"]["methods"]) == 2, "nothing removed before the unlock"
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(status).to_contain_text("Your password no longer unlocks the keys here", timeout=SLOW)
    expect(ways.get_by_role("listitem")).to_have_count(1)
    assert [m["kind"] for m in record(page)["gate"]["methods"]] == ["prf"]
    support.settings_section(page, "Passkeys")
    page.get_by_role("button", name="Remove passkey Laptop key").click()
    expect(page.get_by_text("Laptop key is the only way to unlock this browser's message keys")).to_be_visible()
    expect(page.get_by_role("button", name="Remove passkey", exact=True)).to_have_count(0)
    p.shot("gate-last-passkey-kept")
    status_code, body, _ = server.api("GET", "/v1/me/passkeys", token=api_sign_in(server, "wgsev"))
    assert [k["name"] for k in body["passkeys"]] == ["Laptop key"], body
    events = audit(server, api_sign_in(server, "wgsev"))
    for want in ("key-gate method-added-prf", "key-gate method-added-password", "key-gate method-removed-password", "key-gate method-removed-prf"):
        assert want in events, (want, events)
    ceremonies.verify(server, registration=2, reauth=5, sign_in=range(2, 4), removed=1)
    assert ceremonies.check_held(cdp, second) == 1
    p.close()


def test_key_gate_off_asks_for_the_passkey_and_stores_the_keys_unwrapped(server, browser):
    p, ceremonies = witnessed(browser, server)
    page = p.page
    cdp, auth = authenticator(page)
    ready(p, "wgdot")
    page.evaluate(REGISTER_PASSKEY)
    switch = settings_gate(page)
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(switch).to_be_checked(timeout=60_000)
    # Off: the passkey once more, even with the keys open in this page.
    assert page.evaluate(UNLOCKED) is True
    switch.click()
    gate = prompt(page)
    expect(gate.get_by_role("heading", name="Turn the key gate off")).to_be_visible()
    p.shot("gate-settings-turning-off")
    assert record(page)["gate"], "nothing changes before the passkey answers"
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(page.get_by_role("status").first).to_contain_text("Key gate off", timeout=60_000)
    expect(switch).not_to_be_checked()
    rec = record(page)
    assert "gate" not in rec, rec
    for half in (rec["signing"], rec["encryption"]):
        assert "wrapped" not in half and half["privateKey"] == {"cryptoKey": "private", "extractable": False}, half
    # Reloaded: no prompt, the device is ready at once.
    reopen(p, "wgdot")
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)
    expect(prompt(page)).to_have_count(0)
    events = audit(server, api_sign_in(server, "wgdot"))
    assert "key-gate enabled-prf" in events and "key-gate disabled-prf" in events, events
    ceremonies.verify(server, registration=1, reauth=2, sign_in=range(0, 2))
    assert ceremonies.check_held(cdp, auth) == 1
    p.close()


def test_key_gate_without_prf_falls_back_to_the_password_and_wipes_at_the_limit(server, browser):
    p, ceremonies = witnessed(browser, server)
    page = p.page
    cdp, auth = authenticator(page, prf=False)
    ready(p, "wgbea")
    assert page.evaluate(REGISTER_PASSKEY)["results"] is False
    switch = settings_gate(page)
    page.get_by_label("Failed Attempts Limit").select_option("3")
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    notice = page.get_by_test_id("gate-no-prf")
    expect(notice).to_contain_text("has no PRF", timeout=60_000)
    # SPEC §14.6: what the password protects against, and what not (the server gets it at every sign-in).
    expect(notice).to_contain_text("not against the server, which gets this password at every sign-in")
    expect(page.get_by_test_id("gate-protects")).to_contain_text("not even for the server")
    expect(page.get_by_test_id("gate-protects")).to_contain_text("the server gets that password at every sign-in")
    expect(switch).not_to_be_checked()
    p.shot("gate-settings-no-prf")
    page.get_by_label("Account password").fill("correct horse battery")
    page.get_by_role("button", name="Turn on with password").click()
    expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your password", timeout=SLOW)
    expect(page.get_by_test_id("gate-state")).to_contain_text("On, with your password")
    expect(page.get_by_test_id("gate-state")).to_contain_text("3 of 3 attempts left")
    rec = record(page)
    assert [m["kind"] for m in rec["gate"]["methods"]] == ["password"] and rec["gate"]["limit"] == 3, rec["gate"]
    assert rec["gate"]["methods"][0]["iterations"] == 600_000
    assert_only_ciphertext(page, rec)
    device_id = rec["deviceId"]
    # The passkey is done with: without it, the sign-in page's passkey autofill cannot sign in on its own
    # (Chromium's virtual authenticator may answer it), and every sign-in below is by password.
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": auth, "enabled": False})

    # Reloaded: a wrong password is counted, in words; the right one unlocks and resets the count.
    reopen(p, "wgbea")
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    expect(gate.get_by_role("button", name="Unlock with passkey")).to_be_hidden()
    gate.get_by_label("Password", exact=True).fill("not the password")
    gate.get_by_role("button", name="Unlock with password").click()
    expect(gate.get_by_role("alert")).to_contain_text("Wrong password: it does not unlock the keys kept here. 2 attempts left", timeout=60_000)
    p.shot("gate-wrong-password")
    gate.get_by_label("Password", exact=True).fill("correct horse battery")
    gate.get_by_role("button", name="Unlock with password").click()
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=60_000)
    assert record(page)["gate"]["failures"] == 0

    # Three wrong passwords: the browser deletes its keys and envelopes, and the device revokes itself.
    reopen(p, "wgbea")
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    for left in (2, 1):
        gate.get_by_label("Password", exact=True).fill("not the password")
        gate.get_by_role("button", name="Unlock with password").click()
        expect(gate.get_by_role("alert")).to_contain_text(f"{left} attempt{'s' if left > 1 else ''} left", timeout=60_000)
    gate.get_by_label("Password", exact=True).fill("still not the password")
    gate.get_by_role("button", name="Unlock with password").click()
    expect(page.get_by_text("Too many failed attempts to unlock.")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    p.shot("gate-wiped")
    assert page.evaluate(COUNT_STORES) == {"devices": 0, "messages": 0, "pins": 0}
    token = api_sign_in(server, "wgbea")
    devices = server.api("GET", "/v1/devices", token=token)[1]["devices"]
    assert [d.get("revokedAt") is not None for d in devices if d["id"] == device_id] == [True], devices
    # The attempts made on "Locked" (no session yet) reach the audit log at the next sign-in here.
    sign_in(p, "wgbea")
    events = audit_until(server, "wgbea", {"key-gate unlock-failed-password": 4, "key-gate wiped-password": 1})
    assert events.count("key-gate unlock-failed-password") == 4, events
    for want in ("key-gate enabled-password", "key-gate unlocked-password", "key-gate wiped-password", "device-revoke self-revoked"):
        assert want in events, (want, events)
    # The passkey without PRF: its registration and the assertion that turned nothing on, re-verified.
    ceremonies.verify(server, registration=1, reauth=1)
    assert ceremonies.check_held(cdp, auth) == 1
    p.close()


def test_key_gate_wrong_passkey_prf_counts_to_the_limit_wipes_and_revokes(server, browser):
    """SPEC §14.5 on the passkey's path: each unlock whose PRF output does not open the gate key is counted
    (the assertion itself is good: the server accepts the re-authentication), the count is in IndexedDB and
    outlives a reload, a right passkey before the limit sets it back to 0, and the attempt that reaches the
    limit deletes the keys, envelopes and pins, revokes the device with the gate's revocation token, ends the
    session and says why; the browser is then a new device at the next sign-in.

    The wrong PRF output is the real authenticator's, asked at another salt (the record's copy of it changed,
    FLIP_PRF_SALT): Chromium's virtual authenticator has no other way to give one. A copy of the passkey on
    a second virtual authenticator (WebAuthn.addCredential) gives no PRF output at all, which is not counted,
    and a passkey not in the gate is not offered to the authenticator (allowCredentials is narrowed)."""
    # No passkey autofill: the sign-in screen the limit goes back to must not sign in again on its own.
    p, ceremonies = witnessed(browser, server, autofill=False)
    page = p.page
    cdp, auth = authenticator(page)
    revocations = []

    def reopen_by_passkey():
        """Reloaded: "Locked" while the gate is on (its passkey prompt signs in as it unlocks); after the wipe,
        the sign-in screen, signed in by passkey."""
        page.evaluate("history.replaceState(null, '', '/#/home')")
        page.reload()
        by_passkey = page.get_by_role("button", name="Sign in with a passkey")
        expect(page.get_by_role("heading", name="Locked", exact=True).or_(by_passkey)).to_be_visible(timeout=SLOW)
        if by_passkey.is_visible():
            by_passkey.click()
            expect(page.get_by_role("heading", name="Signed in as wglim")).to_be_visible(timeout=30_000)

    page.on("response", lambda r: r.url.endswith("/self-revocation") and revocations.append((r.url, r.request.post_data_json, r.status)))
    ready(p, "wglim")
    assert page.evaluate(REGISTER_PASSKEY) == {"enabled": True, "results": False}
    switch = settings_gate(page)
    page.get_by_label("Failed Attempts Limit").select_option("3")
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your passkey", timeout=60_000)
    expect(page.get_by_test_id("gate-state")).to_contain_text("3 of 3 attempts left")
    rec = record(page)
    assert rec["gate"]["limit"] == 3 and rec["gate"]["failures"] == 0 and [m["kind"] for m in rec["gate"]["methods"]] == ["prf"], rec["gate"]
    device_id, account_id = rec["deviceId"], rec["accountId"]
    revocation_token = bytes.fromhex(rec["gate"]["revocationToken"]["hex"])
    # The server keeps the token's SHA-256 with the device: what the self-revocation will present.
    db = sqlite3.connect(os.path.join(server.dir, "web.sqlite"), timeout=10)
    try:
        [(stored,)] = db.execute("SELECT revocation_token_hash FROM devices WHERE id = ?", (device_id,)).fetchall()
    finally:
        db.close()
    assert bytes(stored) == hashlib.sha256(revocation_token).digest(), (bytes(stored).hex(), revocation_token.hex())

    # Reloaded, locked; the PRF output is another one (asked at a changed salt): counted, said, stored.
    reopen_by_passkey()
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^3 of 3 attempts left"))
    page.evaluate(FLIP_PRF_SALT)
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(gate.get_by_role("alert")).to_have_text(
        "Wrong passkey: it does not unlock the keys kept here. 2 attempts left before this browser deletes its keys.", timeout=60_000)
    expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^2 of 3 attempts left"))
    assert record(page)["gate"]["failures"] == 1
    assert page.evaluate(UNLOCKED) is False

    # The count outlives the page: reloaded and signed in again, one attempt is still spent.
    reopen_by_passkey()
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^2 of 3 attempts left"))
    assert record(page)["gate"]["failures"] == 1
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(gate.get_by_role("alert")).to_have_text(
        "Wrong passkey: it does not unlock the keys kept here. 1 attempt left before this browser deletes its keys.", timeout=60_000)
    expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^1 of 3 attempts left"))
    assert record(page)["gate"]["failures"] == 2

    # One short of the limit, the right PRF output (the salt put back) unlocks and sets the count back to 0.
    page.evaluate(FLIP_PRF_SALT)
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=60_000)
    expect(gate).to_have_count(0)
    assert page.evaluate(UNLOCKED) is True
    assert record(page)["gate"]["failures"] == 0, "a success resets the count"
    assert page.evaluate(COUNT_STORES)["devices"] == 1

    # Three wrong ones in a row from there: two counted, and the third reaches the limit.
    reopen_by_passkey()
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    expect(gate.get_by_test_id("gate-attempts")).to_have_text(re.compile("^3 of 3 attempts left"))
    # A locked reload holds no session: the passkey's sign-in is the unlock's.
    assert page.evaluate("async () => (await import('/js/session.js')).session.token") is None
    page.evaluate(FLIP_PRF_SALT)
    for left in ("2 attempts", "1 attempt"):
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(gate.get_by_role("alert")).to_contain_text(f"Wrong passkey: it does not unlock the keys kept here. {left} left", timeout=60_000)
    assert revocations == [], "nothing is revoked before the limit"
    gate.get_by_role("button", name="Unlock with passkey").click()
    words = page.get_by_text("Too many failed attempts to unlock.")
    expect(words).to_be_visible(timeout=60_000)
    expect(words).to_contain_text("This browser deleted its keys and messages for the account.")
    expect(words).to_contain_text("Its device revoked itself: sign in again to set this browser up as a new device.")
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    p.shot("gate-wiped-passkey")
    # The keys, the gate, the envelopes and pins are gone (the note the revocation needed too, once answered).
    assert page.evaluate(COUNT_STORES) == {"devices": 0, "messages": 0, "pins": 0}
    assert page.evaluate(
        """async (id) => [(await import("/js/gate-keys.js")).isUnlocked(id), (await (await import("/js/gate.js")).gateStatus(id)).state]""",
        account_id,
    ) == [False, "none"]
    # The device revoked itself with the gate's token, once; the server revoked it and ended the session.
    assert revocations == [(f"{server.url}/v1/devices/{device_id}/self-revocation", {"token": base64.urlsafe_b64encode(revocation_token).decode().rstrip("=")}, 204)], revocations
    # This browser stays signed in no longer.
    assert page.evaluate(page_function("storage.js", "bindingRecords")) == []
    token = api_sign_in(server, "wglim")
    devices = server.api("GET", "/v1/devices", token=token)[1]["devices"]
    assert [d.get("revokedAt") is not None for d in devices if d["id"] == device_id] == [True], devices

    # Reloaded: nothing to unlock, and signing in makes this browser a new device, without a gate.
    reopen_by_passkey()
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)
    expect(prompt(page)).to_have_count(0)
    fresh = record(page)
    assert fresh["deviceId"] != device_id and "gate" not in fresh, fresh
    # The attempts made on "Locked" (no session yet) reached the audit log with this sign-in.
    events = audit_until(server, "wglim", {"key-gate unlock-failed-prf": 5, "key-gate wiped-prf": 1})
    assert events.count("key-gate unlock-failed-prf") == 5, events
    assert events.count("key-gate unlocked-prf") == 1, events
    assert events.count("key-gate wiped-prf") == 1 and events.count("device-revoke self-revoked") == 1, events
    # Every passkey ceremony of it, re-verified: the registration; turning the gate on; the unlocks on
    # "Locked", five wrong (good assertions, wrong PRF outputs) and one right, each a passkey sign-in; the
    # sign-in after the wipe.
    ceremonies.verify(server, registration=1, reauth=1, sign_in=7)
    assert ceremonies.check_held(cdp, auth) == 1
    p.close()


def test_key_gate_remote_wipe_deletes_the_data_on_next_contact(server, browser):
    p, ceremonies = witnessed(browser, server)
    page = p.page
    cdp, auth = authenticator(page)
    ready(p, "wgcal")
    page.evaluate(REGISTER_PASSKEY)
    switch = settings_gate(page)
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(switch).to_be_checked(timeout=60_000)
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_test_id("push-state")).to_have_text("Messages arrive live.", timeout=30_000)
    # Locked (the page was hidden): no key here can sign, and the device is revoked from elsewhere.
    hidden_past_the_grace(page)
    page.evaluate(SET_VISIBILITY, "visible")
    assert page.evaluate(UNLOCKED) is False
    assert page.evaluate(COUNT_STORES)["devices"] == 1
    token = api_sign_in(server, "wgcal")
    device_id = record(page)["deviceId"]
    assert server.api("DELETE", f"/v1/devices/{device_id}", token=token)[0] == 204
    # The push channel closes; the page asks the server, finds the device revoked and deletes its data.
    expect(page.locator("#banner")).to_contain_text("This browser deleted its keys and messages", timeout=30_000)
    expect(page.locator("#banner")).to_contain_text("revoked")
    expect(page.get_by_test_id("fingerprint")).to_have_count(0)
    p.shot("gate-remote-wipe")
    assert page.evaluate(COUNT_STORES) == {"devices": 0, "messages": 0, "pins": 0}
    # Back on the home screen, this session does not quietly set the browser up as a new device.
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_role("alert").last).to_contain_text("Sign out and in again to set it up as a new device.")
    assert page.evaluate(COUNT_STORES)["devices"] == 0
    assert [d for d in server.api("GET", "/v1/devices", token=token)[1]["devices"] if not d.get("revokedAt")] == []
    ceremonies.verify(server, registration=1, reauth=1)
    assert ceremonies.check_held(cdp, auth) == 1
    p.close()


# Wraps navigator.credentials.get: while window.__clearUserVerified is set, the assertion's authenticator data
# comes back with the user-verified flag (bit 2 of byte 32) cleared, as from an authenticator that did not
# verify anyone, while Chromium's virtual authenticator still answers (it then evaluates the PRF regardless).
CLEAR_USER_VERIFIED = page_function("webauthn.js", "clearUserVerified")


def test_key_gate_asks_before_sending_closes_at_the_interval_and_wants_verification(server, browser):
    cli = Cli(server).register("wgsendto")
    try:
        p = Page(browser, server)
        page = p.page
        ceremonies = Ceremonies(p.context, page)
        # The page's timers under the test's hand (time still flows), installed before the page's scripts run.
        page.clock.install()
        page.reload()
        cdp, auth = authenticator(page)
        answered = []
        page.on(
            "request",
            lambda r: r.method == "POST" and r.url.endswith("/v1/sessions/current/reauth/passkey") and answered.append(r.url),
        )
        ready(p, "wgsend")
        assert page.evaluate(REGISTER_PASSKEY) == {"enabled": True, "results": False}
        switch = settings_gate(page)
        switch.click()
        page.get_by_role("button", name="Turn on with passkey").click()
        expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your passkey", timeout=60_000)
        support.settings_section(page, "Security")
        page.get_by_label("5 min").check()
        page.get_by_role("button", name="Save interval").click()
        expect(page.get_by_role("status").first).to_have_text("Re-authentication interval saved.")

        # Locked (the page was hidden): sending asks for the passkey first, then sends.
        hidden_past_the_grace(page)
        page.evaluate(SET_VISIBILITY, "visible")
        assert page.evaluate(UNLOCKED) is False
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Messages", exact=True).click()
        compose(page, "wgsendto", "sent through the gate")
        gate = prompt(page)
        expect(gate).to_contain_text("Unlock them to send this message.", timeout=SLOW)
        p.shot("gate-unlock-send")
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(gate).to_have_count(0, timeout=60_000)
        assert page.evaluate(UNLOCKED) is True
        def received():
            return [cli.run("read", e["id"]).stdout.strip() for e in cli.inbox() if e["direction"] == "incoming"]

        texts = []
        for _ in range(60):
            texts = received()
            if "sent through the gate" in texts:
                break
            time.sleep(0.5)
        assert texts == ["sent through the gate"], texts

        # The interval runs out with the page in view: the keys are dropped at that moment, by the timer (seen
        # by a listener before anything asks whether the gate is open, which would also close it).
        page.evaluate(page_function("gate.js", "watchGateChanges"))
        page.clock.fast_forward("04:50")
        assert page.evaluate("() => window.__gateChanges") == []
        page.clock.fast_forward("00:11")
        assert page.evaluate("() => window.__gateChanges") == [False]
        assert page.evaluate(UNLOCKED) is False

        # An assertion without user verification: refused in the page, nothing sent, nothing counted.
        before = len(answered)
        page.evaluate(CLEAR_USER_VERIFIED)
        page.evaluate("() => { window.__clearUserVerified = true; }")
        compose(page, "wgsendto", "never sent")
        gate = prompt(page)
        expect(gate).to_contain_text("Unlock them to send this message.", timeout=SLOW)
        gate.get_by_role("button", name="Unlock with passkey").click()
        expect(gate.get_by_role("alert")).to_contain_text("did not verify you", timeout=60_000)
        p.shot("gate-not-verified")
        assert len(answered) == before, "no assertion went to the server"
        assert page.evaluate(UNLOCKED) is False
        assert record(page)["gate"]["failures"] == 0
        assert received() == ["sent through the gate"]
        # The assertion the page refused for want of UV was never posted: two unlocks, re-verified.
        ceremonies.verify(server, registration=1, reauth=2)
        assert ceremonies.check_held(cdp, auth) == 1
        p.close()
    finally:
        cli.close()


# Every PRF output the page is given (SPEC §14.7: the key gate's secret), as hex, kept in sessionStorage so a
# reload keeps the list: what getClientExtensionResults() returns, and what toJSON() of each credential that
# navigator.credentials.create/get resolves with would carry.
RECORD_PRF_OUTPUTS = page_script("webauthn.js", "recordPrfOutputs")


def encodings(output):
    """The forms a PRF output could travel in: raw, base64url and standard base64 (unpadded, so a padded copy
    matches too), and hex in both cases."""
    b64 = base64.b64encode(output).decode().rstrip("=")
    b64url = base64.urlsafe_b64encode(output).decode().rstrip("=")
    return [output, b64.encode(), b64url.encode(), output.hex().encode(), output.hex().upper().encode()]


def sign_out(page):
    """From the home screen, once it is there (a loaded machine may take a while to sign out)."""
    expect(page.get_by_role("heading", name=re.compile("^Signed in as"))).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_be_visible(timeout=30_000)


def prf_member(body):
    """Whether a JSON body has a member named "prf" anywhere (clientExtensionResults.prf, say)."""
    try:
        value = json.loads(body)
    except ValueError:
        return False
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if "prf" in v:
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def test_key_gate_no_request_of_a_passkey_and_gate_session_carries_a_prf_output(server, browser):
    """SPEC §14.7: the PRF output opens the key gate with a copy of the profile, so it never leaves the page.
    Every request of the context (and every WebSocket frame sent) is kept while the page registers passkeys,
    signs in with one (as the first factor and as the second), turns the gate on, unlocks after a reload,
    re-authenticates and adds a second passkey to the gate; none carries any PRF output the page saw."""
    token = api_account(server, "wgprf")
    status, enrollment, _ = server.api("POST", "/v1/me/mfa/totp", {}, token)
    assert status in (200, 201), (status, enrollment)
    secret = enrollment["secret"]
    assert server.api("POST", "/v1/me/mfa/totp/confirm", {"code": totp(secret)}, token)[0] == 200
    p = Page(browser, server)
    page = p.page
    p.context.add_init_script(NO_AUTOFILL)
    p.context.add_init_script(RECORD_PRF_OUTPUTS)
    sent = []
    p.context.on("request", lambda r: sent.append((r.method, r.url, r.post_data_buffer or b"")))
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(("WS", ws.url, f.encode() if isinstance(f, str) else f))))

    # Registration options that ask for PRF at creation, as the server's did before SPEC §14.7 was kept:
    # the authenticator then returns an output with the new credential, which the page must not send either.
    # (Changed on their way to the page by the ceremonies' route, which keeps the server's own.)
    def ask_prf_at_creation(options):
        if "user" in options["publicKey"]:
            salt = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
            options["publicKey"].setdefault("extensions", {})["prf"] = {"eval": {"first": salt}}
        return options

    ceremonies = Ceremonies(p.context, page, ask_prf_at_creation)
    page.reload()
    cdp, first = authenticator(page)

    # The password, the passcode, then a passkey registered in Settings (registerPasskey).
    sign_in(p, "wgprf")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible(timeout=SLOW)
    page.get_by_label("One-time passcode").fill(totp(secret, "now + 30 seconds"))
    page.get_by_role("button", name="Verify").click()
    add_passkey(page, open_passkeys(page), "First key")
    # The passkey as the second factor, then as the only one.
    page.get_by_role("button", name="Back").click()
    sign_out(page)
    sign_in(p, "wgprf")
    page.get_by_role("button", name="Use a passkey").click()
    sign_out(page)
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Signed in as wgprf")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)

    # The gate on with the passkey; reloaded, signed in with it and unlocked with it.
    switch = settings_gate(page)
    switch.click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your passkey", timeout=60_000)
    page.get_by_role("button", name="Back").click()
    page.reload()
    expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
    gate = prompt(page)
    expect(gate).to_be_visible(timeout=SLOW)
    gate.get_by_role("button", name="Unlock with passkey").click()
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=60_000)

    # A sensitive action after the last authentication ran out: re-authenticated with the passkey.
    db = sqlite3.connect(os.path.join(server.dir, "web.sqlite"), timeout=10)
    with db:
        db.execute(
            "UPDATE sessions SET authenticated_at = authenticated_at - 660000 WHERE account_id = (SELECT id FROM accounts WHERE username = ?)",
            ("wgprf",),
        )
    db.close()
    support.open_settings(page, "Two-factor")
    two_factor = page.get_by_role("region", name="Two-factor sign-in")
    two_factor.get_by_role("button", name=re.compile("^(Create|Replace) recovery codes$")).click()
    two_factor.get_by_role("button", name="Confirm with a passkey").click()
    expect(two_factor.get_by_role("list", name="Recovery codes").get_by_role("listitem")).to_have_count(10, timeout=30_000)

    # A second passkey on a second authenticator (the first silent meanwhile), added to the gate: two prompts.
    _, second = authenticator(page, cdp=cdp, transport="usb")
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": first, "enabled": False})
    support.settings_section(page, "Passkeys")
    add_passkey(page, page.get_by_role("region", name="Passkeys"), "Second key")
    cdp.send("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": first, "enabled": True})
    support.settings_section(page, "Key gate")
    page.get_by_role("button", name="Add a passkey to the gate").click()
    expect(page.get_by_role("status").first).to_contain_text("Passkey added: it unlocks the keys here too.", timeout=60_000)
    assert [m["kind"] for m in record(page)["gate"]["methods"]] == ["prf", "prf"]
    page.wait_for_timeout(500)

    # The gate's ceremonies saw PRF outputs (the test is not vacuous): one per passkey at least.
    outputs = [bytes.fromhex(h) for h in page.evaluate("() => JSON.parse(sessionStorage.getItem('__prfSeen') || '[]')")]
    assert len(outputs) >= 2 and all(len(o) == 32 for o in outputs), outputs
    posted = [(m, u) for m, u, body in sent if body]
    for path in ("/v1/me/passkeys", "/v1/sessions/passkey", "/passkey", "/v1/sessions/current/reauth/passkey"):
        assert any(u.endswith(path) for _, u in posted), (path, posted)
    for method, url, body in sent:
        for output in outputs:
            for form in encodings(output):
                assert form not in body, f"{method} {url} carries the PRF output {output.hex()} as {form[:16]!r}…"
        assert not prf_member(body), f"{method} {url} carries a prf member: {body[:300]!r}"
    # Each of those ceremonies, re-verified: two registrations, the passkey as second and as first factor
    # (twice: before the reload, and on "Locked" after it, where it unlocked too), and the re-authentications
    # (turning the gate on, the recovery codes, and the two prompts that add the second passkey to the gate).
    ceremonies.verify(server, registration=2, second_factor=1, sign_in=2, reauth=4)
    assert ceremonies.check_held(cdp, first) == 1 and ceremonies.check_held(cdp, second) == 1
    p.close()


# `n` wrong passwords at once through the page's own module; each outcome as "kind:attemptsLeft".
WRONG_PASSWORDS_AT_ONCE = page_function("gate.js", "wrongPasswordsAtOnce")


# These passwords tried at once; each outcome as "kind:attemptsLeft", or "unlocked".
PASSWORDS_AT_ONCE = page_function("gate.js", "passwordsAtOnce")

# Sets the stored gate's failed-attempts count (as a tab closed during its checks would have left it).
SET_FAILURES = page_function("storage.js", "setGateFailures")


def test_key_gate_counts_every_one_of_concurrent_wrong_passwords_in_two_tabs(server, browser):
    """SPEC §14.5: each attempt stores its count before it is checked. Attempts made at once, in one tab and
    in another, each count (the count is read and written in one IndexedDB transaction), and the limit is
    reached, wipes and revokes as when they come one by one."""
    p = Page(browser, server)
    page = p.page
    ready(p, "wgrace")
    account_id = page.evaluate("async () => (await import('/js/session.js')).session.account.id")
    page.evaluate(
        page_function("gate.js", "enableWithPasswordAndLock"),
        account_id,
    )
    rec = record(page)
    assert rec["gate"]["limit"] == 10 and rec["gate"]["failures"] == 0, rec["gate"]
    device_id = rec["deviceId"]

    # Three at once in a second tab (not signed in: the count is this browser's), three at once here.
    other = p.context.new_page()
    other.goto(server.url + "/")
    other.evaluate(f"(args) => {{ window.__attempts = ({WRONG_PASSWORDS_AT_ONCE})(args); }}", [account_id, 3])
    here = page.evaluate(WRONG_PASSWORDS_AT_ONCE, [account_id, 3])
    there = other.evaluate("() => window.__attempts")
    outcomes = here + there
    assert all(o.startswith("wrong password:") for o in outcomes), outcomes
    assert sorted(int(o.split(":")[1]) for o in outcomes) == [4, 5, 6, 7, 8, 9], outcomes
    assert record(page)["gate"]["failures"] == 6
    other.close()

    # The right password among wrong ones, the count reaching the limit while it is checked: the page waits for
    # it (it resets the count), then tries the ones that found the limit. Nothing is wiped.
    outcomes = page.evaluate(PASSWORDS_AT_ONCE, [account_id, ["not it"] * 3 + ["correct horse battery"] + ["not it"] * 3])
    assert outcomes.count("unlocked") == 1 and sum(o.startswith("wrong password:") for o in outcomes) == 6, outcomes
    assert page.evaluate(UNLOCKED) is True
    assert page.evaluate(COUNT_STORES)["devices"] == 1 and record(page)["gate"]["failures"] < 10
    page.evaluate("async () => (await import('/js/gate-keys.js')).lock()")
    page.evaluate(SET_FAILURES, 6)

    # Twenty at once: four more are counted and checked, the limit is reached, nothing more is tried, and the
    # browser deletes its keys and the device revokes itself, once.
    outcomes = page.evaluate(WRONG_PASSWORDS_AT_ONCE, [account_id, 20])
    assert sorted(o for o in outcomes if o.startswith("wrong password:")) == ["wrong password:1", "wrong password:2", "wrong password:3"], outcomes
    assert outcomes.count("wiped:") == 17, outcomes
    expect(page.get_by_text("Too many failed attempts to unlock.")).to_be_visible(timeout=60_000)
    assert page.evaluate(COUNT_STORES) == {"devices": 0, "messages": 0, "pins": 0}
    token = api_sign_in(server, "wgrace")
    devices = server.api("GET", "/v1/devices", token=token)[1]["devices"]
    assert [d.get("revokedAt") is not None for d in devices if d["id"] == device_id] == [True], devices
    events = audit(server, token)
    # Every failure counted in the signed-in tab was reported before the session ended (the other tab had none).
    assert events.count("key-gate unlock-failed-password") == 13, events
    assert events.count("key-gate wiped-password") == 1 and events.count("device-revoke self-revoked") == 1, events
    p.close()
