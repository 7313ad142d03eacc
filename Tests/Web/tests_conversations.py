"""Messages as conversations (issue 35 §3): the list and a thread, Enter and Shift+Enter, addresses that
survive a reload, each message's Details with what the server holds, delivery from the acknowledgements,
requests from strangers (Accept, Block, Unblock), and the key gate turned on keeping every older message."""
import re

from support import SLOW, Page, expect, page_function
from tests_messages import Cli, compose, open_conversation, ready, steps


def thread_of(page, title):
    return page.get_by_role("list", name=f"Messages with {title}")


def test_conversations_a_thread_enter_sends_and_the_address_survives_a_reload(server, browser):
    alice, bob = Page(browser, server), Page(browser, server)
    ready(alice, "cvalice")
    ready(bob, "cvbob")
    for p in (alice, bob):
        expect(p.page.get_by_test_id("push-state")).to_have_text("Messages arrive live.", timeout=30_000)
        p.page.get_by_role("button", name="Messages", exact=True).click()
    # A first message from the list's "New message" opens its conversation, with the steps.
    compose(alice.page, "cvbob", "Hello <b>bob</b>")
    expect(steps(alice.page)).to_contain_text("Sent.", timeout=30_000)
    expect(alice.page).to_have_url(re.compile(r"#/messages/cvbob$"))
    mine = thread_of(alice.page, "cvbob").locator("li.bubble").filter(has_text="Hello <b>bob</b>")
    expect(mine).to_have_class(re.compile(r"\bmine\b"), timeout=30_000)
    # alice waits on the list (a message shown in an open conversation is read at once).
    alice.page.get_by_role("button", name="All conversations").click()
    expect(alice.page).to_have_url(re.compile(r"#/messages$"))

    # bob accepts the request and replies: Enter sends, Shift+Enter adds a line.
    thread = open_conversation(bob.page, "cvalice", accept=True)
    expect(thread.get_by_label("Message text").last).to_have_text("Hello <b>bob</b>", timeout=30_000)
    assert thread.locator("b").count() == 0, "markup in a message stays text"
    theirs = thread.locator("li.bubble").first
    expect(theirs).to_have_class(re.compile(r"\btheirs\b"))
    text = bob.page.get_by_label("Message", exact=True)
    text.fill("first line")
    text.press("Shift+Enter")
    text.type("second line")
    assert text.input_value() == "first line\nsecond line"
    text.press("Enter")
    expect(steps(bob.page)).to_contain_text("Sent.", timeout=30_000)
    expect(text).to_have_value("")
    expect(thread.get_by_label("Message text").last).to_have_text("first line\nsecond line", timeout=30_000)
    # Yours on one side, theirs on the other.
    boxes = [item.bounding_box() for item in (thread.locator("li.bubble").first, thread.locator("li.bubble").last)]
    assert boxes[1]["x"] + boxes[1]["width"] > boxes[0]["x"] + boxes[0]["width"] + 40, boxes

    # alice's list: the conversation, its preview and unread count; opening it reads it.
    row = alice.page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile("^cvbob"))
    expect(row).to_contain_text("first line", timeout=30_000)
    expect(row.get_by_label("1 unread")).to_have_text("1")
    alice.shot("conversations-list")
    row.click()
    expect(thread_of(alice.page, "cvbob").get_by_label("Message text").last).to_have_text("first line\nsecond line", timeout=30_000)
    alice.shot("conversations-thread")
    # Reload, Back and Forward return to the thread and the list.
    alice.page.reload()
    expect(alice.page).to_have_url(re.compile(r"#/messages/cvbob$"))
    expect(thread_of(alice.page, "cvbob").get_by_label("Message text").last).to_have_text("first line\nsecond line", timeout=SLOW)
    alice.page.go_back()
    expect(alice.page).to_have_url(re.compile(r"#/messages$"))
    expect(alice.page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile("^cvbob"))).not_to_contain_text("unread")
    alice.page.go_forward()
    expect(thread_of(alice.page, "cvbob").get_by_label("Message text").first).to_have_text("Hello <b>bob</b>", timeout=30_000)

    # A group conversation: keyed by everyone else, from the list's "To".
    carol = Cli(server).register("cvcarol")
    try:
        compose(alice.page, "cvcarol, cvbob", "to you both")
        expect(alice.page).to_have_url(re.compile(r"#/messages/cvbob%2Ccvcarol$"), timeout=30_000)
        expect(alice.page.get_by_role("heading", name="cvbob, cvcarol")).to_be_visible()
        expect(thread_of(alice.page, "cvbob, cvcarol").get_by_label("Message text")).to_have_text("to you both", timeout=30_000)
        bob.page.get_by_role("button", name="All conversations").click()
        group = bob.page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile("^cvalice, cvcarol"))
        expect(group).to_contain_text("to you both", timeout=30_000)
    finally:
        carol.close()
    alice.close()
    bob.close()


def test_details_tell_the_steps_and_everything_the_server_holds_and_delivery(server, browser):
    alice, bob = Page(browser, server), Page(browser, server)
    ready(alice, "dtalice")
    ready(bob, "dtbob")
    alice.page.get_by_role("button", name="Messages", exact=True).click()
    compose(alice.page, "dtbob", "what does the server know")
    expect(steps(alice.page)).to_contain_text("Sent.", timeout=30_000)
    thread = thread_of(alice.page, "dtbob")
    mine = thread.locator("li.bubble").last
    expect(mine.get_by_label("Message text")).to_have_text("what does the server know", timeout=30_000)
    # bob has not fetched it (not signed in here): sent, not delivered. bob's browser is signed out? It is
    # signed in but its push channel stores at once, so look before bob's page could: at least it says so
    # in words of the acknowledgements.
    delivery = mine.get_by_test_id("delivery")
    expect(delivery).to_have_text(re.compile(r"^(Sent, not yet delivered\.|Delivered to 1 of 1 device\.)$"), timeout=30_000)
    # The recipient's browser stored and acknowledged it: delivered, with no reload here.
    expect(bob.page.get_by_test_id("push-state")).to_have_text("Messages arrive live.", timeout=30_000)
    expect(delivery).to_have_text("Delivered to 1 of 1 device.", timeout=30_000)
    # Details: the steps as they happened, and the metadata the server holds beside them.
    mine.get_by_text("Details", exact=True).click()
    done = mine.get_by_role("list", name="Steps as they happened")
    for words in ("String encrypted", "String signed", "Sent.", "Signature verified", "String decrypted"):
        expect(done).to_contain_text(words)
    held = mine.get_by_label("Metadata the server holds")
    expect(held).to_contain_text("Sender")
    expect(held).to_contain_text("dtalice")
    expect(held).to_contain_text("Recipients")
    expect(held).to_contain_text("dtbob")
    expect(held).to_contain_text("Sent (accepted by the server)")
    expect(held).to_contain_text("Available to the recipients from")
    expect(held).to_contain_text(re.compile(r"Size\s*[\d,]+ bytes"))
    expect(held).to_contain_text(re.compile(r"Devices sealed to\s*2 keys"))
    expect(held).to_contain_text(re.compile(r"Stored by recipient devices\s*1 of 1"))
    server_view = mine.get_by_role("region", name="What the server sees")
    expect(server_view).to_contain_text("network address")
    server_view.get_by_text("The envelope's bytes").click()
    seen = server_view.inner_text()
    assert "Ciphertext (hex)" in seen and "what does the server know" not in seen, seen
    alice.shot("conversations-details")
    # The recipient's Details: the same truth from its side.
    bob.page.get_by_role("button", name="Messages", exact=True).click()
    thread = open_conversation(bob.page, "dtalice", accept=True)
    theirs = thread.locator("li.bubble").last
    expect(theirs.get_by_label("Message text")).to_have_text("what does the server know", timeout=30_000)
    theirs.get_by_text("Details", exact=True).click()
    expect(theirs.get_by_role("list", name="Steps as they happened")).to_contain_text("Signature verified")
    expect(theirs.get_by_label("Metadata the server holds")).to_contain_text("dtalice")
    # Opened again after a reload: from the copy the first opening kept (ciphertext only in storage), and the
    # Details say so.
    bob.page.reload()
    thread = thread_of(bob.page, "dtalice")
    theirs = thread.locator("li.bubble").last
    expect(theirs.get_by_label("Message text")).to_have_text("what does the server know", timeout=30_000)
    theirs.get_by_text("Details", exact=True).click()
    again = theirs.get_by_role("list", name="Steps as they happened")
    expect(again).to_contain_text(re.compile(r"Signature verified \(.+, when first opened here\)"))
    expect(again).to_contain_text("String decrypted from this browser's opened copy")
    kept = bob.page.evaluate("""async () => {
      const { list } = await import("/js/messages.js");
      return JSON.stringify(await list());
    }""")
    assert '"opened":{"v":1' in kept and "what does the server know" not in kept, kept[:400]
    alice.close()
    bob.close()


def test_a_strangers_first_message_is_a_request_accept_and_block_work(server, browser):
    stranger = Cli(server).register("rqeve")
    friend = Cli(server).register("rqfrank")
    try:
        p = Page(browser, server)
        page = p.page
        ready(p, "rqgina")
        page.get_by_role("button", name="Messages", exact=True).click()
        # Written to first: frank is a conversation, whatever he sends.
        compose(page, "rqfrank", "hi frank")
        expect(steps(page)).to_contain_text("Sent.", timeout=30_000)
        page.get_by_role("button", name="All conversations").click()
        friend.run("send", "--to", "rqgina", "hi gina")
        stranger.run("send", "--to", "rqgina", "buy my coins")
        requests = page.get_by_role("region", name="Requests")
        expect(requests.get_by_role("link", name=re.compile("^rqeve"))).to_be_visible(timeout=30_000)
        expect(requests).to_contain_text("buy my coins")
        conversations = page.get_by_role("list", name="Conversations")
        expect(conversations.get_by_role("link", name=re.compile("^rqfrank"))).to_contain_text("hi gina", timeout=30_000)
        expect(conversations.get_by_role("link", name=re.compile("^rqeve"))).to_have_count(0)
        p.shot("conversations-requests")
        # Block: hidden here, and the page says how to undo it.
        requests.get_by_role("button", name="Block rqeve").click()
        said = page.get_by_role("status").filter(has_text="Blocked rqeve")
        expect(said).to_contain_text("press Unblock")
        expect(said).to_be_focused()
        expect(requests).to_be_hidden()
        stranger.run("send", "--to", "rqgina", "still here")
        page.wait_for_timeout(2_000)
        expect(page.get_by_role("link", name=re.compile("^rqeve"))).to_have_count(0)
        page.reload()
        expect(page.get_by_role("heading", name="Messages", exact=True)).to_be_visible(timeout=SLOW)
        expect(page.get_by_role("link", name=re.compile("^rqeve"))).to_have_count(0)
        page.get_by_text("Blocked (1)").click()
        expect(page.get_by_role("list", name="Blocked senders")).to_contain_text("rqeve (2 hidden messages)")
        # Unblock: a request again; Accept: a conversation.
        page.get_by_role("button", name="Unblock rqeve").click()
        requests = page.get_by_role("region", name="Requests")
        expect(requests.get_by_role("link", name=re.compile("^rqeve"))).to_contain_text("still here", timeout=30_000)
        requests.get_by_role("button", name="Accept rqeve").click()
        expect(page.get_by_role("status").filter(has_text="Accepted rqeve")).to_be_visible()
        expect(conversations.get_by_role("link", name=re.compile("^rqeve"))).to_be_visible()
        expect(requests).to_be_hidden()
        p.close()
    finally:
        stranger.close()
        friend.close()


UNLOCKED = "async () => (await import('/js/gate-keys.js')).isUnlocked((await import('/js/session.js')).session.account.id)"


def test_turning_the_key_gate_on_keeps_every_older_message_opening(server, browser):
    """Before the old keys are deleted, every stored message that opened is re-sealed here to the new keys
    (with what was verified), so it still opens after the gate is on, and after a reload and unlock."""
    from tests_gate import prompt, settings_gate

    cli = Cli(server).register("kgmike")
    try:
        p = Page(browser, server)
        page = p.page
        ready(p, "kglena")
        page.get_by_role("button", name="Messages", exact=True).click()
        compose(page, "kgmike", "mine, before the gate")
        expect(steps(page)).to_contain_text("Sent.", timeout=30_000)
        cli.run("send", "--to", "kglena", "theirs, before the gate")
        thread = thread_of(page, "kgmike")
        expect(thread.get_by_label("Message text")).to_have_count(2, timeout=30_000)
        page.get_by_role("button", name="All conversations").click()
        page.get_by_role("button", name="Back").click()
        # On, with the password.
        switch = settings_gate(page)
        switch.click()
        # The warning says what happens to the messages kept here: nothing that opened stops opening.
        expect(page.get_by_text("re-sealed to the new keys first, so they still open")).to_be_visible()
        page.get_by_role("button", name="Turn on with passkey").click()
        expect(page.get_by_test_id("gate-no-prf")).to_contain_text("lock the keys with your password", timeout=60_000)
        page.get_by_label("Account password").fill("correct horse battery")
        page.get_by_role("button", name="Turn on with password").click()
        expect(page.get_by_role("status").first).to_contain_text("Key gate on, with your password", timeout=SLOW)
        page.get_by_role("button", name="Back").click()
        page.get_by_role("button", name="Messages", exact=True).click()
        link = page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile("^kgmike"))
        expect(link).to_contain_text("theirs, before the gate", timeout=30_000)
        link.click()
        thread = thread_of(page, "kgmike")
        expect(thread.get_by_label("Message text")).to_have_text(["mine, before the gate", "theirs, before the gate"], timeout=30_000)
        expect(thread.get_by_role("alert")).to_have_count(0)
        theirs = thread.locator("li.bubble").last
        theirs.get_by_text("Details", exact=True).click()
        expect(theirs.get_by_role("list", name="Steps as they happened")).to_contain_text("before this browser's keys changed")
        expect(theirs).to_contain_text(re.compile(r"Verified .+: signed by kgmike's key [0-9a-f:]+ at .+ re-sealed it to its new keys"))
        # A message sealed to the new keys opens as ever; after a reload (locked), one unlock opens them all.
        cli.run("send", "--to", "kglena", "after the gate")
        expect(thread.get_by_label("Message text").last).to_have_text("after the gate", timeout=30_000)
        # Reloaded at the conversation's address: "Locked", one prompt, then the thread itself.
        page.reload()
        expect(page.get_by_role("heading", name="Locked", exact=True)).to_be_visible(timeout=SLOW)
        gate = prompt(page)
        expect(gate).to_be_visible(timeout=SLOW)
        gate.get_by_label("Password", exact=True).fill("correct horse battery")
        gate.get_by_role("button", name="Unlock with password").click()
        expect(thread_of(page, "kgmike").get_by_label("Message text")).to_have_text(
            ["mine, before the gate", "theirs, before the gate", "after the gate"], timeout=SLOW
        )
        # Stored: the server's envelopes as they were, and each copy only sealed.
        stored = page.evaluate(page_function("storage.js", "storedMessages"))
        assert "before the gate" not in stored and '"local"' in stored, stored[:300]
        p.close()
    finally:
        cli.close()


def test_a_message_from_a_contacts_new_unapproved_device_says_so_with_verify(server, browser):
    """Not refused, and not shown as the contact's either: "From uvgwen's new, unverified device" with
    "Verify", whose safety number and "Trust" make the device one of hers here."""
    first = Cli(server).register("uvgwen")
    second = Cli(server)
    try:
        p = Page(browser, server)
        page = p.page
        ready(p, "uvhal")
        page.get_by_role("button", name="Messages", exact=True).click()
        compose(page, "uvgwen", "hello gwen")
        expect(steps(page)).to_contain_text("Sent.", timeout=30_000)
        second.device("uvgwen", name="second")
        second.run("send", "--to", "uvhal", "from my new laptop")
        thread = thread_of(page, "uvgwen")
        theirs = thread.locator("li.bubble.theirs")
        expect(theirs.get_by_label("Message text")).to_have_text("from my new laptop", timeout=30_000)
        expect(theirs).to_contain_text("From uvgwen's new, unverified device “second”.")
        expect(theirs.get_by_role("alert")).to_have_count(0)
        # Read out as the device's too, and so is the list's preview, never as uvgwen's own.
        expect(theirs).to_have_attribute("aria-label", re.compile(r"^From uvgwen's new, unverified device “second”, "))
        p.shot("conversations-unverified-device")
        page.get_by_role("button", name="All conversations").click()
        row = page.get_by_role("list", name="Conversations").get_by_role("link", name=re.compile("^uvgwen"))
        expect(row).to_contain_text("From uvgwen's new, unverified device “second”: from my new laptop", timeout=30_000)
        row.click()
        theirs.get_by_role("button", name="Verify").click()
        expect(page.get_by_label("Safety number", exact=True)).to_have_text(re.compile(r"^(\d{5} ){11}\d{5}$"), timeout=30_000)
        page.get_by_role("button", name="Trust").click()
        expect(thread_of(page, "uvgwen").locator("li.bubble.theirs").get_by_label("Message text")).to_have_text(
            "from my new laptop", timeout=30_000
        )
        expect(thread_of(page, "uvgwen").locator("li.bubble.theirs")).not_to_contain_text("unverified")
        p.close()
    finally:
        first.close()
        second.close()
