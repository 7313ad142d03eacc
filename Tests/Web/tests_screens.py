"""Screens a person reads once (issue 35 §4): what a lockout says at each step, and whom to ask."""
import re

import support
from support import SLOW, Page, api_account, expect


def test_sign_in_says_when_one_more_failure_locks_and_whom_to_ask(server, browser):
    # A server of its own: the lockout without a delay (the 5th failure locks) and an administrator's contact.
    strict = support.Server(
        COUNTERSIGN_LOCKOUT_DELAY_AFTER="5",
        COUNTERSIGN_LOCKOUT_LOCK_AFTER="5",
        COUNTERSIGN_ADMIN_CONTACT="the IT desk, 555-0100",
    )
    try:
        api_account(strict, "lou")
        p = Page(browser, strict, viewport=support.PHONE)
        page = p.page
        alert = page.get_by_role("alert")
        said = []
        page.get_by_label("Username").fill("lou")
        for attempt in range(1, 6):
            if attempt > 1:
                alert.evaluate("node => (node.textContent = '')")  # each answer's words, not the last one's
            page.get_by_label("Password").fill("not the password")
            page.get_by_role("button", name="Sign in", exact=True).click()
            expect(alert).not_to_be_empty(timeout=SLOW)
            said.append(alert.inner_text())
            if attempt == 4:
                p.shot("sign-in-one-more-locks")
        assert all("One more failure locks the account" not in words for words in said[:3]), said
        assert "One more failure locks the account" in said[3], said
        assert said[4].endswith("Ask the IT desk, 555-0100 to unlock it."), said
        # The right password now: refused, with whom to ask.
        alert.evaluate("node => (node.textContent = '')")
        page.get_by_label("Password").fill("correct horse battery")
        page.get_by_role("button", name="Sign in", exact=True).click()
        expect(alert).to_have_text(
            re.compile(r"^Too many failed sign-ins locked the account\. Ask the IT desk, 555-0100 to unlock it\.$"),
            timeout=SLOW,
        )
        p.shot("sign-in-locked")
        p.close()
    finally:
        strict.stop()


# Roles a person operates: each needs a name (the browser's own computation, from its accessibility tree).
CONTROL_ROLES = {
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "switch", "combobox", "listbox", "slider",
    "spinbutton", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "PopUpButton",
}
NAMELESS = support.page_function("accessibility.js", "namelessControls")


def nameless_controls(page):
    """Every control the accessibility tree holds without a name, by role (and the page's own check's HTML)."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    bad = [
        n["role"]["value"]
        for n in nodes
        if not n.get("ignored")
        and n.get("role", {}).get("value") in CONTROL_ROLES
        and not str(n.get("name", {}).get("value", "")).strip()
    ]
    return bad + page.evaluate(NAMELESS) if bad else page.evaluate(NAMELESS)


def check_screen(page, name, problems):
    """At 390 and 1280 px: a full-page screenshot, no horizontal scrolling, every control named."""
    for label, size in (("phone", support.PHONE), ("desktop", support.DESKTOP)):
        page.set_viewport_size(size)
        page.wait_for_timeout(300)  # layout and any load the screen starts
        wide = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        if wide[0] > wide[1]:
            problems.append(f"{name} at {label}: {wide[0]} px wide in a {wide[1]} px window")
        unnamed = nameless_controls(page)
        if unnamed:
            problems.append(f"{name} at {label}: controls without a name: {unnamed}")
        page.screenshot(path=f"{support.ARTIFACTS}/screens-{name}-{label}.png", full_page=True)
    page.set_viewport_size(support.DESKTOP)


SIGNED_IN_SCREENS = [
    ("home", "Signed in as"),
    ("messages", "Messages"),
    ("files/encrypt", "Files"),
    ("files/decrypt", "Files"),
    ("files/keys", "Files"),
    ("settings/account", "Settings"),
    ("settings/security", "Settings"),
    ("settings/devices", "Settings"),
    ("settings/passkeys", "Settings"),
    ("settings/two-factor", "Settings"),
    ("settings/key-gate", "Settings"),
    ("settings/audit", "Settings"),
    ("approvals", "Approvals"),
]


def test_every_screen_fits_a_phone_and_a_desktop_and_names_its_controls(server, browser):
    p = Page(browser, server)
    page = p.page
    problems = []
    check_screen(page, "sign-in", problems)
    page.get_by_role("button", name="Sign up").click()
    check_screen(page, "sign-up", problems)
    page.get_by_role("button", name="Back to sign in").click()
    page.get_by_role("link", name="Sign in with a QR code").click()
    expect(page.get_by_role("region", name="Sign in with a QR code")).to_be_visible()
    check_screen(page, "qr-sign-in", problems)
    page.get_by_role("button", name="Back to sign in").click()
    support.sign_up(p, "wren")
    expect(page.get_by_role("status").first).to_contain_text("Device ready", timeout=SLOW)
    for route, heading in SIGNED_IN_SCREENS:
        page.evaluate(f"location.hash = '#/{route}'")
        expect(page.get_by_role("heading", name=re.compile("^" + heading)).first).to_be_visible()
        check_screen(page, route.replace("/", "-"), problems)
    p.close()
    assert not problems, "\n".join(problems)
