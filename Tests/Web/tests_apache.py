"""Apache httpd with mod_auth_openidc (Debian's apache2 and libapache2-mod-auth-openidc, nobody here wrote them) as
the relying party in front of a page: started on loopback as an unprivileged process with a generated
configuration, it sends the browser to Countersign, which signs in and asks for consent; Apache exchanges the
code, checks the ID token against the JWKS, and serves the protected page, which shows the `sub` and the `amr`
the provider gave. RP-initiated logout through Apache ends its session and Countersign's in this browser. The
same for a client whose policy is `mfa` (push approval with number matching on a paired CLI authenticator) and
one that is `phishing-resistant` (a passkey on Chromium's virtual authenticator)."""
import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from support import SLOW, Page, Server, api_account, expect, sign_in, sign_up
from tests_messages import Cli
from tests_oidc import free_port, register_client
from tests_passkeys import PasskeyPage, add_passkey, open_passkeys, sign_out

MODULES = "/usr/lib/apache2/modules"


class Apache:
    """apache2 in the foreground, as www-data, with a configuration of its own in a fresh directory; stopped (its
    process group) by `stop`, and by the test's `finally` whatever happens."""

    def __init__(self, issuer, secret, port):
        self.dir = tempfile.mkdtemp(prefix="cs-apache-", dir="/tmp")  # a place www-data can enter
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        docs = os.path.join(self.dir, "htdocs", "protected")
        os.makedirs(docs)
        with open(os.path.join(docs, "index.html"), "w") as f:
            f.write('<!doctype html><title>Protected</title><h1>Protected by Apache</h1>'
                    '<p id="sub">sub=<!--#echo var="OIDC_CLAIM_sub" --></p>'
                    '<p id="amr">amr=<!--#echo var="OIDC_CLAIM_amr" --></p>'
                    '<p id="user">user=<!--#echo var="OIDC_CLAIM_preferred_username" --></p>')
        modules = ["mpm_event", "authn_core", "authz_core", "authz_user", "auth_openidc", "include", "mime", "dir"]
        config = "\n".join([
            f"ServerRoot {self.dir}",
            f"Listen 127.0.0.1:{port}",
            f"PidFile {self.dir}/httpd.pid",
            f"ErrorLog {self.dir}/error.log",
            "LogLevel warn auth_openidc:info",
            "ServerName 127.0.0.1",
            f"DocumentRoot {self.dir}/htdocs",
            *[f"LoadModule {m}_module {MODULES}/mod_{m}.so" for m in modules],
            "TypesConfig /etc/mime.types",
            "DirectoryIndex index.html",
            f"OIDCProviderMetadataURL {issuer}/.well-known/openid-configuration",
            "OIDCClientID apache",
            f"OIDCClientSecret {secret}",
            f"OIDCRedirectURI {self.url}/protected/redirect_uri",
            f"OIDCCryptoPassphrase {secrets.token_hex(16)}",
            'OIDCScope "openid profile"',
            "OIDCPKCEMethod S256",
            # A loaded machine and a debug build: the sign-in may take minutes, the provider seconds to answer.
            "OIDCStateTimeout 900",
            "OIDCHTTPTimeoutShort 60",
            "OIDCHTTPTimeoutLong 60",
            "OIDCCacheShmMax 500",
            "OIDCPassClaimsAs environment",
            f"OIDCDefaultLoggedOutURL {self.url}/",
            "<Location /protected>",
            "  AuthType openid-connect",
            "  Require valid-user",
            "  Options +Includes",
            "  SetOutputFilter INCLUDES",
            "</Location>",
            "",
        ])
        self.config = os.path.join(self.dir, "httpd.conf")
        with open(self.config, "w") as f:
            f.write(config)
        www = pwd.getpwnam("www-data")
        for root, dirs, files in os.walk(self.dir):
            for name in [root, *[os.path.join(root, n) for n in dirs + files]]:
                os.chown(name, www.pw_uid, www.pw_gid)
        self.process = subprocess.Popen(
            ["runuser", "-u", "www-data", "--", "/usr/sbin/apache2", "-f", self.config, "-DFOREGROUND"],
            start_new_session=True, stdout=open(os.path.join(self.dir, "stdout"), "w"), stderr=open(os.path.join(self.dir, "stderr"), "w"),
            env=dict(os.environ, APACHE_RUN_DIR=self.dir, APACHE_LOCK_DIR=self.dir, APACHE_LOG_DIR=self.dir))
        try:
            self.wait_until_it_answers()
        except BaseException:
            self.stop()  # also when the run itself is stopped meanwhile
            raise

    def wait_until_it_answers(self):
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=5)
                return
            except urllib.error.HTTPError:
                return  # it answers
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"apache2 did not start: {self.log()}")
                time.sleep(0.2)

    def log(self):
        out = []
        for name in ("stdout", "stderr", "error.log"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    out.append(f.read()[-3000:])
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        # runuser may have gone first (it kills Apache's main process): whatever is left of the group goes too.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def behind_apache(policy, logged_out=False):
    """A provider of its own (its issuer known before it starts) with the client `apache` registered under
    `policy` (and Apache's root as its post-logout address when `logged_out`), and Apache protecting
    /protected/ with it; both stopped however the test ends."""
    port = free_port()
    issuer = f"http://localhost:{port}"
    provider = Server(port=port, COUNTERSIGN_PUBLIC_URL=issuer)
    apache_port = free_port()
    apache = None
    try:
        back = ["--post-logout-redirect-uri", f"http://127.0.0.1:{apache_port}/"] if logged_out else []
        secret = register_client(provider, "apache", f"http://127.0.0.1:{apache_port}/protected/redirect_uri",
                                 "--policy", policy, *back)
        apache = Apache(issuer, secret, apache_port)
        yield provider, apache
    finally:
        if apache:
            apache.stop()
        provider.stop()


def allow_and_see_the_page(page, apache):
    """Allows Test App on the consent screen and waits for Apache's protected page (its log, if it never comes)."""
    expect(page.get_by_role("heading", name="Allow Test App?")).to_be_visible(timeout=SLOW)
    page.get_by_role("button", name="Allow", exact=True).click()
    try:
        expect(page.get_by_role("heading", name="Protected by Apache")).to_be_visible(timeout=SLOW)
    except AssertionError:
        raise AssertionError(f"Apache did not serve the page: {page.url}\n{apache.log()}")


def amr(page):
    """The methods the protected page shows (OIDC_CLAIM_amr, comma-separated)."""
    text = page.locator("#amr").inner_text()
    assert text.startswith("amr="), text
    return set(text[4:].split(","))


def test_apache_mod_auth_openidc_signs_in_through_countersign_and_shows_sub_and_amr(server, browser):
    with behind_apache("password", logged_out=True) as (provider, apache):
        p = Page(browser, provider)
        try:
            sign_up(p, "apacheuser")
            expect(p.page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
            p.page.goto(apache.url + "/protected/")
            allow_and_see_the_page(p.page, apache)
            sub = p.page.locator("#sub").inner_text()
            assert sub.startswith("sub=") and len(sub) > 10 and "apacheuser" not in sub, sub
            assert amr(p.page) == {"pwd"}
            assert p.page.locator("#user").inner_text() == "user=apacheuser"
            p.shot("apache-protected")

            # Logout through Apache (its redirect URI's ?logout=): its session ends, it sends the browser to the
            # provider's end_session_endpoint with the ID token as the hint, Countersign asks, signs this browser
            # out and returns to the registered address; the protected page then asks Countersign to sign in.
            back = urllib.parse.quote(apache.url + "/", safe="")
            p.page.goto(f"{apache.url}/protected/redirect_uri?logout={back}")
            expect(p.page.get_by_role("heading", name="Test App signed you out")).to_be_visible(timeout=SLOW)
            p.page.get_by_role("button", name="Sign out of Countersign").click()
            p.page.wait_for_url(apache.url + "/", timeout=SLOW)
            p.page.goto(apache.url + "/protected/")
            expect(p.page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=SLOW)
        finally:
            p.close()


def test_apache_mod_auth_openidc_with_an_mfa_client_signs_in_by_push_approval_with_number_matching(server, browser):
    """A client whose policy is `mfa`: the browser, not signed in, is asked to sign in on Countersign's page for
    Test App; the password opens a push to the account's paired CLI authenticator, approved with the number the
    page shows; the page goes on to consent and Apache, whose page shows the methods (`amr`: pwd swk mfa)."""
    with behind_apache("mfa") as (provider, apache):
        phone = Cli(provider)
        p = None
        try:
            token = api_account(provider, "apachemfa")
            status, issued, _ = provider.api("POST", "/v1/me/mfa/pairing-keys", None, token)
            assert status == 201, (status, issued)
            phone.run("authenticator", "pair", issued["key"], "--server", provider.url, "--no-passphrase",
                      "--name", "phone")
            p = Page(browser, provider)
            p.page.goto(apache.url + "/protected/")
            expect(p.page.get_by_text("Sign in to continue to Test App")).to_be_visible(timeout=SLOW)
            sign_in(p, "apachemfa")
            shown = p.page.locator(".number .digits")
            expect(shown).to_have_text(re.compile(r"^\d{2,6}$"), timeout=SLOW)
            number = shown.inner_text()
            pending = []
            for _ in range(30):
                pending = json.loads(phone.run("authenticator", "pending", "--json").stdout)
                if pending:
                    break
                time.sleep(1)
            assert pending, "no push reached the authenticator"
            approved = phone.run("authenticator", "approve", pending[0]["id"], "--number", number)
            assert approved.stdout.strip() == "COMPLETED", approved.stdout
            allow_and_see_the_page(p.page, apache)
            assert amr(p.page) == {"pwd", "swk", "mfa"}
            assert p.page.locator("#user").inner_text() == "user=apachemfa"
            p.shot("apache-protected-mfa")
        finally:
            if p:
                p.close()
            phone.close()


def test_apache_mod_auth_openidc_with_a_phishing_resistant_client_signs_in_by_passkey(server, browser):
    """A client whose policy is `phishing-resistant`: signed out, the browser signs in on Countersign's page with a
    passkey (Chromium's virtual authenticator, user verified); Apache's page shows `amr` hwk user mfa."""
    with behind_apache("phishing-resistant") as (provider, apache):
        api_account(provider, "apachepk")
        b = PasskeyPage(browser, provider, autofill=False)
        try:
            page = b.page
            sign_in(b.p, "apachepk")
            add_passkey(page, open_passkeys(page), "laptop")
            sign_out(page)
            page.goto(apache.url + "/protected/")
            expect(page.get_by_text("Sign in to continue to Test App")).to_be_visible(timeout=SLOW)
            page.get_by_role("button", name="Sign in with a passkey").click()
            allow_and_see_the_page(page, apache)
            assert amr(page) == {"hwk", "user", "mfa"}
            b.p.shot("apache-protected-passkey")
            b.ceremonies.verify(provider, registration=1, sign_in=1)
        except BaseException:
            b.p.context.close()  # the failure is the test's, not close()'s "no ceremonies verified"
            raise
        else:
            b.close()
