"""Notifications with nothing open (docs/PROTOCOL.md §2.2): the web client is an installable app whose service
worker shows what a Web Push says. The server's pushes go to Tests/interop/fake_push_service.py, which checks
each VAPID token with PyJWT and opens each body with http_ece, using a subscription whose keys Python made
(Chromium here has no vendor push service: the page's PushManager is given that subscription). What the fake
service decrypted is then delivered to the worker through CDP (`ServiceWorker.deliverPushMessage`) with every
tab of the app closed. No CDP command clicks a notification: a click is the worker's `notificationclick`
dispatched in the worker (through Playwright), and a window it opens is opened by the test at the URL the
worker asked for (a synthetic click has no user activation for `clients.openWindow`)."""
import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import support
from support import SLOW, Page, api_sign_in, expect, fetch, page_function, page_script, solve_captcha
from tests_approvals import Login
from tests_messages import Cli, compose, ready

INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop")


class FakePushService:
    """Tests/interop/fake_push_service.py in its own process group, stopped by close() whatever happened."""

    def __init__(self):
        self.process = subprocess.Popen(
            ["python3", os.path.join(INTEROP, "fake_push_service.py")], stdout=subprocess.PIPE, start_new_session=True
        )
        self.port = int(self.process.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def subscription(self, name):
        s = self.get(f"/subscription?name={name}")
        return {"endpoint": s["endpoint"], "keys": {"p256dh": s["p256dh"], "auth": s["auth"]}}

    def wait_for(self, done, timeout=60):
        deadline = time.time() + timeout
        while True:
            log = self.get("/log")
            if done(log):
                return log
            assert time.time() < deadline, f"the push service did not get what was expected: {log}"
            time.sleep(0.2)

    def close(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()




def with_subscription(subscription):
    """The init script that gives the page's PushManager the fake service's subscription."""
    return f"window.__pushSubscription = {json.dumps(subscription)};\n" + page_script("push.js", "fakePushSubscription")


class Worker:
    """The app's service worker, driven through CDP from a blank page (no page of the app stays open)."""

    def __init__(self, context, server):
        self.context, self.server = context, server
        self.blank = context.new_page()
        self.cdp = context.new_cdp_session(self.blank)
        registrations = []
        self.cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"]))
        self.cdp.send("ServiceWorker.enable")
        for _ in range(100):
            ours = [r for r in registrations if r["scopeURL"] == server.url + "/" and not r["isDeleted"]]
            if ours:
                break
            self.blank.wait_for_timeout(100)
        assert ours, registrations
        self.registration = ours[-1]["registrationId"]

    def worker(self):
        workers = [w for w in self.context.service_workers if w.url == self.server.url + "/sw.js"]
        assert workers, [w.url for w in self.context.service_workers]
        return workers[0]

    def deliver(self, payload):
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self.cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": self.server.url + "/", "registrationId": self.registration, "data": data},
        )

    def shown(self, settle_ms=1500):
        """The notifications the worker shows, after it had `settle_ms` to handle what was delivered."""
        self.blank.wait_for_timeout(settle_ms)
        return self.worker().evaluate(
            "registration.getNotifications().then(ns => ns.map(n => ({title: n.title, body: n.body, tag: n.tag, "
            "actions: n.actions.map(a => a.title), data: n.data})))"
        )

    def click(self, tag, action=""):
        """Dispatches `notificationclick` on the notification `tag` in the worker and waits for what it does;
        returns the URLs it asked `clients.openWindow` for."""
        return self.worker().evaluate(
            """async ([tag, action]) => {
              const opened = [];
              self.clients.openWindow = async (url) => (opened.push(url), null);
              const [notification] = await registration.getNotifications({ tag });
              if (!notification) return ["no notification " + tag];
              const event = new NotificationEvent("notificationclick", { notification, action });
              const waiting = [];
              event.waitUntil = (promise) => waiting.push(promise);
              self.dispatchEvent(event);
              await Promise.all(waiting);
              return opened;
            }""",
            [tag, action],
        )

    def close(self):
        self.blank.close()


def close_app_pages(context, server):
    for page in list(context.pages):
        if page.url.startswith(server.url):
            page.close()


def test_notifications_the_app_is_installable_with_a_manifest_and_a_service_worker(server, browser):
    status, body, headers = fetch(server, "/manifest.webmanifest")
    assert status == 200 and headers["Content-Type"] == "application/manifest+json", (status, headers)
    manifest = json.loads(body)
    assert manifest["name"] == "Countersign" and manifest["display"] == "standalone", manifest
    assert manifest["start_url"] == "/#/home" and manifest["scope"] == "/", manifest
    for icon in manifest["icons"]:
        status, png, headers = fetch(server, icon["src"])
        assert status == 200 and headers["Content-Type"] == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n", icon
        assert headers["Content-Security-Policy"] == support.EXPECTED_CSP
    status, _, headers = fetch(server, "/sw.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript"), (status, headers)
    assert headers["Content-Security-Policy"] == support.EXPECTED_CSP
    # Chromium's own installability check, in a profile of its own (an incognito context never installs).
    profile = os.path.join(support.ARTIFACTS, "install-profile")
    context = browser.browser_type.launch_persistent_context(
        profile, executable_path="/usr/bin/chromium", args=["--no-sandbox"], viewport=support.PHONE
    )
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(server.url + "/")
        assert page.evaluate("navigator.serviceWorker.ready.then(r => r.scope)") == server.url + "/"
        cdp = context.new_cdp_session(page)
        errors = []
        for _ in range(50):
            errors = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
            if not errors:
                break
            page.wait_for_timeout(200)
        assert errors == [], errors
        manifest_seen = cdp.send("Page.getAppManifest")
        assert manifest_seen["url"].startswith(server.url + "/manifest.webmanifest"), manifest_seen
        page.screenshot(path=os.path.join(support.ARTIFACTS, "notifications-installable-phone.png"), full_page=True)
    finally:
        context.close()


def test_notifications_reach_a_closed_app_and_deny_from_the_notification(_server, browser):
    push = FakePushService()
    server = support.Server(
        COUNTERSIGN_PUSH_ALLOWED_HOSTS=f"127.0.0.1:{push.port}", COUNTERSIGN_VAPID_SUBJECT="mailto:ops@example.com"
    )
    cli, bob = Cli(server), Cli(server)
    logins = []
    subscription = push.subscription("nia-browser")
    p = Page(browser, server)
    page = p.page
    try:
        p.context.grant_permissions(["notifications"], origin=server.url)
        p.context.add_init_script(with_subscription(subscription))
        page.reload()
        ready(p, "nia")
        token = api_sign_in(server, "nia")
        # Paired as an authenticator (a recovery code first: it may not be the only second factor).
        assert server.api("POST", "/v1/me/mfa/recovery-codes", None, token)[0] == 201
        support.open_settings(page, "Two-factor")
        page.get_by_role("button", name="Pair this browser as an authenticator").click()
        expect(page.get_by_text(re.compile(r"^Paired\. Sign-in requests for nia"))).to_be_visible(timeout=30_000)

        # Settings → Notifications: off, then on (this browser's subscription for both of its devices).
        support.settings_section(page, "Notifications")
        section = page.locator("[data-section=notifications]")
        expect(section).to_contain_text("Off: this browser hears of new messages and sign-in requests only while")
        expect(section).to_contain_text("never a message's text, its sender or where a sign-in comes from")
        p.shot("notifications-off")
        page.get_by_role("button", name="Turn on notifications").click()
        expect(page.get_by_role("status")).to_contain_text("Notifications turned on for this browser.", timeout=30_000)
        expect(section).to_contain_text("On: this browser is told of new messages (and sign-in requests")
        expect(page.get_by_role("button", name="Turn off notifications")).to_be_visible()
        p.shot("notifications-on")
        vapid = server.api("GET", "/v1/push/vapid-key")[1]["publicKey"]
        used = page.evaluate("btoa(String.fromCharCode(...new Uint8Array(window.__subscribedWith.applicationServerKey)))")
        assert used.rstrip("=").replace("+", "-").replace("/", "_") == vapid, (used, vapid)
        assert page.evaluate("window.__subscribedWith.userVisibleOnly") is True

        # Every tab of the app closed: a message from bob is pushed, sealed, to the push service.
        close_app_pages(p.context, server)
        bob.register("bob")
        bob.run("send", "--to", "nia", "hello from the terminal")
        log = push.wait_for(lambda log: any(e["payload"] and e["payload"]["kind"] == "message" for e in log))
        pushed = [e for e in log if e["payload"]]
        assert all(e["error"] is None and e["name"] == "nia-browser" for e in log), log
        message_push = next(e for e in pushed if e["payload"]["kind"] == "message")
        assert set(message_push["payload"]) == {"kind", "id"}, message_push
        assert message_push["claims"]["sub"] == "mailto:ops@example.com", message_push
        assert message_push["claims"]["aud"] == push.url, message_push
        assert "hello" not in json.dumps(log)

        # What the push service decrypted, delivered to the worker: "Encrypted Message Received".
        worker = Worker(p.context, server)
        worker.deliver(message_push["payload"])
        message_id = message_push["payload"]["id"]
        shown = worker.shown()
        assert [(n["title"], n["body"], n["tag"]) for n in shown] == [
            ("Encrypted Message Received", "Tap to decrypt and view the message", message_id)
        ], shown
        # A tap opens the app at that message.
        opened = worker.click(message_id)
        assert opened == [f"/#/messages/{message_id}"], opened
        assert worker.shown(0) == [], "the tapped notification closed"
        app = p.context.new_page()
        app.goto(server.url + opened[0])
        expect(app.get_by_label("Message text").last).to_have_text("hello from the terminal", timeout=SLOW)
        expect(app).to_have_url(re.compile(r"#/messages/bob$"))
        app.get_by_text("Details", exact=True).last.click()
        opened_steps = app.get_by_role("list", name="Steps as they happened").last
        expect(opened_steps).to_contain_text("Signature verified")
        expect(opened_steps).to_contain_text("String decrypted")
        app.screenshot(path=os.path.join(support.ARTIFACTS, "notifications-opened-message-desktop.png"), full_page=True)
        app.close()

        # A notification for a message that never comes: said so, not taken for a conversation.
        worker.deliver({"kind": "message", "id": "0123456789abcdef0123456789abcdef"})
        assert [n["tag"] for n in worker.shown()] == ["0123456789abcdef0123456789abcdef"]
        assert worker.click("0123456789abcdef0123456789abcdef") == ["/#/messages/0123456789abcdef0123456789abcdef"]
        missing = p.context.new_page()
        missing.goto(server.url + "/#/messages/0123456789abcdef0123456789abcdef")
        expect(missing.get_by_text("That message is not here")).to_be_visible(timeout=60_000)
        expect(missing).to_have_url(re.compile(r"#/messages$"))
        missing.close()

        # A sign-in request: pushed to the browser's authenticator, shown once it verifies under the pinned key.
        login = Login(cli, "nia")
        logins.append(login)
        login.number()
        log = push.wait_for(lambda log: any(e["payload"] and e["payload"]["kind"] == "approval" for e in log))
        approval = next(e for e in log if e["payload"] and e["payload"]["kind"] == "approval")
        assert set(approval["payload"]) == {"kind", "id", "device"} and approval["urgency"] == "high", approval
        assert approval["topic"] and len(approval["topic"]) == 32 and int(approval["ttl"]) <= 60, approval
        assert len({e["length"] for e in log}) == 1, "every push is the same length"
        txn = approval["payload"]["id"]

        # Forged: the challenge does not verify under the pinned key (swapped here for another): nothing shown,
        # nothing answered.
        tamper = p.context.new_page()
        tamper.goto(server.url + "/")
        pinned = tamper.evaluate(page_function("push.js", "swapChallengeKey"))
        tamper.close()
        worker.deliver(approval["payload"])
        assert worker.shown() == []
        # The pinned key back: "New Authentication", with Approve and Deny.
        tamper = p.context.new_page()
        tamper.goto(server.url + "/")
        tamper.evaluate(page_function("push.js", "putChallengeKey"), pinned)
        tamper.close()
        worker.deliver(approval["payload"])
        shown = worker.shown()
        assert [(n["title"], n["body"], n["tag"], n["actions"]) for n in shown] == [
            ("New Authentication", "You have a new authentication request.", txn, ["Approve", "Deny"])
        ], shown
        # "Deny" is answered by the worker, signed with the authenticator's key: the CLI's sign-in fails.
        assert worker.click(txn, "deny") == []
        code, out, err = login.wait()
        assert code != 0 and "FAILED" in err, (code, out, err)
        events = [(e["kind"], e["outcome"]) for e in server.api("GET", "/v1/me/audit?limit=50", token=token)[1]["events"]]
        assert ("sign-in", "second-factor-denied") in events, events
        # The same push again: answered already, so nothing is shown.
        worker.deliver(approval["payload"])
        assert worker.shown() == []

        # "Approve" opens Approvals, where the number is chosen.
        second = Login(cli, "nia")
        logins.append(second)
        second.number()
        log = push.wait_for(lambda log: len([e for e in log if e["payload"] and e["payload"]["kind"] == "approval"]) >= 2)
        again = [e for e in log if e["payload"] and e["payload"]["kind"] == "approval"][-1]
        worker.deliver(again["payload"])
        assert [n["title"] for n in worker.shown()] == ["New Authentication"]
        assert worker.click(again["payload"]["id"], "approve") == ["/#/approvals"]

        # The push service replaces the subscription (pushsubscriptionchange): the worker subscribes again and
        # registers the new one for both devices of this browser, each with its own device session (opened with
        # its key); later pushes go there.
        renewed = push.subscription("nia-renewed")
        worker.worker().evaluate(
            """async ([old, fresh]) => {
              const wrap = (json) => ({ endpoint: json.endpoint, toJSON: () => json, options: {} });
              self.registration.pushManager.subscribe = async () => wrap(fresh);
              const event = new ExtendableEvent("pushsubscriptionchange");
              Object.defineProperty(event, "oldSubscription", { value: wrap(old) });
              const waiting = [];
              event.waitUntil = (promise) => waiting.push(promise);
              self.dispatchEvent(event);
              await Promise.all(waiting);
            }""",
            [subscription, renewed],
        )
        before = len(push.get("/log"))
        bob.run("send", "--to", "nia", "after the push service renewed")
        log = push.wait_for(lambda log: any(e["name"] == "nia-renewed" for e in log[before:]))
        assert all(e["name"] == "nia-renewed" and e["error"] is None for e in log[before:]), log[before:]
        # The authenticator's target moved too: a sign-in request is pushed there.
        third = Login(cli, "nia")
        logins.append(third)
        third.number()
        log = push.wait_for(
            lambda log: any(e["payload"] and e["payload"]["kind"] == "approval" for e in log[before:]), timeout=60
        )
        approvals = [e for e in log[before:] if e["payload"] and e["payload"]["kind"] == "approval"]
        assert approvals and all(e["name"] == "nia-renewed" for e in approvals), approvals

        # A push that is not Countersign's shape shows nothing.
        for junk in ("not json", {"kind": "message"}, {"kind": "message", "id": "x" * 200}, {"kind": "approval", "id": "t"}):
            worker.deliver(junk)
        assert worker.shown() == []
        worker.close()

        # Turned off: the server forgets the subscription for both devices.
        settings = p.context.new_page()
        settings.goto(server.url + "/#/settings/notifications")
        settings.get_by_role("button", name="Turn off notifications").click(timeout=SLOW)
        expect(settings.get_by_role("status")).to_contain_text("Notifications turned off for this browser.", timeout=30_000)
        before = len(push.get("/log"))
        bob.run("send", "--to", "nia", "after turning off")
        time.sleep(2)
        assert len(push.get("/log")) == before, push.get("/log")[before:]
        settings.close()
    finally:
        for login in logins:
            login.close()
        cli.close()
        bob.close()
        p.context.close()
        push.close()
        server.stop()
