"""A day in the life (issue 35 §5): alice and bob, each in a browser, converse over an ordinary day and no
screen ever shows a red error: they sign up and talk in a thread (Enter sends), alice reloads and opens a
second tab, bob links a CLI device from his browser and alice follows it calmly, bob changes his message key
and alice follows the rotation, alice turns the key gate on and every older message still opens after one
unlock. Then the warnings that must remain: a device of bob's nobody approved is named as his new, unverified
device with "Verify" and blocks sending until Trust, and a message whose signature verifies under no key bob's
directory lists (a lying server relabelling mallory's message as bob's) is refused. Every user here is dl…."""
import json
import os
import re

import support
from support import SLOW, Page, expect, open_settings
from tests_gate import prompt, settings_gate
from tests_linking import cli_code, contact_item, home
from tests_messages import Cli, compose, open_conversation, ready, steps

PASSWORD = "correct horse battery"
ALICE, BOB, MALLORY = "dlalice", "dlbob", "dlmallory"

# Anything styled as an error or a refusal (app.css: .alert, and .banner unless calm, in red when not empty;
# .warning's red border), and any alert region with something in it.
RED = ".alert:not(:empty):visible, .banner:not(.calm):not(:empty):visible, .warning:visible"


def calm(*pages):
    """No alert says anything, and nothing on screen is styled as an error or refusal."""
    for page in pages:
        expect(page.locator("[role=alert]:not(:empty)")).to_have_count(0)
        expect(page.locator(RED)).to_have_count(0)


def thread(page, name):
    return page.get_by_role("list", name=f"Messages with {name}")


def say(page, name, text):
    """Writes `text` in the open conversation with `name` and sends it with Enter: sent, and shown as yours."""
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")
    expect(steps(page)).to_contain_text("Sent.", timeout=60_000)
    expect(box).to_have_value("")
    expect(thread(page, name).locator("li.bubble.mine").get_by_label("Message text").last).to_have_text(text, timeout=60_000)


def shows(page, name, texts):
    """The conversation with `name` shows exactly these texts, in order, all opened."""
    expect(thread(page, name).get_by_label("Message text")).to_have_text(texts, timeout=SLOW)


def day_ws_route(context, rewrite):
    """The push channel of every page of `context` through Playwright: each frame from the server passes
    `rewrite[0]` (a function of the parsed frame; identity until a step sets it)."""

    def handler(ws):
        upstream = ws.connect_to_server()

        def from_server(message):
            try:
                frame = json.loads(message)
            except (TypeError, ValueError):
                return ws.send(message)
            ws.send(json.dumps(rewrite[0](frame)))

        upstream.on_message(from_server)

    context.route_web_socket(re.compile(r".*/v1/push$"), handler)


def test_a_day_in_the_life_has_no_red_until_something_is_really_wrong(server, browser):
    rewrite = [lambda frame: frame]
    alice, bob = Page(browser, server), Page(browser, server)
    day_ws_route(alice.context, rewrite)
    laptop, stray, mallory = Cli(server), Cli(server), None
    try:
        a, b = alice.page, bob.page
        # 1. Morning: both sign up (one captcha each); bob accepts alice's first message; they talk.
        ready(alice, ALICE)
        ready(bob, BOB)
        calm(a, b)
        for page in (a, b):
            expect(page.get_by_test_id("push-state")).to_have_text("Messages arrive live.", timeout=SLOW)
            page.get_by_role("button", name="Messages", exact=True).click()
        compose(a, BOB, "Morning bob! Coffee at 9?")
        expect(steps(a)).to_contain_text("Sent.", timeout=60_000)
        expect(a).to_have_url(re.compile(rf"#/messages/{BOB}$"))
        open_conversation(b, ALICE, accept=True)
        shows(b, ALICE, ["Morning bob! Coffee at 9?"])
        calm(a, b)
        say(b, ALICE, "Morning! 9 works.")
        shows(a, BOB, ["Morning bob! Coffee at 9?", "Morning! 9 works."])
        say(a, BOB, "See you at the usual place.")
        say(b, ALICE, "I'll bring the keys.")
        day = ["Morning bob! Coffee at 9?", "Morning! 9 works.", "See you at the usual place.", "I'll bring the keys."]
        shows(a, BOB, day)
        shows(b, ALICE, day)
        calm(a, b)
        alice.shot("day-thread")

        # 2. alice reloads: still signed in, back in the conversation; a second tab reads it too.
        a.reload()
        expect(a).to_have_url(re.compile(rf"#/messages/{BOB}$"))
        shows(a, BOB, day)
        calm(a)
        tab = alice.context.new_page()
        tab.goto(server.url + f"/#/messages/{BOB}")
        shows(tab, BOB, day)
        calm(tab)
        tab.screenshot(path=os.path.join(support.ARTIFACTS, "day-second-tab-desktop.png"), full_page=True)
        # The first tab gave its live updates to the new one: said calmly, and taken back.
        banner = a.locator("#banner")
        expect(banner).to_contain_text("Live updates moved to another tab", timeout=60_000)
        calm(a)
        alice.shot("day-live-updates-elsewhere")
        tab.close()
        banner.get_by_role("button", name="Get live updates here").click()
        expect(banner).to_have_text("", timeout=60_000)
        calm(a)

        # 3. bob links a CLI device, approving it from his browser with the code it shows.
        laptop.device(BOB, name="laptop")
        code = cli_code(laptop)
        home(b)
        ask = b.get_by_role("region", name="Is this your new device?")
        item = ask.get_by_role("listitem", name="laptop")
        expect(item).to_be_visible(timeout=SLOW)
        expect(item.get_by_test_id("link-code")).to_have_text(code)
        calm(b)
        item.get_by_role("button", name="Yes, approve").click()
        expect(b.get_by_role("status").filter(has_text="Approved")).to_be_visible(timeout=60_000)
        calm(b)
        # alice writes on, with no warning; the laptop can read it.
        say(a, BOB, "Running 5 minutes late.")
        calm(a)
        texts = [laptop.run("read", e["id"]).stdout.strip() for e in laptop.inbox() if e["direction"] == "incoming"]
        assert "Running 5 minutes late." in texts, texts
        # The calm notice, in Contacts and in the conversation.
        contact = contact_item(a, BOB)
        expect(contact.get_by_role("note")).to_contain_text(
            re.compile(rf"{BOB} linked a new device, “laptop”, approved by “[^”]+”"), timeout=60_000
        )
        calm(a)
        alice.shot("day-contact-notice")
        a.goto(server.url + f"/#/messages/{BOB}")
        notice = a.locator(".thread-notices .notice")
        expect(notice).to_contain_text(f"{BOB} linked a new device", timeout=60_000)
        calm(a)
        alice.shot("day-thread-notice")
        day.append("Running 5 minutes late.")

        # 4. bob changes his message key; alice follows the rotation his pinned key signed.
        home(b)
        open_settings(b, "Security")
        b.get_by_role("button", name="Change message key").click()
        expect(b.get_by_role("status").first).to_contain_text("Message key changed", timeout=60_000)
        calm(b)
        say(a, BOB, "Ordered you a flat white.")
        calm(a)
        day.append("Ordered you a flat white.")
        # bob's browser opens it with the new key, and writes back for the first time since approving the
        # laptop: the laptop it approved before changing its own key is simply his (pinned when approved),
        # never "compare with yourself".
        b.goto(server.url + f"/#/messages/{ALICE}")
        shows(b, ALICE, day)
        calm(b)
        say(b, ALICE, "No rush, I'm on the laptop too.")
        calm(b)
        day.append("No rush, I'm on the laptop too.")
        shows(a, BOB, day)

        # 5. alice turns the key gate on (with her password); after a reload one unlock opens everything.
        home(a)
        switch = settings_gate(a)
        switch.click()
        a.get_by_role("button", name="Turn on with passkey").click()
        expect(a.get_by_test_id("gate-no-prf")).to_contain_text("lock the keys with your password", timeout=60_000)
        a.get_by_label("Account password").fill(PASSWORD)
        a.get_by_role("button", name="Turn on with password").click()
        expect(a.get_by_role("status").first).to_contain_text("Key gate on, with your password", timeout=SLOW)
        a.goto(server.url + f"/#/messages/{BOB}")
        shows(a, BOB, day)
        a.reload()
        expect(a.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
        calm(a)
        gate = prompt(a)
        gate.get_by_label("Password", exact=True).fill(PASSWORD)
        gate.get_by_role("button", name="Unlock with password").click()
        shows(a, BOB, day)
        calm(a)
        say(a, BOB, "Gate's on, all still here.")
        day.append("Gate's on, all still here.")
        calm(a)

        # 6. What must still warn. A device of bob's nobody approved writes: named as his new, unverified
        # device with "Verify", not refused and not as bob; sending to bob waits for Trust.
        stray.device(BOB, name="stray")
        stray.run("send", "--to", ALICE, "psst, it's bob on a new phone")
        unverified = thread(a, BOB).get_by_role("listitem").filter(has_text="psst, it's bob on a new phone")
        expect(unverified).to_contain_text(f"From {BOB}'s new, unverified device “stray”", timeout=SLOW)
        expect(unverified.get_by_role("button", name="Verify")).to_be_visible()
        expect(unverified.get_by_role("alert")).to_have_count(0)
        alice.shot("day-unverified-device")
        box = a.get_by_label("Message", exact=True)
        box.fill("Is that really you?")
        box.press("Enter")
        blocked = a.get_by_role("alert").filter(has_text="devices changed since you pinned them")
        expect(blocked).to_contain_text(f"{BOB}'s devices changed", timeout=60_000)
        expect(blocked).to_contain_text("added device stray")
        assert not [e for e in stray.inbox() if e["direction"] == "incoming"], "sent before Trust"
        alice.shot("day-blocked-until-trust")

        # A lying server: mallory's message relabelled as bob's. Its signature verifies under no key bob's
        # directory lists: refused.
        mallory = Cli(server).register(MALLORY)

        def relabel(frame):
            message = frame.get("message") if isinstance(frame, dict) else None
            if isinstance(message, dict) and frame.get("type") == "message" and message.get("from") == MALLORY:
                message["from"] = BOB
            return frame

        rewrite[0] = relabel
        mallory.run("send", "--to", ALICE, "bob here, send me your password")
        refused = thread(a, BOB).locator("li.bubble.theirs").filter(
            has=a.get_by_role("alert").filter(has_text="This message was refused")
        )
        expect(refused).to_have_count(1, timeout=SLOW)
        assert refused.get_by_label("Message text").count() == 0
        assert "send me your password" not in a.locator("body").inner_text()
        alice.shot("day-refused")
        rewrite[0] = lambda frame: frame

        # Verify, compare, Trust: then alice's message goes, to every device of bob's.
        unverified.get_by_role("button", name="Verify").click()
        compare = a.get_by_role("region", name="Compare the safety number")
        expect(compare.get_by_label("Safety number", exact=True)).to_have_text(re.compile(r"^(\d{5} ){11}\d{5}$"), timeout=60_000)
        compare.get_by_role("button", name="Trust").click()
        expect(unverified).not_to_contain_text("unverified", timeout=60_000)
        say(a, BOB, "Trusted your new phone.")
        texts = [stray.run("read", e["id"]).stdout.strip() for e in stray.inbox() if e["direction"] == "incoming"]
        assert texts == ["Trusted your new phone."], texts
        for p in (alice, bob):
            p.close()
    except Exception:
        for name, p in (("alice", alice), ("bob", bob)):
            if not p.page.is_closed():
                p.page.screenshot(path=os.path.join(support.ARTIFACTS, f"day-failed-{name}.png"), full_page=True)
        raise
    finally:
        for cli in (laptop, stray, mallory):
            if cli:
                cli.close()
