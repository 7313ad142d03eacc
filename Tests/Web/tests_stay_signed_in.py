"""Staying signed in (docs/PROTOCOL.md §1.1, issue 35 §1): a reload, a new tab, Back and Forward and a browser
restart keep the session, by a signature of the key the session is bound to (no token in localStorage,
sessionStorage, a cookie or IndexedDB); every screen has an address; signing out in one tab signs out every
tab and the next reload asks to sign in; with the key gate on a reload shows "Locked" and one unlock signs
back in."""
import json
import os
import shutil
import tempfile

import support

from support import PHONE, SLOW, Page, api_sign_in, expect, page_function, sign_in, sign_up
from tests_gate import prompt, record, settings_gate

READ_BINDING = page_function("storage.js", "bindingRecords")


def home(page, username):
    return page.get_by_role("heading", name=f"Signed in as {username}")


def signed_up_with_the_gate_on(browser, server, username):
    """A new account's page, its browser a device, the key gate turned on there with the account password (this
    Chromium's authenticator gives no PRF); left on Settings → Key gate."""
    p = Page(browser, server)
    page = p.page
    sign_up(p, username)
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)
    settings_gate(page).click()
    page.get_by_role("button", name="Turn on with passkey").click()
    expect(page.get_by_test_id("gate-no-prf")).to_contain_text("lock the keys with your password", timeout=60_000)
    page.get_by_label("Account password").fill("correct horse battery")
    page.get_by_role("button", name="Turn on with password").click()
    expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your password", timeout=SLOW)
    return p


def no_token_kept(page):
    """Nothing a token could be read back from: web storage, cookies, and the binding's IndexedDB record."""
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.context.cookies() == []
    records = page.evaluate(READ_BINDING)
    assert len(records) == 1, records
    assert "cs_" not in json.dumps(records), records
    return records[0]


def test_a_reload_while_the_binding_moves_to_the_device_keeps_you_signed_in(server, browser):
    """The server moves the binding to the device's key but the page leaves before storing the answer (a reload
    right after sign-up): the next page resumes with the device's key. A move that never reached the server
    resumes with the browser's own key."""
    for reached in (True, False):
        p = Page(browser, server)
        page = p.page
        moves = []

        def hold(route):
            body = json.loads(route.request.post_data or "{}")
            if not body.get("deviceId"):
                return route.continue_()
            if reached:
                route.fetch()  # the server moves the binding; the page never hears
            moves.append(reached)
            route.abort()

        page.route("**/v1/sessions/current/binding", hold)
        sign_up(p, f"mover{int(reached)}")
        expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        for _ in range(100):
            if moves:
                break
            page.wait_for_timeout(100)
        assert moves == [reached], moves
        page.unroute("**/v1/sessions/current/binding")
        # The aborted request's own console line; nothing else may be there.
        p.problems[:] = [line for line in p.problems if line != "console: Failed to load resource: net::ERR_FAILED"]
        assert no_token_kept(page)["rebinding"], "the move is noted before it is sent"
        page.reload()
        expect(home(page, f"mover{int(reached)}")).to_be_visible(timeout=SLOW)
        binding = no_token_kept(page)
        for _ in range(50):  # the resumed page tries the move again and is refused (a resumed session moves nothing)
            if not binding.get("rebinding"):
                break
            page.wait_for_timeout(100)
            binding = no_token_kept(page)
        if reached:
            assert binding["deviceId"] and binding["privateKey"] is None and not binding["rebinding"], binding
        else:
            # Still the browser's own key (a resumed session moves nothing: the next sign-in will), tried first.
            assert binding["deviceId"] is None and binding["privateKey"] and not binding["rebinding"], binding
        page.reload()
        expect(home(page, f"mover{int(reached)}")).to_be_visible(timeout=SLOW)
        p.close()


def test_a_reload_a_new_tab_back_and_forward_keep_you_signed_in(server, browser):
    p = Page(browser, server)
    page = p.page
    bodies = []
    page.on("request", lambda r: r.post_data and bodies.append((r.url, r.post_data)))
    sign_up(p, "stan")
    expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
    assert page.url.endswith("#/home"), page.url
    # The binding moves to the device's key once the device is ready.
    binding = no_token_kept(page)
    for _ in range(50):
        if binding.get("deviceId"):
            break
        page.wait_for_timeout(200)
        binding = no_token_kept(page)
    assert binding["deviceId"] and binding["privateKey"] is None, binding

    page.get_by_role("button", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    assert page.url.endswith("#/settings"), page.url
    resumptions = []
    page.on("request", lambda r: "/v1/session-resumptions" in r.url and resumptions.append(r.url.split("/v1/")[1]))
    page.reload()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible(timeout=SLOW)
    p.shot("reload-keeps-settings")
    # The nonce the binding gave is signed at once: one request, no nonce asked for (PROTOCOL §1.1).
    assert resumptions == ["session-resumptions"], resumptions
    # Only the page went over the network: its modules and stylesheets, named by version, came from the
    # browser's cache (docs/WEB.md: versioned URLs are immutable).
    fetched = page.evaluate("""() => performance.getEntriesByType("resource")
      .filter((e) => /[.](js|css)[?]v=/.test(e.name))
      .map((e) => [new URL(e.name).pathname, e.transferSize])""")
    assert len(fetched) >= 20 and all(size == 0 for _, size in fetched), fetched
    page.go_back()
    expect(home(page, "stan")).to_be_visible()
    page.go_forward()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    page.get_by_role("button", name="Back").first.click()
    expect(home(page, "stan")).to_be_visible()

    # A new tab at an address: signed in there too, on that screen.
    tab = p.context.new_page()
    tab.goto(server.url + "/#/files/keys")
    expect(tab.get_by_role("heading", name="Files")).to_be_visible(timeout=SLOW)
    # FileLock's segments as tabs, the one the address names selected.
    expect(tab.get_by_role("tab")).to_have_text(["Encrypt", "Decrypt", "Keys"])
    expect(tab.get_by_role("tab", name="Keys")).to_have_attribute("aria-selected", "true")
    expect(tab.get_by_role("region", name="Keys")).to_be_visible()
    expect(tab.get_by_role("form", name="Encrypt File")).to_be_hidden()
    tab.get_by_role("tab", name="Keys").press("ArrowRight")
    expect(tab.get_by_role("tab", name="Encrypt")).to_be_focused()
    assert tab.url.endswith("#/files/encrypt"), tab.url
    # No request carried a session token in its body, and no body a private key.
    assert not [u for u, b in bodies if "cs_" in b or "privateKey" in b], bodies

    # Signing out in one tab signs out the other, and no reload signs back in.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert "#" not in page.url, page.url
    expect(tab.get_by_role("heading", name="Sign in")).to_be_visible(timeout=30_000)
    expect(tab.get_by_role("status")).to_have_text("Signed out in another tab of this browser.")
    assert page.evaluate(READ_BINDING) == []
    page.reload()
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible(timeout=SLOW)
    tab.close()
    p.close()


def test_a_browser_restart_keeps_you_signed_in(server, browser):
    """A persistent profile, closed and opened again: still signed in, at the screen it was on."""
    profile = tempfile.mkdtemp(prefix="cs-profile-")
    try:
        for run in range(2):
            context = browser.browser_type.launch_persistent_context(
                profile, executable_path="/usr/bin/chromium", args=["--no-sandbox"], viewport=PHONE
            )
            try:
                page = context.pages[0] if context.pages else context.new_page()
                if run == 0:
                    page.goto(server.url + "/")
                    page.get_by_role("button", name="Sign up").click()
                    page.get_by_label("Username").fill("rita")
                    page.get_by_label("Password").fill("correct horse battery")
                    page.get_by_label("Name", exact=True).fill("Rita")
                    page.get_by_label("Last name").fill("Levi")
                    page.get_by_role("button", name="Create account").click()
                    expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
                    page.get_by_role("button", name="Messages", exact=True).first.click()
                    expect(page.get_by_role("region", name="Messages")).to_be_visible()
                    assert page.url.endswith("#/messages"), page.url
                    page.wait_for_timeout(1_000)  # the binding moved to the device's key
                else:
                    page.goto(server.url + "/#/messages")
                    expect(page.get_by_role("region", name="Messages")).to_be_visible(timeout=SLOW)
                    page.screenshot(path=os.path.join(support.ARTIFACTS, "restart-keeps-messages-phone.png"))
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_with_the_key_gate_on_a_reload_is_locked_until_one_unlock(server, browser):
    p = signed_up_with_the_gate_on(browser, server, "gina")
    page = p.page
    page.wait_for_timeout(1_000)
    binding = no_token_kept(page)
    assert binding["deviceId"] and binding["privateKey"] is None, binding

    page.reload()
    expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
    expect(page.get_by_text("Signed in as gina.")).to_be_visible()
    p.shot("locked-on-reload")
    gate = prompt(page)
    gate.get_by_label("Password", exact=True).fill("correct horse battery")
    gate.get_by_role("button", name="Unlock with password").click()
    # One unlock: the keys open and the session resumes, back on Settings where the reload happened.
    expect(page.get_by_role("heading", name="Settings")).to_be_visible(timeout=SLOW)
    p.close()


def test_one_unlock_serves_every_tab_and_a_lock_locks_all(server, browser):
    """SPEC §14.7: a tab opened while another holds the key gate open is not "Locked"; "Lock keys" in one tab
    locks every tab; an unlock in one opens the others."""
    p = signed_up_with_the_gate_on(browser, server, "tabby")
    page = p.page
    page.get_by_role("button", name="Back").first.click()
    lock_keys = page.get_by_role("button", name="Lock keys")
    expect(lock_keys).to_be_visible()

    # A new tab: the open gate is handed over, so no "Locked" and no prompt.
    tab = p.context.new_page()
    tab.goto(server.url + "/#/home")
    expect(home(tab, "tabby")).to_be_visible(timeout=SLOW)
    expect(tab.get_by_role("heading", name="Locked", exact=True)).to_have_count(0)
    tab_lock = tab.get_by_role("button", name="Lock keys")
    expect(tab_lock).to_be_visible()
    expect(tab.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)

    # "Lock keys" in the new tab locks the first one too.
    tab_lock.click()
    expect(tab.get_by_role("status")).to_contain_text("Keys locked in every tab of this browser")
    expect(tab_lock).to_be_hidden()
    expect(lock_keys).to_be_hidden(timeout=10_000)
    tab.screenshot(path=os.path.join(support.ARTIFACTS, "lock-keys-every-tab-desktop.png"))

    # One unlock (the first tab's reload: "Locked", the password) opens the new tab's keys as well.
    page.reload()
    expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
    gate = prompt(page)
    gate.get_by_label("Password", exact=True).fill("correct horse battery")
    gate.get_by_role("button", name="Unlock with password").click()
    expect(home(page, "tabby")).to_be_visible(timeout=SLOW)
    expect(tab_lock).to_be_visible(timeout=10_000)
    tab.close()
    p.close()


def test_a_password_sign_in_opens_a_password_gate_in_one_prompt(server, browser):
    """SPEC §14.7: the password the server has just accepted opens a gate with the password method, so signing
    in is one prompt; a gate that keeps an older password (changed in another browser) is not opened, nothing
    is counted against it, and the unlock prompt follows as before."""
    p = signed_up_with_the_gate_on(browser, server, "pam")
    page = p.page
    page.get_by_role("button", name="Back").first.click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    sign_in(p, "pam")
    expect(home(page, "pam")).to_be_visible(timeout=SLOW)
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)
    expect(page.get_by_role("button", name="Lock keys")).to_be_visible()
    expect(prompt(page)).to_have_count(0)
    p.shot("password-sign-in-one-prompt")

    # The password changed in another browser: the gate here still keeps the old one.
    token = api_sign_in(server, "pam")
    status, _, _ = server.api(
        "PUT", "/v1/me/password", {"currentPassword": "correct horse battery", "newPassword": "a brand new password"},
        token=token,
    )
    assert status == 204, status
    # A reload finds the keys locked ("Locked"); signing out there leads to the sign-in form.
    page.reload()
    expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    sign_in(p, "pam", "a brand new password")
    expect(home(page, "pam")).to_be_visible(timeout=SLOW)
    expect(prompt(page)).to_be_visible(timeout=SLOW)
    assert record(page)["gate"]["failures"] == 0, record(page)["gate"]
    prompt(page).get_by_label("Password", exact=True).fill("correct horse battery")
    prompt(page).get_by_role("button", name="Unlock with password").click()
    expect(page.get_by_test_id("fingerprint")).to_be_visible(timeout=SLOW)
    p.close()
