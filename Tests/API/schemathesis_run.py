#!/usr/bin/env python3
"""The whole OpenAPI document (docs/openapi.yaml) tested by schemathesis against a real `countersign serve`.

    python3 Tests/API/schemathesis_run.py BINARY [SECONDS]

Starts the server on a fresh SQLite file on 127.0.0.1 with the captcha on (its own process group, stopped
however this script ends; it also exits with its parent), makes one credential of every kind, then runs
schemathesis over every operation: the examples, coverage and fuzzing phases, then the stateful phase,
which follows the document's links (register → sign in → device challenge → device → session nonce →
device session → fetch / directory, …) with valid requests only, a new account's or device's session
travelling along the links in `Authorization`; within SECONDS (default 240) in all. Checks: no 5xx, every
status, content type, header and body as the document says (and the status listed for the operation, not
only under `default`), negative data rejected, authentication not ignored, missing required headers and
unsupported methods refused. Exits non-zero on any failure. Credentials and hooks: schemathesis_hooks.py. At the end it
prints how often the stateful phase followed each link. COUNTERSIGN_ST_DEBUG=FILE appends every request's
method, path, status and the start of its answer to FILE.

The credentials:
- an account session (`bearer`): an account with no second factor;
- a messaging device session (`deviceBearer`): another account's device, registered by the CLI
  (`countersign device init`), which also sends one real message to itself so that sends can replay it;
- an authenticator's device session (`deviceBearer` on /v1/authenticator*): paired to a third account;
- binding secrets (`bindingBearer`): the third account's sign-in (202, a second factor pending) and an
  authentication code (POST /v1/auth-codes).
"""
import atexit
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from countersign_api import API, key_pem  # noqa: E402

PASSWORD = "correct horse battery staple"


class Server:
    """`countersign serve` on a fresh SQLite file, in a process group of its own."""

    def __init__(self, binary, directory):
        env = dict(
            os.environ,
            COUNTERSIGN_EXIT_WITH_PARENT="1",
            COUNTERSIGN_LOG_LEVEL="warning",
            # Every request comes from 127.0.0.1, and generated wrong passwords must not lock or delay the
            # accounts whose sessions the run needs: the limits themselves are tested in the Swift suites.
            COUNTERSIGN_REGISTRATIONS_PER_ADDRESS="1000000",
            COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS="1000000",
            COUNTERSIGN_LOCKOUT_DELAY_AFTER="1000000",
            COUNTERSIGN_LOCKOUT_LOCK_AFTER="1000000",
        )
        self.log = os.path.join(directory, "serve.log")
        self.process = subprocess.Popen(
            # With a metrics token, as deployed: /metrics answers 401 without it (404 means metrics are off).
            [binary, "serve", "--port", "0", "--captcha", "always", "--database", f"sqlite:{directory}/st.sqlite",
             "--metrics-token-file", os.path.join(directory, "metrics.token")],
            stdout=subprocess.PIPE, stderr=open(self.log, "w"), env=env, start_new_session=True,
        )
        try:
            line = self.process.stdout.readline().decode()
        except BaseException:  # SIGTERM while waiting: `server` is not assigned yet, so cleanup cannot stop it
            self.stop()
            raise
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"the server printed no address: {line!r}; its log: {open(self.log).read()[-2000:]}")
        self.url = f"http://127.0.0.1:{match.group(1)}"

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def cli(binary, config, *args, stdin=None):
    env = dict(os.environ, COUNTERSIGN_CONFIG_DIR=config)
    r = subprocess.run([binary, *args], env=env, capture_output=True, text=True, input=stdin, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"countersign {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def find_token(value, prefix):
    """The first string starting with `prefix` anywhere in a decoded JSON value."""
    if isinstance(value, str):
        return value if value.startswith(prefix) else None
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        found = find_token(child, prefix)
        if found:
            return found
    return None


def credentials(binary, server, work):
    api = API(server.url)
    stamp = str(int(time.time()))[-6:]
    # The account session.
    alice = f"st-alice-{stamp}"
    api.register(alice, PASSWORD)
    session = api.sign_in(alice, PASSWORD)
    # The messaging device: the CLI's own, so that its real envelope can be sent again.
    dave = f"st-dave-{stamp}"
    config = os.path.join(work, "dave")
    with open(os.path.join(work, "pw"), "w") as f:
        f.write(PASSWORD + "\n")
    pw = os.path.join(work, "pw")
    cli(binary, config, "account", "register", dave, "--name", "D", "--lastname", "V", "--password-file", pw, "--server", server.url)
    cli(binary, config, "account", "login", dave, "--password-file", pw, "--server", server.url)
    cli(binary, config, "device", "init", "--name", "schemathesis", "--no-passphrase")
    cli(binary, config, "send", "--to", dave, "a note to my own devices")
    device = json.load(open(os.path.join(config, "device.json")))
    device_token = find_token(json.load(open(os.path.join(config, "device-session.json"))), "csd_")
    key_path = device["keyFile"] if os.path.isabs(device["keyFile"]) else os.path.join(config, device["keyFile"])
    page = api.expect(200, "GET", "/v1/devices/current/messages", token=device_token)
    sent = next(m for m in page["messages"] if m["from"] == dave)
    # The authenticator, paired to an account of its own, whose sign-in then waits for a second factor.
    carol = f"st-carol-{stamp}"
    api.register(carol, PASSWORD)
    carol_session = api.sign_in(carol, PASSWORD)
    pairing, authenticator_key = api.pair_authenticator(carol_session["token"], "schemathesis")
    pending = api.sign_in(carol, PASSWORD, status=202, secondFactor="code")
    auth_code = api.expect(201, "POST", "/v1/auth-codes", {})
    return {
        "url": server.url,
        "account": {"username": alice, "password": PASSWORD, "id": session["account"]["id"]},
        "device": {"id": device["deviceId"], "key": open(key_path).read()},
        "authenticator": {"id": pairing["deviceId"], "key": key_pem(authenticator_key)},
        "mfaAccount": {"username": carol, "password": PASSWORD},
        "send": {"to": sent["to"], "envelope": sent["envelope"]},
        "tokens": {
            "account": session["token"],
            "device": device_token,
            "authenticator": pairing["session"]["token"],
            "transaction": pending["binding"],
            "authCode": auth_code["binding"],
        },
    }


def summarize_links(path):
    """Prints how often the stateful phase followed each of the document's links, and how often each
    kind of credential had to be made again (from the hooks, one line of JSON per schemathesis run)."""
    runs = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
    followed, remade, chain = {}, {}, {"accounts": 0, "devices": 0}
    for run in runs:
        for kind, n in run.get("chain", {}).items():
            chain[kind] += n
        for name, (n, ok) in run["links"].items():
            seen = followed.setdefault(name, [0, 0])
            seen[0] += n
            seen[1] += ok
        for kind, n in run["remade"].items():
            remade[kind] = remade.get(kind, 0) + n
    links = {k: v for k, v in followed.items() if k != "(first step)"}
    print(f"schemathesis: credentials made again after a request ended them: {remade}", flush=True)
    print(f"schemathesis: stateful steps {sum(n for n, _ in followed.values())}, {len(links)} links followed "
          f"({sum(n for n, _ in links.values())} steps; followed, target answered 2xx):", flush=True)
    for name, (n, ok) in sorted(links.items()):
        print(f"  {n:5d} {ok:5d}  {name}", flush=True)
    print(f"schemathesis: along the links, devices registered with a signed proof: {chain['devices']}, of them "
          f"for accounts the links signed in to: {chain['accounts']}", flush=True)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python3 Tests/API/schemathesis_run.py BINARY [SECONDS]")
    binary = os.path.abspath(sys.argv[1])
    budget = int(sys.argv[2]) if len(sys.argv) == 3 else 240
    work = tempfile.mkdtemp(prefix="cs-st-")
    server = None

    def cleanup():
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    atexit.register(cleanup)
    # SIGTERM (timeout(1), CI) and SIGHUP end the run through atexit as an exception would.
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda number, frame: sys.exit(128 + number))

    server = Server(binary, work)
    started = time.monotonic()
    state = credentials(binary, server, work)
    state_file = os.path.join(work, "state.json")
    with open(state_file, "w") as f:
        json.dump(state, f)
    print(f"schemathesis: server {server.url}, credentials made in {time.monotonic() - started:.1f} s", flush=True)

    env = dict(
        os.environ,
        COUNTERSIGN_ST_STATE=state_file,
        SCHEMATHESIS_HOOKS="schemathesis_hooks",
        PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    # Two runs, so that the stateful phase gets its share of the time: examples, coverage and fuzzing
    # (each operation alone) in half of what is left, then the stateful phase along the links.
    links = os.path.join(work, "links.json")
    env["COUNTERSIGN_ST_LINKS"] = links
    left = max(60, budget - int(time.monotonic() - started))
    failed = False
    for phases, seconds in (("examples,coverage,fuzzing", left // 2), ("stateful", left - left // 2)):
        print(f"schemathesis: {phases} for {seconds} s", flush=True)
        command = [
            sys.executable, "-m", "schemathesis.cli", "--config-file", os.path.join(HERE, "schemathesis.toml"),
            "run", os.path.join(ROOT, "docs", "openapi.yaml"), "--url", server.url,
            "--phases", phases, "--max-time", str(seconds),
        ]
        failed |= subprocess.run(command, env=env, cwd=work).returncode != 0
    summarize_links(links)
    if failed:
        print(f"schemathesis failed; the server's log ends:\n{open(server.log).read()[-4000:]}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
