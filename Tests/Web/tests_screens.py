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
