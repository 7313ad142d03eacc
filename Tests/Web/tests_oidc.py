"""Countersign as an OpenID Connect provider, with authlib (PyPI) as the relying party nobody here wrote: the
browser signs in, sees the consent screen naming the app, allows it and is sent back with a code; authlib
exchanges it with PKCE, verifies the ID token against the JWKS, reads userinfo, rotates the refresh token,
and a reused refresh token revokes its family. A second sign-in to the app is single sign-on (no password,
no consent). An unregistered redirect URI is shown on the provider's page and redirected nowhere."""
import http.server
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import urllib.parse

import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt

import support
from support import SLOW, Page, Server, expect, sign_up


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Callback:
    """The relying party's redirect URI: a loopback HTTP server that keeps every URL it was sent to."""

    def __init__(self):
        self.received = []
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if not self.path.startswith("/cb"):
                    self.send_response(404)  # the browser's own requests (a favicon)
                    self.end_headers()
                    return
                received.append(self.path)
                body = b"<!doctype html><title>Test app</title><h1>Back at the test app</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.uri = f"http://127.0.0.1:{self.port}/cb"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def register_client(server, client_id, redirect_uri, *extra):
    out = subprocess.run(
        [support.BINARY, "admin", "oidc-client", "add", client_id, "--name", "Test App", "--redirect-uri", redirect_uri,
         "--database", f"sqlite:{server.dir}/web.sqlite", *extra],
        capture_output=True, text=True, timeout=60, check=True)
    return dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line).get("client_secret")


def test_an_app_signs_in_with_authlib_through_consent_and_single_sign_on(server, browser):
    port = free_port()
    issuer = f"http://localhost:{port}"
    provider = Server(port=port, COUNTERSIGN_PUBLIC_URL=issuer)
    callback = Callback()
    p = None
    try:
        secret = register_client(provider, "testapp", callback.uri, "--policy", "password",
                                 "--post-logout-redirect-uri", callback.uri + "/bye")
        assert secret and secret.startswith("cs_secret_"), secret
        meta = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()
        assert meta["issuer"] == issuer and meta["code_challenge_methods_supported"] == ["S256"], meta
        assert meta["authorization_response_iss_parameter_supported"] is True

        p = Page(browser, provider)
        sign_up(p, "oidcuser")
        expect(p.page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        client = OAuth2Session("testapp", secret, scope="openid profile offline_access", redirect_uri=callback.uri,
                               code_challenge_method="S256")
        verifier, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
        url, state = client.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
        p.page.goto(url)
        # The consent screen names the app and what it receives.
        expect(p.page.get_by_role("heading", name="Allow Test App?")).to_be_visible(timeout=SLOW)
        received = p.page.get_by_role("list", name="What the application receives")
        expect(received).to_contain_text("Your name and username")
        expect(received).to_contain_text("Staying connected while you are not using it")
        expect(p.page.get_by_role("button", name="Allow", exact=True)).to_be_enabled()
        p.shot("oidc-consent")
        p.page.get_by_role("button", name="Allow", exact=True).click()
        expect(p.page.get_by_role("heading", name="Back at the test app")).to_be_visible(timeout=SLOW)
        back = f"http://127.0.0.1:{callback.port}{callback.received[-1]}"
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
        assert query["state"] == state and query["iss"] == issuer, query  # RFC 9207

        token = client.fetch_token(meta["token_endpoint"], authorization_response=back, code_verifier=verifier)
        keys = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"], timeout=30).json())
        options = {"iss": {"essential": True, "value": issuer}, "aud": {"essential": True, "value": "testapp"},
                   "nonce": {"essential": True, "value": nonce}}
        claims = jwt.decode(token["id_token"], keys, claims_options=options)
        claims.validate()
        assert claims["amr"] == ["pwd"] and claims["acr"] == "urn:countersign:acr:password", claims
        assert claims["preferred_username"] == "oidcuser" and claims["sub"] != "oidcuser", claims
        info = client.get(meta["userinfo_endpoint"]).json()
        assert info["sub"] == claims["sub"] and info["given_name"] == "Ada", info

        # Refresh: rotated; the old one again revokes the family, the newest access token included.
        old_refresh = token["refresh_token"]
        fresh = client.refresh_token(meta["token_endpoint"], refresh_token=old_refresh)
        assert fresh["refresh_token"] != old_refresh
        reused = requests.post(meta["token_endpoint"], data={"grant_type": "refresh_token", "refresh_token": old_refresh},
                               auth=("testapp", secret), timeout=30)
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant", reused.text
        dead = requests.get(meta["userinfo_endpoint"], headers={"Authorization": f"Bearer {fresh['access_token']}"},
                            timeout=30)
        assert dead.status_code == 401 and "invalid_token" in dead.headers["WWW-Authenticate"], dead.headers

        # A key rotation in the middle: tokens signed by the old key still verify against the new set.
        subprocess.run([support.BINARY, "admin", "oidc-keys", "rotate", "--database",
                        f"sqlite:{provider.dir}/web.sqlite"], capture_output=True, timeout=60, check=True)
        rotated = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"], timeout=30).json())
        assert len(rotated.keys) == 2
        jwt.decode(token["id_token"], rotated, claims_options=options).validate(leeway=5)

        # Single sign-on: a second sign-in to the app asks for nothing (consent remembered, session kept).
        again = OAuth2Session("testapp", secret, scope="openid profile", redirect_uri=callback.uri,
                              code_challenge_method="S256")
        verifier2 = secrets.token_urlsafe(48)
        url2, _ = again.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier2,
                                                 nonce=secrets.token_urlsafe(8))
        before = len(callback.received)
        p.page.goto(url2)
        expect(p.page.get_by_role("heading", name="Back at the test app")).to_be_visible(timeout=SLOW)
        assert len(callback.received) == before + 1
        second = again.fetch_token(meta["token_endpoint"], code_verifier=verifier2,
                                   authorization_response=f"http://127.0.0.1:{callback.port}{callback.received[-1]}")
        assert "id_token" in second and "refresh_token" not in second, second.keys()

        # A redirect URI not registered: shown here, nothing sent anywhere.
        evil = url2.replace(urllib.parse.quote(callback.uri, safe=""),
                            urllib.parse.quote("http://127.0.0.1:1/steal", safe=""))
        assert evil != url2
        before = len(callback.received)
        p.page.goto(evil)
        expect(p.page.get_by_role("heading", name="This sign-in link doesn't work")).to_be_visible(timeout=SLOW)
        expect(p.page.get_by_role("alert")).to_contain_text("nothing was shared with it")
        p.page.get_by_text("Technical details").click()
        expect(p.page.get_by_text("is not one registered for Test App")).to_be_visible()
        p.shot("oidc-error")
        assert len(callback.received) == before

        # "Don't allow" (consent asked again by prompt=consent): the app hears access_denied, and gets no code.
        denied = OAuth2Session("testapp", secret, scope="openid", redirect_uri=callback.uri,
                               code_challenge_method="S256")
        url3, state3 = denied.create_authorization_url(meta["authorization_endpoint"],
                                                       code_verifier=secrets.token_urlsafe(48), prompt="consent")
        p.page.goto(url3)
        expect(p.page.get_by_role("heading", name="Allow Test App?")).to_be_visible(timeout=SLOW)
        p.page.get_by_role("button", name="Don't allow").click()
        expect(p.page.get_by_role("heading", name="Back at the test app")).to_be_visible(timeout=SLOW)
        refused = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback.received[-1]).query))
        assert refused.get("error") == "access_denied" and refused.get("state") == state3 and "code" not in refused

        # Settings → Connected apps lists it with what it receives; disconnecting signs it out at once.
        p.page.goto(issuer + "/#/settings/apps")
        apps = p.page.get_by_role("list", name="Connected apps")
        app = apps.get_by_role("listitem", name="Test App")
        expect(app).to_contain_text("Your name and username", timeout=SLOW)
        p.shot("oidc-connected-apps")
        assert requests.get(meta["userinfo_endpoint"], headers={"Authorization": f"Bearer {second['access_token']}"},
                            timeout=30).status_code == 200
        app.get_by_role("button", name="Disconnect Test App").click()
        expect(p.page.get_by_role("status").filter(has_text="Disconnected Test App")).to_be_visible(timeout=SLOW)
        expect(apps).to_contain_text("No application signs in with your Countersign account")
        assert requests.get(meta["userinfo_endpoint"], headers={"Authorization": f"Bearer {second['access_token']}"},
                            timeout=30).status_code == 401

        # RP-initiated logout (end_session_endpoint): asked here, then signed out of Countersign in this browser
        # and sent back to the registered post-logout URI with the state; the app's tokens end with it.
        assert meta["end_session_endpoint"] == f"{issuer}/oauth2/logout", meta
        bye = callback.uri + "/bye"
        # Signed in to the app once more (consent asked again after the disconnection), for a live token to end.
        last_session = OAuth2Session("testapp", secret, scope="openid", redirect_uri=callback.uri,
                                     code_challenge_method="S256")
        verifier4 = secrets.token_urlsafe(48)
        url4, _ = last_session.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier4)
        p.page.goto(url4)
        expect(p.page.get_by_role("heading", name="Allow Test App?")).to_be_visible(timeout=SLOW)
        p.page.get_by_role("button", name="Allow", exact=True).click()
        expect(p.page.get_by_role("heading", name="Back at the test app")).to_be_visible(timeout=SLOW)
        last = last_session.fetch_token(meta["token_endpoint"], code_verifier=verifier4,
                                        authorization_response=f"http://127.0.0.1:{callback.port}{callback.received[-1]}")
        unregistered = f"{meta['end_session_endpoint']}?" + urllib.parse.urlencode(
            {"id_token_hint": second["id_token"], "post_logout_redirect_uri": "http://127.0.0.1:1/steal"})
        p.page.goto(unregistered)
        expect(p.page.get_by_role("heading", name="This sign-out link doesn't work")).to_be_visible(timeout=SLOW)
        before = len(callback.received)
        logout = f"{meta['end_session_endpoint']}?" + urllib.parse.urlencode(
            {"id_token_hint": last["id_token"], "post_logout_redirect_uri": bye, "state": "bye-state"})
        p.page.goto(logout)
        expect(p.page.get_by_role("heading", name="Test App signed you out")).to_be_visible(timeout=SLOW)
        p.shot("oidc-logout")
        p.page.get_by_role("button", name="Sign out of Countersign").click()
        expect(p.page.get_by_role("heading", name="Back at the test app")).to_be_visible(timeout=SLOW)
        assert len(callback.received) == before + 1
        back = urllib.parse.urlsplit(callback.received[-1])
        assert back.path == "/cb/bye" and dict(urllib.parse.parse_qsl(back.query)) == {"state": "bye-state"}, back
        dead = requests.get(meta["userinfo_endpoint"], headers={"Authorization": f"Bearer {last['access_token']}"},
                            timeout=30)
        assert dead.status_code == 401, dead.status_code
        p.page.goto(issuer + "/")
        expect(p.page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=SLOW)
    finally:
        if p:
            p.close()
        callback.close()
        provider.stop()


def test_an_authenticator_pairs_by_openid_connect_once_the_person_confirms_it(server, browser):
    """PingOne's pairing by OpenID Connect (PROTOCOL §6.11): `countersign authenticator pair --oidc` prints the
    authorization URL; the signed-in browser opens it and the consent screen says an authenticator will be added,
    with its key fingerprint; "Allow" sends the browser to the CLI's loopback listener, which pairs."""
    port = free_port()
    issuer = f"http://localhost:{port}"
    provider = Server(port=port, COUNTERSIGN_PUBLIC_URL=issuer)
    config = tempfile.mkdtemp(prefix="cs-oidc-pair-")
    p = cli = None
    try:
        register_client(provider, "countersign-cli", "http://127.0.0.1/callback", "--public", "--policy", "password",
                        "--pairing", "yes")
        subprocess.run([support.BINARY, "admin", "oidc-client", "update", "countersign-cli", "--name",
                        "Countersign CLI", "--database", f"sqlite:{provider.dir}/web.sqlite"],
                       capture_output=True, text=True, timeout=60, check=True)
        p = Page(browser, provider)
        sign_up(p, "pairuser")
        expect(p.page.get_by_role("status")).to_contain_text("Device ready", timeout=SLOW)
        cli = subprocess.Popen(
            [support.BINARY, "authenticator", "pair", "--oidc", issuer, "--client-id", "countersign-cli", "--name",
             "cli-phone", "--no-passphrase", "--yes"],
            env={**os.environ, "COUNTERSIGN_CONFIG_DIR": config}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        url = cli.stdout.readline().strip()  # the URL is the first line it prints
        assert url.startswith(issuer + "/oauth2/authorize?") and "mobilePayload=" in url, url
        p.page.goto(url)
        expect(p.page.get_by_role("heading", name="Allow Countersign CLI and add an authenticator?")).to_be_visible(
            timeout=SLOW)
        expect(p.page.get_by_role("alert")).to_contain_text("approves sign-ins to your account")
        fingerprint = p.page.get_by_label("Authenticator key fingerprint").inner_text()
        assert len(fingerprint) > 20, fingerprint
        expect(p.page.get_by_role("button", name="Allow", exact=True)).to_be_enabled()
        p.shot("oidc-pairing-consent")
        p.page.get_by_role("button", name="Allow", exact=True).click()
        expect(p.page.get_by_text("go back to the terminal to confirm the pairing")).to_be_visible(timeout=SLOW)
        out, err = cli.communicate(timeout=120)
        assert cli.returncode == 0, err
        assert "push: COMPLETED" in out and "username: pairuser" in out, out
        assert fingerprint in err, (fingerprint, err)  # the CLI printed the same key's fingerprint
        # Settings → Devices lists it as an authenticator.
        p.page.goto(issuer + "/")
        support.open_settings(p.page, "Devices")
        expect(p.page.get_by_role("list", name="Devices").get_by_role("listitem").filter(has_text="cli-phone")
               ).to_be_visible(timeout=SLOW)
    except BaseException:
        if p:
            p.context.close()  # the failure is the test's, not close()'s
        raise
    else:
        # The browser asks the CLI's listener for /favicon.ico after its page, whenever it likes; by then the
        # listener may have closed (its one job was the callback): that refusal is the browser's, not a page's.
        p.problems[:] = [x for x in p.problems if x != "console: Failed to load resource: net::ERR_CONNECTION_REFUSED"]
        p.close()
    finally:
        if cli and cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
        provider.stop()
        shutil.rmtree(config, ignore_errors=True)
