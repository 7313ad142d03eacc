"""What the browser tests share: the server under test, a recorded browser page, and API shortcuts.

`configure(binary, artifacts)` is called once by the runner (web_tests.py) before any test.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import urllib.error
import urllib.request

from playwright.sync_api import expect  # noqa: F401 (re-exported for the test modules)

BINARY = ARTIFACTS = None
# How long a step that solves the captcha in the page may take (its work is random, and a loaded machine
# is several times slower than an idle one).
SLOW = 180_000


def configure(binary, artifacts):
    global BINARY, ARTIFACTS
    BINARY, ARTIFACTS = binary, artifacts


PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
EXPECTED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "worker-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; "
    "require-trusted-types-for 'script'; trusted-types countersign"
)


class Server:
    def __init__(self, port=0, **settings):
        """`settings`: extra COUNTERSIGN_* environment for this server (a stricter lockout, say); `port`: a
        chosen one (its public URL must be known before it starts: the OpenID Connect issuer)."""
        self.dir = tempfile.mkdtemp(prefix="cs-web-")
        # Every test's browsers and CLIs come from 127.0.0.1: the per-address limits are raised past what
        # the whole suite uses (the limits themselves are tested in the Swift suites).
        env = dict(
            os.environ,
            COUNTERSIGN_EXIT_WITH_PARENT="1",
            COUNTERSIGN_LOG_LEVEL="warning",
            COUNTERSIGN_REGISTRATIONS_PER_ADDRESS="1000",
            COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS="1000",
            # /metrics as deployed: behind a token (made in the server's folder), so it answers 401, not 404.
            COUNTERSIGN_METRICS_TOKEN_FILE=f"{self.dir}/metrics.token",
            **settings,
        )
        self.process = subprocess.Popen(
            [BINARY, "serve", "--port", str(port), "--captcha", "always", "--database", f"sqlite:{self.dir}/web.sqlite"],
            stdout=subprocess.PIPE, stderr=open(f"{self.dir}/serve.log", "w"), env=env, start_new_session=True,
        )
        line = self.process.stdout.readline().decode()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"the server printed no address: {line!r}")
        # localhost, not 127.0.0.1: a secure context (WebCrypto, and WebAuthn later) by name.
        self.url = f"http://localhost:{match.group(1)}"

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def api(self, method, path, body=None, token=None):
        request = urllib.request.Request(self.url + path, method=method)
        if body is not None:
            request.data = json.dumps(body).encode()
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request) as response:
                data = response.read()
                return response.status, (json.loads(data) if data else None), response.headers
        except urllib.error.HTTPError as error:
            data = error.read()
            return error.code, (json.loads(data) if data else None), error.headers


class Page:
    """A browser page that records console errors, page errors and CSP violations."""

    def __init__(self, browser, server, viewport=DESKTOP):
        self.context = browser.new_context(viewport=viewport)
        self.page = self.context.new_page()
        self.problems = []
        # Chromium logs every 4xx answer to fetch() as a console error ("Failed to load resource"): those
        # are the API's answers (a captcha asked for, a wrong password), which the tests check on screen.
        self.page.on(
            "console",
            lambda m: m.type == "error"
            and not re.fullmatch(r"Failed to load resource: the server responded with a status of 4\d\d .*", m.text)
            and self.problems.append(f"console: {m.text}"),
        )
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.context.add_init_script(
            "document.addEventListener('securitypolicyviolation', e => console.error('CSP ' + e.violatedDirective))"
        )
        self.page.goto(server.url + "/")

    def shot(self, name):
        for label, size in (("phone", PHONE), ("desktop", DESKTOP)):
            self.page.set_viewport_size(size)
            self.page.screenshot(path=os.path.join(ARTIFACTS, f"{name}-{label}.png"), full_page=True)
        self.page.set_viewport_size(DESKTOP)

    def close(self):
        self.context.close()
        assert not self.problems, "\n".join(self.problems)


def sign_up(p, username, password="correct horse battery", name="Ada", lastname="Lovelace"):
    page = p.page
    page.get_by_role("button", name="Sign up").click()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Last name").fill(lastname)
    page.get_by_role("button", name="Create account").click()


def sign_in(p, username, password="correct horse battery"):
    page = p.page
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()


def open_settings(page, section=None):
    """Settings from the home screen, then one of its sections by name ("Devices", "Two-factor", …)."""
    page.get_by_role("button", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings", exact=True)).to_be_visible()
    if section:
        link = page.get_by_role("navigation", name="Settings sections").get_by_role("link", name=section, exact=True)
        link.click()
        expect(link).to_have_attribute("aria-current", "page")


def settings_section(page, section):
    """Another section of Settings, from Settings."""
    link = page.get_by_role("navigation", name="Settings sections").get_by_role("link", name=section, exact=True)
    link.click()
    expect(link).to_have_attribute("aria-current", "page")


def fetch(server, path, headers=None):
    request = urllib.request.Request(server.url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def totp(secret, at="now"):
    return subprocess.run(
        ["oathtool", "--totp", "-b", "-N", at, secret], capture_output=True, text=True, check=True
    ).stdout.strip()


def solve_captcha(server):
    import altcha  # PyPI altcha, installed by the test command

    _, c, _ = server.api("GET", "/v1/captcha")
    solution = altcha.solve_challenge_v1(c["challenge"], c["salt"], c["algorithm"], c["maxnumber"])
    payload = {"algorithm": c["algorithm"], "challenge": c["challenge"], "number": solution.number, "salt": c["salt"], "signature": c["signature"]}
    import base64

    return base64.b64encode(json.dumps(payload).encode()).decode()


def api_sign_in(server, username, password="correct horse battery"):
    status, body, _ = server.api(
        "POST", "/v1/sessions", {"username": username, "password": password, "captcha": solve_captcha(server)}
    )
    assert status == 201, (status, body)
    return body["token"]


def api_account(server, username, password="correct horse battery"):
    status, body, _ = server.api(
        "POST", "/v1/accounts",
        {"username": username, "password": password, "name": "A", "lastname": "B", "captcha": solve_captcha(server)},
    )
    assert status == 201, (status, body)
    status, body, _ = server.api(
        "POST", "/v1/sessions", {"username": username, "password": password, "captcha": solve_captcha(server)}
    )
    assert status == 201, (status, body)
    return body["token"]


VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CountersignCryptoTests", "Vectors")
JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js")


def _js_source(file):
    with open(os.path.join(JS, file)) as f:
        return f.read()


def page_function(file, name):
    """The function `name` of Tests/Web/js/`file`, as page.evaluate takes it (called with its one argument).
    The whole file is the function's body, so the helpers it declares come along: `(arg) => { …; return
    name(arg); }`. Composable like a function expression: `(…)(args)`."""
    return f"(arg) => {{\n{_js_source(file)}\nreturn {name}(arg);\n}}"


def page_script(file, name):
    """The function `name` of Tests/Web/js/`file`, run once as a script (for add_init_script), in a scope of
    its own: `(() => { …; name(); })();`."""
    return f"(() => {{\n{_js_source(file)}\n{name}();\n}})();"


def read_vector(path):
    """A vector file of Tests/CountersignCryptoTests/Vectors: `key: value` lines, a blank line, then hex."""
    fields, hex_lines, in_body = {}, [], False
    for line in open(path).read().splitlines():
        if in_body:
            hex_lines.append(line.strip())
        elif not line.strip():
            in_body = True
        else:
            key, _, value = line.partition(": ")
            fields[key] = value
    fields["bytes"] = "".join(hex_lines)
    return fields
