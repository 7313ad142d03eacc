"""The web client's everyday speed in headless Chromium (issue 35 §5), each figure beside a peer measured in
the same run:

    python3 Benchmarks/Web/app_speed.py BINARY [RUNS]     (scripts/bench-web-app.sh builds BINARY; RUNS >= 11)

`BINARY serve` runs on a throwaway SQLite file with the captcha always asked (`--captcha always`), the
per-address limits and the per-account send limit off (the seeding sends 1,000 messages in a minute).

1. Sign-in: the form submitted (a `submit` listener's performance.now()) to "Signed in as …" in the
   document, captcha included, for a returning browser (its device made at sign-up); signed out between
   runs. Goal: median <= 1.5 s. Peer: `countersign account login` of the same account, solving the same
   captcha in Swift, timed from the process's start to its exit, interleaved with the browser's runs.
   Beside it, the page's solveCaptcha() alone (the captcha's share).
2. Reload to usable: a signed-in tab on #/home reloaded, from navigation start to "Signed in as …" (or
   "Locked") in the document. Goal: median <= 300 ms. Peer: the same page reloaded signed out (every file
   the same, nothing to resume) to its sign-in form, interleaved. 2b: the same with the key gate on (turned
   on with the password), to "Locked" with its password prompt shown.
3. The message list with 1,000 stored messages (real envelopes: sent through the server by the page's own
   send(), received over the push channel and stored by the inbox): from the address change to the last
   DOM change of the screen (a MutationObserver, done after QUIET ms without one). Goal: median <= 100 ms.
   Peer: reading those 1,000 stored records from IndexedDB (messages.js's list()), the floor any list starts
   from.
4. Opening a 200-message conversation (100 each way with bob) from the list, measured the same way: all rows
   in the DOM, every text shown (none "Opening…"), and the texts of the rows in the window shown (those in
   it when the rows came and those in it at the end; the thread opens them first). Messages are opened in
   the background as they arrive, their copies kept (opened-copy.js, inbox.js), so even the first opening
   shows copies (any message without one is verified and opened then); it is reported alone, and the
   median is of the openings after it. Goal: median <= 200 ms, every text shown. Peer: opening those 200
   envelopes in a loop with envelope.js (verify and decrypt, the key given), the crypto floor of showing
   their texts without copies.

What a screen is made of is being reworked (issue 35 §3); the routes and the selectors that check a
render's size are at the top (LIST_*, THREAD_*), and the timing needs no selector: it ends at the screen's
last DOM change.
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

# ---- What the screens are (switch here when the screens change) ----
LIST_ROUTE = "#/messages"
# Rows of the message list: one per conversation (issue 35 §3), or one per message (the screen before it).
LIST_ROWS = ('#app [aria-label="Conversations"] > li, #app [aria-label="Message requests"] > li, '
             '#app [aria-label="Incoming"] > li, #app [aria-label="Outgoing"] > li')
THREAD_ROUTE = "#/messages/{contact}"
# The messages of an open conversation (the screen before §3 had none: its #/messages/ID opened one message).
THREAD_ROWS = '#app ol.thread > li'
# A message's text not shown yet ("Opening…"), within its row; and anywhere in the thread.
THREAD_PENDING_TEXT = '.message-text.muted'
THREAD_PENDING = f'{THREAD_ROWS} {THREAD_PENDING_TEXT}'
QUIET = 600  # ms without a DOM change that ends a render

PASSWORD = "correct horse battery"
SENDS = {("bob", "alice"): 100, ("alice", "bob"): 100, ("carol", "alice"): 400, ("dave", "alice"): 400}

SIGNED_IN = 'section[aria-label="Account"], section[aria-label="Locked"]'
SIGN_IN_FORM = 'form[aria-label="Sign in"] button[type=submit]'

# Installed before every document: when the first element matching a selector appeared, on the
# performance.now() timeline (0 = navigation start); and a form's submit time.
MARKS = """
window.__seen = {};
window.__watch = (name, selector) => {
  const check = () => {
    if (window.__seen[name] === undefined && document.querySelector(selector)) window.__seen[name] = performance.now();
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ["disabled", "hidden"] });
  check();
};
__watch("signedIn", %r);
__watch("signInForm", %r);
__watch("deviceReady", 'section[aria-label="Account"] button.primary:not([disabled])');
__watch("lockedPrompt", 'section[aria-label="Locked"] form[aria-label="Unlock with password"]:not([hidden])');
document.addEventListener("submit", () => { window.__submitted = performance.now(); }, true);
// One render: `go()` changes the address; resolves with the time of the last DOM change after it, once
// QUIET ms pass without one (and `rows` match at least `want` elements, when given).
// With `pending` (a text not shown yet, anywhere) and `pendingText` (the same within a row), also when each row's
// text was shown, and when those of the rows in the window were: the rows in it when all rows were first in the
// DOM, and those in it at the end.
window.__render = (go, rows, want, quiet, pending = null, pendingText = null) => new Promise((resolve) => {
  const t0 = performance.now();
  let last = t0, rowsAt = null, shownAt = null, timer = null;
  const count = () => (rows ? document.querySelectorAll(rows).length : 0);
  const shownTimes = new Map(), inView = new Set();
  const viewed = () => {
    for (const row of document.querySelectorAll(rows)) {
      const box = row.getBoundingClientRect();
      if (box.bottom > 0 && box.top < innerHeight) inView.add(row);
    }
  };
  const finish = () => {
    if (rows && count() < want && performance.now() - t0 < 15000) return (timer = setTimeout(finish, quiet));
    observer.disconnect();
    let viewMs = null;
    if (pending && rowsAt !== null) {
      viewed();
      const times = [...inView].map((row) => shownTimes.get(row));
      if (times.every((t) => t !== undefined)) viewMs = Math.max(...times) - t0;
    }
    resolve({ ms: last - t0, rowsMs: rowsAt === null ? null : rowsAt - t0,
              shownMs: shownAt === null ? null : shownAt - t0, viewMs, inView: inView.size, rows: count() });
  };
  const observer = new MutationObserver((records) => {
    last = performance.now();
    if (rowsAt === null && rows && count() >= want) {
      rowsAt = last;
      if (pending) viewed();
    }
    if (rowsAt !== null && pending) {
      for (const record of records) {
        const node = record.target.nodeType === 1 ? record.target : record.target.parentElement;
        const row = node?.closest?.(rows);
        if (row && !shownTimes.has(row) && !row.querySelector(pendingText)) shownTimes.set(row, last);
      }
    }
    if (rowsAt !== null && shownAt === null && pending && !document.querySelector(pending)) shownAt = last;
    clearTimeout(timer);
    timer = setTimeout(finish, quiet);
  });
  observer.observe(document.getElementById("app"), { childList: true, subtree: true, characterData: true });
  timer = setTimeout(finish, quiet);
  go();
});
""" % (SIGNED_IN, SIGN_IN_FORM)

# Sends `count` messages to `to` with the page's own send() (messages.js: pins checked, sealed to every
# device of both accounts, signed, posted), as the Messages screen does.
SEND = """async ({ to, count, from }) => {
  const { send } = await import("/js/messages.js");
  const { keystore } = await import("/js/keystore.js");
  const { session } = await import("/js/session.js");
  const record = await keystore.device(session.account.id);
  for (let i = 0; i < count; i++) {
    await send(record, { to: [to], text: `Message ${i + 1} of ${count} from ${from} to ${to}: see you at ${i % 24}:00.` });
  }
}"""

STORED = """async () => {
  const { list } = await import("/js/messages.js");
  return (await list()).length;
}"""

# Peer of (3): the stored records read as the list reads them.
READ_STORED = """async (runs) => {
  const { list } = await import("/js/messages.js");
  const times = [];
  for (let i = 0; i < runs; i++) { const t = performance.now(); await list(); times.push(performance.now() - t); }
  return times;
}"""

# Peer of (4): the conversation's envelopes opened one after the other with their signer's key given
# (envelope.js's open: parse, verify, decrypt), no pins, no DOM.
OPEN_ENVELOPES = """async ({ contact, runs }) => {
  const { list } = await import("/js/messages.js");
  const { open } = await import("/js/envelope.js");
  const { fromBase64url, sha256 } = await import("/js/bytes.js");
  const { spki } = await import("/js/device-keys.js");
  const { rawPoint } = await import("/js/hpke.js");
  const { keystore } = await import("/js/keystore.js");
  const { session } = await import("/js/session.js");
  const record = await keystore.device(session.account.id);
  const keyId = async (key) => (await sha256(await spki(key))).subarray(0, 16);
  const mine = { keyId: await keyId(record.encryption.publicKey), privateKey: record.encryption.privateKey,
                 point: await rawPoint(record.encryption.publicKey) };
  const ownSpki = await spki(record.signing.publicKey);
  const all = (await list()).filter((m) => (m.direction === "incoming" ? m.from === contact : m.to.includes(contact)));
  // The contact's signing key: from the directory (the one device it has).
  const response = await fetch(`/v1/users/${contact}/devices`, { headers: { Authorization: `Bearer ${session.token}` } });
  const devices = (await response.json()).devices;
  const theirSpki = fromBase64url(devices[0].signingKey);
  const times = [];
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    for (const m of all) {
      const opened = await open(fromBase64url(m.envelope), { ...mine, senderSpki: m.direction === "incoming" ? theirSpki : ownSpki });
      if (!opened.plaintext.length) throw new Error("empty");
    }
    times.push(performance.now() - t);
  }
  return { count: all.length, times };
}"""


def wait_for(page, expression, timeout=30_000, arg=None):
    """Polls `expression` (a function's source) in the page until it is truthy (Playwright's
    wait_for_function evaluates a string, which the page's CSP refuses)."""
    end = time.monotonic() + timeout / 1000
    while True:
        value = page.evaluate(expression, arg)
        if value:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout} ms for {expression}")
        time.sleep(0.02)


def median(values):
    return statistics.median(values)


def spread(values):
    return f"median {median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f}, n={len(values)})"


class Browsers:
    def __init__(self, browser, url):
        self.browser, self.url, self.contexts = browser, url, []

    def page(self):
        context = self.browser.new_context(viewport={"width": 1280, "height": 800})
        context.add_init_script(MARKS)
        self.contexts.append(context)
        page = context.new_page()
        page.goto(self.url + "/")
        wait_for(page, "() => window.__seen.signInForm !== undefined")
        return page


def sign_up(page, username):
    page.get_by_role("button", name="Sign up").click()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_label("Name", exact=True).fill(username.title())
    page.get_by_label("Last name").fill("Bench")
    page.get_by_role("button", name="Create account").click()
    device_ready(page)


def device_ready(page):
    page.get_by_role("status").filter(has_text="Device ready").wait_for(timeout=180_000)


def go_home(page):
    page.evaluate("location.hash = '#/home'")
    page.locator('section[aria-label="Account"]').wait_for()
    # The Messages button is enabled once the device is ready.
    wait_for(page, "() => !document.querySelector('section[aria-label=\"Account\"] button.primary')?.disabled")


def main():
    binary = sys.argv[1]
    runs = max(11, int(sys.argv[2]) if len(sys.argv) > 2 else 11)
    # `timeout` and Ctrl-C end through the finally blocks: the server and the browser stop with the script (the
    # server also exits with its parent, COUNTERSIGN_EXIT_WITH_PARENT).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = tempfile.mkdtemp(prefix="cs-bench-app-")
    env = dict(
        os.environ,
        COUNTERSIGN_EXIT_WITH_PARENT="1",
        COUNTERSIGN_LOG_LEVEL="warning",
        COUNTERSIGN_REGISTRATIONS_PER_ADDRESS="1000",
        COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS="1000",
        COUNTERSIGN_SENDS_PER_ACCOUNT="0",
    )
    server = subprocess.Popen(
        [binary, "serve", "--port", "0", "--captcha", "always", "--database", f"sqlite:{work}/bench.sqlite"],
        stdout=subprocess.PIPE, stderr=open(f"{work}/serve.log", "w"), env=env, start_new_session=True,
    )
    try:
        line = server.stdout.readline().decode()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            raise RuntimeError(f"the server printed no address: {line!r}")
        url = f"http://localhost:{match.group(1)}"   # a secure context by name
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            try:
                measure(Browsers(browser, url), url, binary, work, runs)
            finally:
                browser.close()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        subprocess.run(["rm", "-rf", work])


def cli_login(binary, url, work, username):
    config = f"{work}/cli-{username}"
    with open(f"{work}/password", "w") as f:
        f.write(PASSWORD + "\n")
    env = dict(os.environ, COUNTERSIGN_CONFIG_DIR=config, COUNTERSIGN_SERVER=url)
    t = time.perf_counter()
    subprocess.run([binary, "account", "login", username, "--password-file", f"{work}/password"],
                   env=env, check=True, capture_output=True, timeout=120, start_new_session=True)
    return (time.perf_counter() - t) * 1000


def measure(browsers, url, binary, work, runs):
    say = lambda text: print(text, file=sys.stderr, flush=True)

    class Out:
        # Each figure printed as soon as it is measured (a later step may fail).
        def append(self, line):
            print(line, flush=True)
    out = Out()

    # ---- 1. Sign-in, form submitted to signed in, captcha included ----
    say("1. sign-in ...")
    erin = browsers.page()
    sign_up(erin, "erin")
    browser_ms, cli_ms = [], []
    for _ in range(runs):
        erin.evaluate("delete window.__seen.signInForm")
        erin.get_by_role("button", name="Sign out").click()
        wait_for(erin, "() => window.__seen.signInForm !== undefined")
        erin.evaluate("delete window.__seen.signedIn; delete window.__submitted")
        erin.get_by_label("Username").fill("erin")
        erin.get_by_label("Password").fill(PASSWORD)
        erin.get_by_role("button", name="Sign in", exact=True).click()
        wait_for(erin, "() => window.__seen.signedIn !== undefined", timeout=180_000)
        browser_ms.append(erin.evaluate("window.__seen.signedIn - window.__submitted"))
        device_ready(erin)
        cli_ms.append(cli_login(binary, url, work, "erin"))
    solve = erin.evaluate("""async (runs) => {
        const { solveCaptcha } = await import('/js/captcha.js');
        const times = [];
        for (let i = 0; i < runs; i++) { const t = performance.now(); await solveCaptcha(); times.push(performance.now() - t); }
        return times;
    }""", runs)
    out.append(f"1. sign-in, form submitted to signed in (captcha included): browser {spread(browser_ms)};"
               f" peer `countersign account login` {spread(cli_ms)}; ratio {median(browser_ms) / median(cli_ms):.2f}x;"
               f" the page's captcha alone {spread(solve)}   goal <= 1,500 ms: {'met' if median(browser_ms) <= 1500 else 'NOT met'}")

    # ---- 2. Reload to usable ----
    say("2. reload ...")
    signed_out = browsers.page()   # the same files, nothing to resume
    reload_ms, peer_ms, ready_ms = [], [], []
    go_home(erin)
    for _ in range(runs):
        erin.reload()
        wait_for(erin, "() => window.__seen.signedIn !== undefined")
        reload_ms.append(erin.evaluate("window.__seen.signedIn"))
        ready_ms.append(wait_for(erin, "() => window.__seen.deviceReady"))
        signed_out.reload()
        wait_for(signed_out, "() => window.__seen.signInForm !== undefined")
        peer_ms.append(signed_out.evaluate("window.__seen.signInForm"))
    out.append(f"2. reload to usable (signed in, keys unlocked; no key gate): {spread(reload_ms)}; peer: the same page"
               f" reloaded signed out, to its sign-in form {spread(peer_ms)}; ratio {median(reload_ms) / median(peer_ms):.2f}x;"
               f" device ready (Messages enabled) at a median {median(ready_ms):.0f} ms"
               f"   goal <= 300 ms: {'met' if median(reload_ms) <= 300 else 'NOT met'}")

    # ---- 2b. Reload to usable with the key gate on: "Locked", its password prompt ready ----
    say("2b. reload, key gate on ...")
    gina = browsers.page()
    sign_up(gina, "gina")
    gina.evaluate("location.hash = '#/settings/key-gate'")
    gina.get_by_role("switch", name="Biometric Enable").click()
    gina.get_by_role("button", name="Turn on with passkey").click()
    gina.get_by_test_id("gate-no-prf").filter(has_text="lock the keys with your password").wait_for(timeout=60_000)
    gina.get_by_label("Account password").fill(PASSWORD)
    gina.get_by_role("button", name="Turn on with password").click()
    gina.get_by_role("status").filter(has_text="Key gate on, with your password").wait_for(timeout=180_000)
    gina.wait_for_timeout(1_000)   # the binding moved to the device's key
    locked_ms, peer_ms = [], []
    for _ in range(runs):
        gina.reload()
        locked_ms.append(wait_for(gina, "() => window.__seen.lockedPrompt"))
        signed_out.reload()
        wait_for(signed_out, "() => window.__seen.signInForm !== undefined")
        peer_ms.append(signed_out.evaluate("window.__seen.signInForm"))
    out.append(f"2b. reload to usable with the key gate on (\"Locked\", its password prompt shown): {spread(locked_ms)};"
               f" peer: the signed-out reload {spread(peer_ms)}; ratio {median(locked_ms) / median(peer_ms):.2f}x"
               f"   goal <= 300 ms: {'met' if median(locked_ms) <= 300 else 'NOT met'}")
    gina.context.close()

    # ---- Seeding: 1,000 real messages in alice's browser ----
    say("seeding 1,000 messages ...")
    pages = {}
    for name in ("alice", "bob", "carol", "dave"):
        pages[name] = browsers.page()
        sign_up(pages[name], name)
    t = time.perf_counter()
    for (sender, to), count in SENDS.items():
        pages[sender].evaluate(SEND, {"to": to, "count": count, "from": sender})
    sent_s = time.perf_counter() - t
    alice = pages["alice"]
    total = sum(count for (s, to), count in SENDS.items() if "alice" in (s, to))
    wait_for(alice, f"async () => (await (await import('/js/messages.js')).list()).length >= {total}", timeout=600_000)
    say(f"   sent in {sent_s:.1f} s; alice's browser holds {alice.evaluate(STORED)} messages")
    for name in ("bob", "carol", "dave"):
        pages[name].context.close()
    go_home(alice)

    # ---- 3. The message list with 1,000 stored messages ----
    say("3. message list ...")
    list_ms, rows = [], 0
    for _ in range(runs):
        go_home(alice)
        result = alice.evaluate("([route, rows, quiet]) => __render(() => { location.hash = route; }, rows, 1, quiet)",
                                [LIST_ROUTE, LIST_ROWS, QUIET])
        list_ms.append(result["ms"])
        rows = result["rows"]
    read = alice.evaluate(READ_STORED, runs)
    out.append(f"3. message list, {total:,} stored messages ({rows:,} rows rendered): {spread(list_ms)}; peer: reading the"
               f" {total:,} stored records (list()) {spread(read)}; ratio {median(list_ms) / median(read):.2f}x"
               f"   goal <= 100 ms: {'met' if median(list_ms) <= 100 else 'NOT met'}")

    # ---- 4. Opening a 200-message conversation ----
    say("4. conversation ...")
    thread_ms, rows_ms, shown_ms, view_ms, in_view, rows = [], [], [], [], [], 0
    thread = THREAD_ROUTE.format(contact="bob")
    for _ in range(runs):
        alice.evaluate(f"location.hash = {LIST_ROUTE!r}")
        alice.evaluate("([rows, quiet]) => __render(() => {}, rows, 1, quiet)", [LIST_ROWS, QUIET])
        result = alice.evaluate(
            "([route, rows, quiet, pending, text]) =>"
            " __render(() => { location.hash = route; }, rows, 200, quiet, pending, text)",
            [thread, THREAD_ROWS, QUIET, THREAD_PENDING, THREAD_PENDING_TEXT])
        thread_ms.append(result["ms"])
        rows = result["rows"]
        if result["rowsMs"] is not None:
            rows_ms.append(result["rowsMs"])
        if result["shownMs"] is not None:
            shown_ms.append(result["shownMs"])
        if result["viewMs"] is not None:
            view_ms.append(result["viewMs"])
            in_view.append(result["inView"])
        if rows < 200:
            break   # no thread view: each try would wait 15 s for rows that never come
    opened = alice.evaluate(OPEN_ENVELOPES, {"contact": "bob", "runs": max(3, runs // 3)})
    # The figure held to the goal: every text shown (opened), else the last DOM change. Beside it, the texts of
    # the rows in the window (those there when the rows came, and those there at the end) all shown. The first
    # opening verifies and opens every envelope; later ones decrypt the opened copies it kept (opened-copy.js):
    # the first is reported on its own, and the median is of the others.
    main_ms = shown_ms if len(shown_ms) == len(thread_ms) else thread_ms
    first_ms = main_ms[0] if main_ms else None
    if len(main_ms) > 1:
        main_ms, thread_ms = main_ms[1:], thread_ms[1:]
        rows_ms, view_ms, shown_ms = rows_ms[1:], view_ms[1:], shown_ms[1:]
    status = "met" if median(main_ms) <= 200 else "NOT met"
    if view_ms and len(view_ms) == len(thread_ms):
        status += f"; in the window: {'met' if median(view_ms) <= 200 else 'NOT met'}"
    if rows < 200:
        status = f"not measured: {thread} showed {rows} conversation rows (no thread view matched THREAD_ROWS)"
    parts = []
    if first_ms is not None:
        parts.append(f"first opening {first_ms:.0f} ms (copies kept as the messages arrived); then")
    if rows_ms:
        parts.append(f"all {rows} rows in the DOM (texts still opening) {spread(rows_ms)}")
    if view_ms:
        parts.append(f"the texts of the {min(in_view)}-{max(in_view)} rows in the window shown {spread(view_ms)}")
    if shown_ms:
        parts.append(f"every text shown {spread(shown_ms)}")
    parts.append(f"the screen's last DOM change {spread(thread_ms)}")
    peer = median(opened['times'])
    view_ratio = f" (in the window {median(view_ms) / peer:.2f}x)" if view_ms else ""
    out.append(f"4. opening the conversation with bob, {opened['count']} messages: " + "; ".join(parts) +
               f"; peer: its {opened['count']} envelopes opened in a loop (envelope.js) {spread(opened['times'])};"
               f" ratio {median(main_ms) / peer:.2f}x{view_ratio}   goal <= 200 ms, every text shown: {status}")

if __name__ == "__main__":
    main()
