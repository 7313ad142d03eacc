"""Linked devices and calm trust (issue 35 §2): a second browser of an account shows its link code, the first
shows "Is this your new device?" with the same code and approves it, and a contact who pinned the account then
writes to it with no warning and a calm notice; a device nobody approved still blocks until Trust and its
message is named as from an unverified device; a contact marked verified follows no link. The CLI beside checks
that the browser's link codes are the Swift code's. Every user here is named lk…."""
import re

from support import SLOW, Page, api_sign_in, expect, open_settings, sign_in
from tests_messages import Cli, compose, ready, steps, to_list

CODE = re.compile(r"^\d{4}( \d{4}){5}$")


def home(page):
    """Home, from wherever the page is."""
    page.goto(page.url.split("#")[0] + "#/home")
    expect(page.get_by_role("region", name="Account")).to_be_visible()


def no_alert(page):
    """No alert on screen says anything."""
    expect(page.locator("[role=alert]:not(:empty)")).to_have_count(0)


def contact_item(page, name):
    """The Contacts list's entry for `name`, from Messages."""
    to_list(page)
    contacts = page.get_by_role("region", name="Contacts")
    if not contacts.is_visible():
        page.get_by_role("button", name="Contacts").click()
    return contacts.get_by_role("list", name="Pinned contacts").get_by_role("listitem", name=name, exact=True)


def cli_code(cli):
    """The link code `countersign device link` shows (without waiting)."""
    out = cli.run("device", "link", "--wait", "0").stdout
    return re.search(r"Link code: (\d{4}(?: \d{4}){5})", out).group(1)


def test_a_linked_browser_is_followed_calmly_and_an_unapproved_device_is_not(server, browser):
    first, bob, second = Page(browser, server), Page(browser, server), Page(browser, server)
    terminal, pad, stray = Cli(server), Cli(server), Cli(server)
    try:
        # alice's first browser and bob's: each pins the other's account by a first message.
        ready(first, "lkalice")
        ready(bob, "lkbob")
        # The oldest device of an account has nobody to approve it: no "Link this device".
        expect(first.page.get_by_role("region", name="Link this device")).to_have_count(0)
        first.page.get_by_role("button", name="Messages", exact=True).click()
        compose(first.page, "lkbob", "hello bob")
        expect(steps(first.page)).to_contain_text("Sent.", timeout=30_000)
        bob.page.get_by_role("button", name="Messages", exact=True).click()
        compose(bob.page, "lkalice", "hello alice")
        expect(steps(bob.page)).to_contain_text("Sent.", timeout=30_000)
        home(first.page)

        # alice signs in on a second browser: it shows its link code and QR, and waits.
        sign_in(second, "lkalice")
        expect(second.page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        waiting = second.page.get_by_role("region", name="Link this device")
        expect(waiting).to_be_visible(timeout=30_000)
        code = waiting.get_by_label("Link code", exact=True).inner_text()
        assert CODE.match(code), code
        expect(waiting.get_by_role("img", name="QR code of this browser's link code")).to_be_visible()
        expect(waiting).to_contain_text("Waiting for approval")
        second.shot("link-this-device")

        # The first browser asks "Is this your new device?" with the same code, and approves it.
        ask = first.page.get_by_role("region", name="Is this your new device?")
        expect(ask).to_be_visible(timeout=30_000)
        expect(ask.get_by_test_id("link-code")).to_have_text(code)
        expect(ask).to_contain_text("Fingerprint")
        first.shot("link-is-this-your-new-device")
        ask.get_by_role("button", name="Yes, approve").click()
        expect(first.page.get_by_role("status").filter(has_text="Approved")).to_contain_text(
            "People who pinned this browser now follow it", timeout=30_000
        )
        expect(ask).to_have_count(0)
        # The new browser notices by itself.
        linked = second.page.get_by_role("status").filter(has_text="This browser is linked")
        expect(linked).to_contain_text("approved by", timeout=30_000)
        second.shot("link-linked")

        # alice's first browser writes again: its own account's new device is simply hers.
        first.page.get_by_role("button", name="Messages", exact=True).click()
        compose(first.page, "lkbob", "from the first browser, after the link")
        expect(steps(first.page)).to_contain_text("Sent.", timeout=30_000)
        no_alert(first.page)

        # bob writes to alice with no warning, sealed to both browsers, and Contacts says what changed, calmly.
        compose(bob.page, "lkalice", "after the link")
        expect(steps(bob.page)).to_contain_text("Sent.", timeout=30_000)
        no_alert(bob.page)
        item = contact_item(bob.page, "lkalice")
        expect(item).to_contain_text(re.compile(r"Safety number changed \d\d:\d\d"), timeout=30_000)
        notice = item.get_by_role("note")
        expect(notice).to_contain_text(re.compile(r"lkalice linked a new device, “[^”]+”, approved by “[^”]+”"))
        expect(item).not_to_contain_text("Changed keys")
        bob.shot("link-contact-notice")
        notice.get_by_role("button", name="OK, seen the changes of lkalice").click()
        expect(item.get_by_role("note")).to_have_count(0)
        # The second browser got it too.
        second.page.get_by_role("button", name="Messages", exact=True).click()
        expect(second.page.get_by_role("list", name="Conversations")).to_contain_text("lkbob", timeout=30_000)

        # A device added and not approved (the CLI): the first browser asks, with the code the CLI shows
        # (Swift's DeviceProof.linkCode: the same 24 digits as linking.js's).
        terminal.device("lkalice", name="terminal")
        home(first.page)
        ask = first.page.get_by_role("region", name="Is this your new device?")
        terminal_item = ask.get_by_role("listitem", name="terminal")
        expect(terminal_item).to_be_visible(timeout=30_000)
        expect(terminal_item.get_by_test_id("link-code")).to_have_text(cli_code(terminal))

        # bob is stopped until he compares and trusts; a message from it is from alice's unverified device.
        compose(bob.page, "lkalice", "after the terminal")
        alert = bob.page.get_by_role("alert").first
        expect(alert).to_contain_text("lkalice's devices changed since you pinned them", timeout=30_000)
        expect(alert).to_contain_text("added device terminal")
        terminal.run("send", "--to", "lkbob", "from the terminal")
        to_list(bob.page)
        bob.page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile(r"^lkalice\b")).click()
        thread = bob.page.get_by_role("list", name="Messages with lkalice")
        from_terminal = thread.get_by_role("listitem").filter(has_text="from the terminal")
        expect(from_terminal).to_contain_text("From lkalice's new, unverified device “terminal”", timeout=30_000)
        expect(from_terminal.get_by_role("alert")).to_have_count(0)  # not refused
        bob.shot("link-unverified-device")
        # "Verify" beside it: the safety number, and Trust.
        from_terminal.get_by_role("button", name="Verify").click()
        compare = bob.page.get_by_role("region", name="Compare the safety number")
        expect(compare.get_by_label("Safety number", exact=True)).to_have_text(
            re.compile(r"^(\d{5} ){11}\d{5}$"), timeout=30_000
        )
        compare.get_by_role("button", name="Trust").click()
        expect(from_terminal).not_to_contain_text("unverified", timeout=15_000)
        compose(bob.page, "lkalice", "after the terminal")
        expect(steps(bob.page)).to_contain_text("Sent.", timeout=30_000)

        # bob marks alice verified after comparing: then even a device her trusted terminal approves blocks.
        item = contact_item(bob.page, "lkalice")
        item.get_by_role("button", name="Safety number with lkalice").click()
        check = bob.page.get_by_role("region", name="Safety number check")
        check.get_by_role("button", name="Mark as verified").click()
        expect(bob.page.get_by_role("region", name="Contacts").get_by_role("status")).to_contain_text(
            "lkalice is marked verified", timeout=15_000
        )
        expect(check.get_by_role("button", name="Remove mark")).to_be_visible()
        expect(item).to_contain_text("Verified")
        bob.shot("contacts-verified")
        pad.device("lkalice", name="pad")
        terminal.run("device", "approve", "--code", cli_code(pad), "--yes")
        compose(bob.page, "lkalice", "after the pad")
        alert = bob.page.get_by_role("alert").first
        expect(alert).to_contain_text("added device pad", timeout=30_000)
        expect(alert).to_contain_text("You marked lkalice verified")
        # Without the mark, the same vouched device is followed.
        item = contact_item(bob.page, "lkalice")
        item.get_by_role("button", name="Safety number with lkalice").click()
        bob.page.get_by_role("region", name="Safety number check").get_by_role("button", name="Remove mark").click()
        expect(bob.page.get_by_role("region", name="Contacts").get_by_role("status")).to_contain_text(
            "no longer marked verified", timeout=15_000
        )
        compose(bob.page, "lkalice", "after the pad")
        expect(steps(bob.page)).to_contain_text("Sent.", timeout=30_000)
        texts = [terminal.run("read", e["id"]).stdout.strip() for e in terminal.inbox() if e["direction"] == "incoming"]
        assert "after the terminal" in texts and "after the pad" in texts, texts

        # Settings, Devices asks too; "No, remove it" revokes the device.
        stray.device("lkalice", name="stray")
        home(first.page)
        open_settings(first.page, "Devices")
        ask = first.page.get_by_role("region", name="Is this your new device?")
        stray_item = ask.get_by_role("listitem", name="stray")
        expect(stray_item).to_be_visible(timeout=30_000)
        expect(ask.get_by_role("listitem", name="terminal")).to_be_visible()
        first.shot("settings-devices-new-device")
        stray_item.get_by_role("button", name="No, remove it").click()
        expect(first.page.get_by_role("status").filter(has_text="Removed")).to_contain_text(
            "“stray”: it can no longer read or send messages as you", timeout=30_000
        )
        expect(stray_item).to_have_count(0)
        expect(first.page.get_by_role("list", name="Devices")).not_to_contain_text("stray")
        for p in (first, bob, second):
            p.close()
    finally:
        for cli in (terminal, pad, stray):
            cli.close()


def test_the_browser_lets_the_paired_authenticator_approve_and_it_links_a_new_device(server, browser):
    """Settings, Devices: "Let it approve new devices" beside the CLI authenticator shows the code its `authenticator
    status` shows; approved, the authenticator links a new CLI device, and the browser lists it as approved by the
    authenticator, with no "Is this your new device?" left to answer."""
    p = Page(browser, server)
    phone, tablet = Cli(server), Cli(server)
    try:
        ready(p, "lkapal")
        status, issued, _ = server.api("POST", "/v1/me/mfa/pairing-keys", None, api_sign_in(server, "lkapal"))
        assert status == 201, (status, issued)
        phone.run("authenticator", "pair", issued["key"], "--server", server.url, "--no-passphrase", "--name", "lk phone")
        shown = phone.run("authenticator", "status").stdout
        assert "approves no devices yet" in shown, shown
        code = re.search(r"^code (\d{4}(?: \d{4}){5})$", shown, re.M).group(1)

        open_settings(p.page, "Devices")
        item = p.page.get_by_role("list", name="Devices").get_by_role("listitem").filter(has_text="lk phone")
        item.get_by_role("button", name="Let lk phone approve new devices").click()
        ask = item.get_by_role("region", name="Is this your authenticator?")
        expect(ask.get_by_test_id("approver-code")).to_have_text(code)
        # The question has the focus, not "Yes": Escape closes it and gives the focus back.
        expect(ask.get_by_role("heading", name="Is this your authenticator?")).to_be_focused()
        p.page.keyboard.press("Escape")
        expect(ask).to_have_count(0)
        opener = item.get_by_role("button", name="Let lk phone approve new devices")
        expect(opener).to_be_focused()
        opener.click()
        expect(ask.get_by_role("heading", name="Is this your authenticator?")).to_be_focused()
        p.shot("approver-is-this-your-authenticator")
        ask.get_by_role("button", name="Yes, let it approve").click()
        expect(p.page.get_by_role("status").filter(has_text="may now approve")).to_be_visible(timeout=30_000)
        expect(item).to_contain_text("Also approves your new devices (allowed by")
        expect(item).to_contain_text("Authenticator: approves sign-ins and new devices")
        expect(item.get_by_role("button", name="Let lk phone approve new devices")).to_have_count(0)
        assert "approves new devices (allowed by" in phone.run("authenticator", "status").stdout

        # A new device (its sign-in finished with the authenticator's passcode), approved by the authenticator.
        otp = phone.run("authenticator", "otp").stdout.split()[0]
        tablet.run("account", "login", "lkapal", "--password-file", tablet.password_file, "--otp", otp)
        tablet.run("device", "init", "--no-passphrase", "--name", "lk tablet")
        phone.run("authenticator", "approve-device", "--code", cli_code(tablet), "--yes")
        p.page.reload()
        tablet_item = p.page.get_by_role("list", name="Devices").get_by_role("listitem").filter(has_text="lk tablet")
        expect(tablet_item).to_be_visible(timeout=30_000)
        # After the reload too, this browser is named as such and offers no Revoke of itself.
        this = p.page.get_by_role("list", name="Devices").get_by_role("listitem").filter(has_text="This browser")
        expect(this).to_have_count(1)
        expect(this.get_by_role("button", name=re.compile("^Revoke"))).to_have_count(0)
        expect(p.page.get_by_role("region", name="Is this your new device?")).to_have_count(0)
        p.shot("approver-endorsed")
        no_alert(p.page)
    finally:
        p.close()
        phone.close()
        tablet.close()
