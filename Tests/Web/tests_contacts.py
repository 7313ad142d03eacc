"""Contacts and the follow-ups around them: a safety number compared and trusted before any message (the
same 60 digits the CLI prints), an imported file key that replaces another only once confirmed, an
authenticator revoked from the account that stops showing passcodes and forgets its secret, and two tabs
of one profile where only one runs the authenticator. Every user here is named kx…."""
import os
import json
import re
import sqlite3
import tempfile
import time

import support
from support import SLOW, Page, api_sign_in, expect, page_function, sign_in
from tests_approvals import Login, requests_list
from tests_files import cli, open_files, save, spki_fingerprint
from tests_messages import Cli, compose, ready, steps, to_list
from tests_two_factor import decode

NUMBER = re.compile(r"^(\d{5} ){11}\d{5}$")


def idb_count(page, database, store):
    return page.evaluate(
        page_function("storage.js", "countRecords"),
        [database, store],
    )


def cli_number(cli_user, username):
    return re.search(r"(\d{5}(?: \d{5}){11})", cli_user.run("safety-number", username).stdout).group(1)


def test_contacts_look_up_compare_and_trust_before_a_first_message(server, browser):
    bob = Cli(server).register("kxbob")
    second = Cli(server)
    try:
        p = Page(browser, server)
        page = p.page
        ready(p, "kxana")
        page.get_by_role("button", name="Messages", exact=True).click()
        page.get_by_role("button", name="Contacts").click()
        contacts = page.get_by_role("region", name="Contacts")
        listed = contacts.get_by_role("list", name="Pinned contacts")
        expect(listed).to_contain_text("Nobody yet")
        expect(page.get_by_role("button", name="Contacts")).to_have_attribute("aria-expanded", "true")

        # Names are checked before the server is asked, and an unknown one is said so.
        contacts.get_by_label("Username").fill("KX bad!")
        contacts.get_by_role("button", name="Look up").click()
        expect(contacts.get_by_role("alert")).to_contain_text("A username is 3 to 32")
        contacts.get_by_label("Username").fill("kxnobody")
        contacts.get_by_role("button", name="Look up").click()
        check = contacts.get_by_role("region", name="Safety number check")
        expect(check.get_by_label("Safety number", exact=True)).to_contain_text("There is no user kxnobody", timeout=30_000)
        expect(check.get_by_role("button", name="Trust")).to_have_count(0)

        # kxbob, never messaged: the browser's number is the CLI's, and so is its QR code.
        contacts.get_by_label("Username").fill("kxbob")
        contacts.get_by_role("button", name="Look up").click()
        number = check.get_by_label("Safety number", exact=True)
        expect(number).to_have_text(NUMBER, timeout=30_000)
        expected = cli_number(bob, "kxana")
        assert number.inner_text() == expected, (number.inner_text(), expected)
        scanned = decode(p, check.get_by_role("img", name="QR code of the safety number with kxbob"), "contacts-qr")
        assert scanned == expected.replace(" ", ""), scanned
        p.shot("contacts-lookup")
        # Looking up pins nothing: only "Trust" does.
        assert idb_count(page, "countersign", "pins") == 0
        expect(listed).to_contain_text("Nobody yet")
        check.get_by_role("button", name="Trust").click()
        expect(contacts.get_by_role("status")).to_have_text("kxbob's devices are trusted.", timeout=15_000)
        entry = listed.get_by_role("listitem", name="kxbob")
        expect(entry).to_contain_text(re.compile(r"1 device, pinned since "))
        expect(entry).to_contain_text("Keys as pinned.", timeout=30_000)
        p.shot("contacts-trusted")
        # Trusted already: the number again, without "Trust".
        contacts.get_by_label("Username").fill("kxbob")
        contacts.get_by_role("button", name="Look up").click()
        expect(number).to_have_text(NUMBER, timeout=30_000)
        expect(check).to_contain_text("Trusted since", timeout=15_000)
        expect(check.get_by_role("button", name="Trust")).to_have_count(0)
        # The first message goes to the devices trusted here (no first-contact pin of its own).
        compose(page, "kxbob", "compared first")
        expect(steps(page)).to_contain_text("Sent.", timeout=30_000)
        texts = [bob.run("read", e["id"]).stdout.strip() for e in bob.inbox() if e["direction"] == "incoming"]
        assert texts == ["compared first"], texts

        # kxbob gets a second device: the list says its keys changed, and the look-up offers "Trust". (The send
        # opened the conversation: Contacts is on the list of conversations.)
        second.device("kxbob", name="second")
        to_list(page)
        page.get_by_role("button", name="Contacts").click()
        expect(entry).to_contain_text("Changed keys: added device second", timeout=30_000)
        p.shot("contacts-changed")
        # A long fingerprint in the warning wraps: nothing scrolls sideways on a phone.
        page.set_viewport_size(support.PHONE)
        assert page.evaluate("document.documentElement.scrollWidth") <= support.PHONE["width"]
        page.set_viewport_size(support.DESKTOP)
        entry.get_by_role("button", name="Safety number with kxbob").click()
        expect(number).to_have_text(NUMBER, timeout=30_000)
        assert number.inner_text() == cli_number(second, "kxana")
        check.get_by_role("button", name="Trust").click()
        expect(entry).to_contain_text(re.compile(r"2 devices, pinned since "), timeout=15_000)
        expect(entry).to_contain_text("Keys as pinned.", timeout=30_000)
        p.close()
    finally:
        bob.close()
        second.close()


def test_files_import_asks_before_replacing_a_key(server, browser):
    work = tempfile.mkdtemp(prefix="cs-files-")
    cli("keygen", "--no-passphrase", "-o", f"{work}/new.key")
    open(f"{work}/new.pem", "wb").write(cli("pubkey", f"{work}/new.key").stdout)
    p = Page(browser, server)
    page = open_files(p, "kxfay")
    page.get_by_role("tab", name="Keys").click()
    keys = page.get_by_role("region", name="Keys")
    fingerprint = keys.get_by_test_id("file-key-fingerprint")
    keys.get_by_role("button", name="Generate New Key Pair").click()
    expect(keys.get_by_role("status")).to_contain_text("New key pair generated")
    old = fingerprint.inner_text().replace("\u200b", "")
    new = spki_fingerprint(f"{work}/new.pem")

    # Cancel keeps the key.
    keys.get_by_label("Key file", exact=True).set_input_files(f"{work}/new.key")
    keys.get_by_role("button", name="Import Key File").click()
    ask = keys.get_by_role("group", name="Replace your file key with the imported one?")
    expect(ask).to_have_text(re.compile(
        rf"Replace the file key {old} with {new}\? Files sealed to the old key will no longer open in this browser \(a key made here cannot be exported; an imported one can be imported again from its file\)\."
    ), timeout=20_000)
    expect(ask.get_by_role("button", name="Cancel")).to_be_focused()
    p.shot("files-import-replace")
    ask.get_by_role("button", name="Cancel").click()
    expect(ask).to_have_count(0)
    expect(keys.get_by_role("status")).to_contain_text(f"Kept your file key {old}")
    assert fingerprint.inner_text().replace("\u200b", "") == old
    assert page.evaluate(page_function("files.js", "fileKeyFingerprint")) == old

    # "Replace key" replaces it.
    keys.get_by_role("button", name="Import Key File").click()
    expect(ask).to_be_visible(timeout=20_000)
    ask.get_by_role("button", name="Replace key").click()
    expect(keys.get_by_role("status")).to_have_text(f"Key file imported: {new}.", timeout=15_000)
    assert fingerprint.inner_text().replace("\u200b", "") == new
    expect(ask).to_have_count(0)
    # The same key again replaces nothing, so nothing is asked.
    save(page, lambda: keys.get_by_role("button", name="Download public key (SPKI PEM)").click(), f"{work}/again.pem")
    expect(keys.get_by_role("status")).to_have_text(f"Public key saved as kxfay-{new.replace(':', '')[:8]}.pem.")
    keys.get_by_role("button", name="Import Key File").click()
    expect(keys.get_by_role("status")).to_have_text(f"Key file imported: {new}.", timeout=15_000)
    expect(ask).to_have_count(0)
    p.close()


def other_tab(p, server, resume=True):
    """A second tab in `p`'s browser context: the same profile (IndexedDB, Web Locks), recorded like p. It is
    signed in by itself (docs/PROTOCOL.md §1.1); `resume=False` keeps it on the sign-in screen (its
    resumption refused on the way), for a sign-in of its own."""
    tab = Page.__new__(Page)
    tab.context, tab.page, tab.problems = p.context, p.context.new_page(), p.problems
    tab.page.on(
        "console",
        lambda m: m.type == "error"
        and not re.fullmatch(r"Failed to load resource: the server responded with a status of 4\d\d .*", m.text)
        and tab.problems.append(f"console (second tab): {m.text}"),
    )
    tab.page.on("pageerror", lambda e: tab.problems.append(f"page error (second tab): {e}"))
    if not resume:
        refused = {"type": "about:blank", "code": "rate-limited", "title": "Too many", "status": 429, "detail": "Wait."}
        # Both ways to resume: asking for a nonce, and signing the one the binding gave (PROTOCOL §1.1).
        tab.page.route(
            re.compile(r".*/v1/session-resumptions(/challenges)?$"),
            lambda route: route.fulfill(status=429, content_type="application/problem+json", body=json.dumps(refused)),
        )
    tab.page.goto(server.url + "/")
    if not resume:
        expect(tab.page.get_by_label("Username")).to_be_visible(timeout=SLOW)
    return tab


def pair(p, server, username):
    """Pairs p's browser as kx…'s authenticator (recovery codes first: it cannot be the only factor).
    Returns a token of a full sign-in made just before, for changes to the second factors."""
    page = p.page
    token = api_sign_in(server, username)
    status, codes, _ = server.api("POST", "/v1/me/mfa/recovery-codes", None, token)
    assert status == 201, (status, codes)
    support.open_settings(page, "Two-factor")
    page.get_by_role("button", name="Pair this browser as an authenticator").click()
    expect(page.get_by_text(re.compile(r"^Paired\. Sign-in requests for "))).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Back").click()
    return token


def open_approvals(page):
    page.get_by_role("button", name="Approvals", exact=True).click()
    expect(page.get_by_role("heading", name="Approvals")).to_be_visible()


def authenticator_id(page):
    return page.evaluate(page_function("storage.js", "authenticatorDeviceIds"))


ELSEWHERE = "Sign-in requests are shown in another tab of this browser; they come here when that tab closes."
REMOVED = "This authenticator was removed from your account."


def test_approvals_a_revoked_authenticator_stops_showing_passcodes(server, browser):
    p = Page(browser, server)
    page = p.page
    ready(p, "kxrex")
    # A second tab, signed in (by itself) before the pairing: it waits for the first tab's authenticator.
    tab = other_tab(p, server)
    expect(tab.page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
    token = pair(p, server, "kxrex")
    open_approvals(page)
    expect(page.get_by_test_id("approvals-state")).to_have_text("Sign-in requests arrive live.", timeout=30_000)
    expect(page.get_by_test_id("passcode")).to_have_text(re.compile(r"^\d{6}$"))
    tab.page.get_by_role("button", name="Settings").click()
    tab.page.get_by_role("button", name="Back").click()
    open_approvals(tab.page)
    expect(tab.page.get_by_test_id("approvals-state")).to_have_text(ELSEWHERE, timeout=30_000)
    expect(tab.page.get_by_test_id("passcode")).to_have_text(re.compile(r"^\d{6}$"))
    [device] = authenticator_id(page)

    # Revoked from the account (as Settings → Devices or `countersign device revoke` do).
    status, body, _ = server.api("DELETE", f"/v1/devices/{device}", None, token)
    assert status == 204, (status, body)
    for each in (page, tab.page):
        expect(each.get_by_role("alert").filter(has_text=REMOVED)).to_be_visible(timeout=45_000)
        expect(each.get_by_test_id("passcode")).to_have_count(0)
        expect(each.get_by_text("This browser is not an authenticator for your account.")).to_be_visible()
        expect(each.get_by_role("button", name="Pair this browser as an authenticator")).to_be_visible()
    p.shot("approvals-removed")
    # The keys and the TOTP secret are gone from IndexedDB.
    assert authenticator_id(page) == []
    assert idb_count(page, "countersign", "authenticators") == 0
    # And they stay gone: signing in again here finds nothing to run.
    page.get_by_role("button", name="Back").click()
    open_approvals(page)
    expect(page.get_by_test_id("passcode")).to_have_count(0)
    p.close()


def test_approvals_two_tabs_run_one_authenticator(server, browser):
    """The authenticator runs in one tab of a profile, under a Web Lock: another tab shows that it runs
    elsewhere and receives, lists and answers nothing (so two tabs cannot answer one request twice),
    until the tab holding it closes; then it takes over, without what the first tab answered."""
    cli = Cli(server)
    logins = []
    p = Page(browser, server)
    page = p.page
    try:
        ready(p, "kxtia")
        pair(p, server, "kxtia")
        open_approvals(page)
        expect(page.get_by_test_id("approvals-state")).to_have_text("Sign-in requests arrive live.", timeout=30_000)
        [device] = authenticator_id(page)

        # A second tab signs in: its push is approved in the first tab, with the number it shows.
        tab = other_tab(p, server, resume=False)
        asked = []
        tab.page.on("request", lambda r: ("/v1/authenticator/" in r.url or device in (r.post_data or "")) and asked.append(f"{r.method} {r.url}"))
        sign_in(tab, "kxtia")
        shown = tab.page.locator(".number .digits")
        expect(shown).to_have_text(re.compile(r"^\d{2}$|^\d{6}$"), timeout=SLOW)
        request = requests_list(page).get_by_role("listitem")
        expect(request).to_have_count(1, timeout=30_000)
        request.get_by_label("Number shown on the sign-in screen").fill(shown.inner_text())
        request.get_by_role("button", name="Approve").click()
        expect(tab.page.get_by_role("heading", name="Signed in as kxtia")).to_be_visible(timeout=30_000)
        open_approvals(tab.page)
        expect(tab.page.get_by_test_id("approvals-state")).to_have_text(ELSEWHERE, timeout=30_000)
        # One holder, one waiter, for the one lock.
        locks = tab.page.evaluate("navigator.locks.query()")
        account = tab.page.evaluate("""import("/js/session.js").then((m) => m.session.account.id)""")
        name = f"countersign authenticator {account}"
        assert [l["name"] for l in locks["held"] if l["name"].startswith("countersign authenticator")] == [name], locks
        assert [l["name"] for l in locks["pending"] if l["name"].startswith("countersign authenticator")] == [name], locks
        holder = next(l["clientId"] for l in locks["held"] if l["name"] == name)
        waiter = next(l["clientId"] for l in locks["pending"] if l["name"] == name)
        assert holder != waiter, locks
        tab.shot("approvals-elsewhere")

        # A sign-in request reaches the first tab only; answered there, it is gone there.
        logins.append(Login(cli, "kxtia"))
        number = logins[-1].number()
        expect(request).to_have_count(1, timeout=30_000)
        time.sleep(6)  # a poll round of the waiting tab, were it polling
        expect(requests_list(tab.page).get_by_role("listitem")).to_have_count(0)
        request.get_by_label("Number shown on the sign-in screen").fill(number)
        request.get_by_role("button", name="Approve").click()
        expect(page.get_by_text("Approved: kxtia's sign-in from 127.0.0.1 is complete.")).to_be_visible(timeout=30_000)
        code, out, err = logins[-1].wait()
        assert code == 0, (code, out, err)
        expect(request).to_have_count(0)

        # Another one waits in the first tab; that tab closes; the second takes over and lists it (and not
        # the one answered), and answers it.
        logins.append(Login(cli, "kxtia"))
        number = logins[-1].number()
        expect(request).to_have_count(1, timeout=30_000)
        assert asked == [], asked
        page.close()
        expect(tab.page.get_by_test_id("approvals-state")).to_have_text("Sign-in requests arrive live.", timeout=30_000)
        waiting = requests_list(tab.page).get_by_role("listitem")
        expect(waiting).to_have_count(1, timeout=30_000)
        waiting.get_by_label("Number shown on the sign-in screen").fill(number)
        waiting.get_by_role("button", name="Approve").click()
        expect(tab.page.get_by_text("Approved: kxtia's sign-in from 127.0.0.1 is complete.")).to_be_visible(timeout=30_000)
        code, out, err = logins[-1].wait()
        assert code == 0, (code, out, err)
        assert any("/v1/authenticator/challenges" in a for a in asked), asked
        p.close()
    finally:
        for each in logins:
            each.close()
        cli.close()


def test_a_name_with_bidi_controls_shows_them_escaped_in_contacts_and_settings(server, browser):
    """A device name holding U+202E (stored before the server refused them, or by a server that does not):
    the page writes such characters out as <U+202E> and isolates the name in a <bdi>, so "\\u202Eevil" cannot
    read "live", in a peer's changed keys (Contacts) and in the account's own devices (Settings)."""
    eve = Cli(server).register("kxeve")
    second = Cli(server)
    try:
        p = Page(browser, server)
        page = p.page
        ready(p, "kxdan")
        page.get_by_role("button", name="Messages", exact=True).click()
        page.get_by_role("button", name="Contacts").click()
        contacts = page.get_by_role("region", name="Contacts")
        contacts.get_by_label("Username").fill("kxeve")
        contacts.get_by_role("button", name="Look up").click()
        check = contacts.get_by_role("region", name="Safety number check")
        check.get_by_role("button", name="Trust").click(timeout=30_000)
        entry = contacts.get_by_role("list", name="Pinned contacts").get_by_role("listitem", name="kxeve")
        expect(entry).to_contain_text("Keys as pinned.", timeout=30_000)

        # kxeve's new device and kxdan's own browser, named with a right-to-left override in the database.
        second.device("kxeve", name="second")
        db = sqlite3.connect(os.path.join(server.dir, "web.sqlite"), timeout=10)
        with db:
            db.execute("UPDATE devices SET name = ? WHERE name = 'second'", ("\u202eevil",))
            db.execute(
                "UPDATE devices SET name = ? WHERE account_id = (SELECT id FROM accounts WHERE username = 'kxdan')",
                ("laptop \u202eevil\u202c 2",),
            )
        db.close()
        page.get_by_role("button", name="Contacts").click()
        page.get_by_role("button", name="Contacts").click()
        expect(entry).to_contain_text("Changed keys: added device <U+202E>evil (", timeout=30_000)
        expect(entry.locator("strong bdi.peer-name")).to_have_text("kxeve")
        p.shot("contacts-name-escaped")
        assert "\u202e" not in page.evaluate("document.body.innerText")

        page.get_by_role("button", name="Back").click()
        support.open_settings(page, "Devices")
        devices = page.get_by_role("list", name="Devices")
        name = devices.locator("bdi.peer-name.escaped")
        expect(name).to_have_text("laptop <U+202E>evil<U+202C> 2", timeout=30_000)
        expect(devices.get_by_role("button", name="Rename laptop <U+202E>evil<U+202C> 2")).to_be_visible()
        assert "\u202e" not in page.evaluate("document.body.innerText")
        devices.screenshot(path=os.path.join(support.ARTIFACTS, "settings-device-name-escaped.png"))
        p.close()
    finally:
        eve.close()
        second.close()
