"""The Files screen and its formats in the browser: the sealed-file and FileLock vectors the Swift tests
use, key files from `countersign keygen` and OpenSSL, and files crossing between the browser and the CLI
both ways, with the refusals (tampered, truncated, wrong key, wrong passphrase) on screen."""
import base64
import hashlib
import os
import re
import subprocess
import tempfile

from support import ARTIFACTS, Page, expect, page_function, read_vector, sign_up  # noqa: F401
import support

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "CountersignCryptoTests", "Vectors")




# Opens each vector with the browser's modules: the identity imported from its PKCS#8 PEM, the format
# detected from the first bytes, the result the SHA-256 of the plaintext or the refusal's class.
OPEN_VECTORS_JS = page_function("vectors.js", "openSealedVectors")


def test_files_sealed_and_filelock_vectors_open_as_in_swift(server, browser):
    p = Page(browser, server)
    vectors = {
        name: read_vector(os.path.join(VECTORS, name))
        for name in sorted(os.listdir(VECTORS))
        if name.endswith(".txt") and (name.startswith(("countersign_", "filelock_")) or name == "unknown_format.txt")
    }
    assert len(vectors) >= 38, sorted(vectors)
    results = p.page.evaluate(OPEN_VECTORS_JS, vectors)
    wrong = {}
    for name, v in vectors.items():
        want = f"success {v['payload']}" if v["expect"] == "success" else v["expect"]
        if results[name] != want:
            wrong[name] = (v.get("comment"), results[name], want)
    assert not wrong, wrong
    p.close()


def cli(*args, input=None, check=True):
    result = subprocess.run([support.BINARY, *args], capture_output=True, input=input)
    if check and result.returncode != 0:
        raise AssertionError(f"countersign {' '.join(args)}: {result.stderr.decode()}")
    return result


def spki_fingerprint(pem_path):
    der = base64.b64decode("".join(l for l in open(pem_path).read().splitlines() if not l.startswith("-----")))
    h = hashlib.sha256(der).hexdigest()[:32]
    return ":".join(h[i:i + 8] for i in range(0, 32, 8))


class Panel:
    """One of Files' tabs (FileLock's segments): each use of it selects its tab first, as a person would."""

    def __init__(self, page, tab, locator):
        self.page, self.tab, self.locator = page, tab, locator

    def __getattr__(self, name):
        tab = self.page.get_by_role("tab", name=self.tab, exact=True)
        if tab.get_attribute("aria-selected") != "true":
            tab.click()
        return getattr(self.locator, name)


def panels(page):
    """The Encrypt, Decrypt and Keys panels."""
    return (
        Panel(page, "Encrypt", page.get_by_role("form", name="Encrypt File")),
        Panel(page, "Decrypt", page.get_by_role("form", name="Decrypt File")),
        Panel(page, "Keys", page.get_by_role("region", name="Keys")),
    )


def open_files(p, username):
    page = p.page
    sign_up(p, username)
    expect(page.get_by_role("status")).to_contain_text("Device ready", timeout=support.SLOW)
    page.get_by_role("button", name="Files").click()
    expect(page.get_by_role("heading", name="Files", exact=True)).to_be_visible()
    return page


def save(page, click, path):
    with page.expect_download() as info:
        click()
    info.value.save_as(path)
    return info.value.suggested_filename


def test_files_cross_between_the_browser_and_the_cli_both_ways(server, browser):
    work = tempfile.mkdtemp(prefix="cs-files-")
    p = Page(browser, server)
    page = open_files(p, "fran")
    encrypt, decrypt, keys = panels(page)
    # Decrypting needs a key; encrypting needs both files (FileLock's words).
    decrypt.get_by_role("button", name="Decrypt & Save File").click()
    expect(decrypt.get_by_role("alert")).to_have_text("No File: Please select an encrypted file first.")
    encrypt.get_by_role("button", name="Encrypt & Save File").click()
    expect(encrypt.get_by_role("alert")).to_have_text("Missing Files: Please select both the source file and the public key.")
    p.shot("files-empty")

    # The browser's file key; both public forms are the CLI's forms of the same key.
    keys.get_by_role("button", name="Generate New Key Pair").click()
    expect(keys.get_by_role("status")).to_contain_text("New key pair generated")
    shown = keys.get_by_test_id("file-key-fingerprint").inner_text().replace("\u200b", "")
    spki = os.path.join(work, "fran.pem")
    flpem = os.path.join(work, "fran-filelock.pem")
    stem = "fran-" + re.sub(r"[^0-9a-f]", "", shown)[:8]
    assert save(page, lambda: keys.get_by_role("button", name="Download public key (SPKI PEM)").click(), spki) == f"{stem}.pem"
    assert save(page, lambda: keys.get_by_role("button", name="Download public key (FileLock PEM)").click(), flpem) == f"{stem}-filelock.pem"
    assert spki_fingerprint(spki) == shown, (spki_fingerprint(spki), shown)
    assert cli("pubkey", spki).stdout == open(spki, "rb").read()
    assert cli("pubkey", "--format", "filelock", spki).stdout == open(flpem, "rb").read()
    p.shot("files-key")

    # The CLI's key pair.
    cli("keygen", "--no-passphrase", "-o", f"{work}/cli.key")
    open(f"{work}/cli.pem", "wb").write(cli("pubkey", f"{work}/cli.key").stdout)
    plain = os.urandom(200_000) + b"end"   # four chunks
    open(f"{work}/report.bin", "wb").write(plain)

    # Browser → CLI: a FileLock package, then a signed sealed file carrying its name.
    encrypt.get_by_label("File to encrypt").set_input_files(f"{work}/report.bin")
    encrypt.get_by_label("Recipient's public key").set_input_files(f"{work}/cli.pem")
    encrypt.get_by_label("FileLock (the iOS app; one recipient, up to 256 MiB)").check()
    name = save(page, lambda: encrypt.get_by_role("button", name="Encrypt & Save File").click(), f"{work}/b.pkg")
    assert name == "report.bin.pkg", name
    assert cli("open", "-i", f"{work}/cli.key", f"{work}/b.pkg").stdout == plain
    encrypt.get_by_label("Countersign (streamed, any size)").check()
    encrypt.get_by_label("Sign with my file key").check()
    name = save(page, lambda: encrypt.get_by_role("button", name="Encrypt & Save File").click(), f"{work}/b.cs")
    assert name == "report.bin.cs", name
    expect(encrypt.get_by_role("status")).to_contain_text("signed")
    opened = cli("open", "-i", f"{work}/cli.key", "--from", spki, "-o", f"{work}/b.out", f"{work}/b.cs")
    assert open(f"{work}/b.out", "rb").read() == plain
    p.shot("files-encrypted")

    # CLI → browser: a signed sealed file with its name, and a FileLock package to the FileLock PEM.
    cli("seal", "-r", spki, "-s", f"{work}/cli.key", "--keep-name", "-o", f"{work}/c.cs", f"{work}/report.bin")
    decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/c.cs")
    decrypt.get_by_label("Sender's public key", exact=False).set_input_files(f"{work}/cli.pem")
    name = save(page, lambda: decrypt.get_by_role("button", name="Decrypt & Save File").click(), f"{work}/c.out")
    assert name == "report.bin" and open(f"{work}/c.out", "rb").read() == plain, name
    expect(decrypt.get_by_role("status")).to_contain_text(f"Signed by {spki_fingerprint(f'{work}/cli.pem')}")
    p.shot("files-decrypted")
    cli("seal", "--format", "filelock", "-r", flpem, "-o", f"{work}/c.pkg", f"{work}/report.bin")
    decrypt.get_by_label("Sender's public key", exact=False).set_input_files([])
    decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/c.pkg")
    name = save(page, lambda: decrypt.get_by_role("button", name="Decrypt & Save File").click(), f"{work}/c2.out")
    assert name == "c" and open(f"{work}/c2.out", "rb").read() == plain, name

    # Refusals, each named, and no output offered: tampered, cut at a chunk boundary, another's key,
    # the wrong sender, a FileLock package altered.
    sealed = open(f"{work}/c.cs", "rb").read()
    header = 60 + 129
    bad = {
        "tampered.cs": sealed[:header + 70_000] + bytes([sealed[header + 70_000] ^ 1]) + sealed[header + 70_001:],
        "cut.cs": sealed[:header + 65_552],
        "tampered.pkg": open(f"{work}/c.pkg", "rb").read()[:-1] + b"\0",
    }
    cli("seal", "-r", f"{work}/cli.pem", "-o", f"{work}/other.cs", f"{work}/report.bin")
    bad["other.cs"] = open(f"{work}/other.cs", "rb").read()
    for name, data in bad.items():
        open(f"{work}/{name}", "wb").write(data)
    expected = {
        "tampered.cs": "Decryption Failed: tampered",
        "cut.cs": "Decryption Failed: truncated",
        "tampered.pkg": "Decryption Failed: tampered",
        "other.cs": "Decryption Failed: not for this key: the file is sealed to " + spki_fingerprint(f"{work}/cli.pem"),
    }
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    for name, words in expected.items():
        decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/{name}")
        decrypt.get_by_role("button", name="Decrypt & Save File").click()
        expect(decrypt.get_by_role("alert")).to_contain_text(words)
        expect(decrypt.get_by_role("link")).to_have_count(0)
    p.shot("files-refused")
    # A sender demanded who did not sign it.
    decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/c.cs")
    decrypt.get_by_label("Sender's public key", exact=False).set_input_files(spki)
    decrypt.get_by_role("button", name="Decrypt & Save File").click()
    expect(decrypt.get_by_role("alert")).to_contain_text("bad signature: signed by " + spki_fingerprint(f"{work}/cli.pem"))
    page.wait_for_timeout(300)
    assert downloads == [], [d.suggested_filename for d in downloads]
    # A private key given as the recipient is refused as such.
    encrypt.get_by_label("Recipient's public key").set_input_files(f"{work}/cli.key")
    encrypt.get_by_role("button", name="Encrypt & Save File").click()
    expect(encrypt.get_by_role("alert")).to_contain_text("private key where a public key is needed")
    p.close()


def test_files_import_a_countersign_keygen_key_file(server, browser):
    work = tempfile.mkdtemp(prefix="cs-files-")
    open(f"{work}/pass", "w").write("a long passphrase\n")
    result = cli("keygen", "--passphrase-file", f"{work}/pass", "-o", f"{work}/me.key")
    open(f"{work}/me.pem", "wb").write(result.stdout)
    p = Page(browser, server)
    page = open_files(p, "gil")
    keys = panels(page)[2]
    keys.get_by_label("Key file", exact=True).set_input_files(f"{work}/me.key")
    keys.get_by_role("button", name="Import Key File").click()
    expect(keys.get_by_role("alert")).to_have_text("This key file is encrypted: enter its passphrase.")
    keys.get_by_label("Passphrase").fill("not the passphrase")
    keys.get_by_role("button", name="Import Key File").click()
    expect(keys.get_by_role("alert")).to_contain_text("wrong passphrase", timeout=20_000)
    expect(keys.get_by_label("Passphrase")).to_have_value("")
    p.shot("files-import-refused")
    keys.get_by_label("Passphrase").fill("a long passphrase")
    keys.get_by_role("button", name="Import Key File").click()
    expect(keys.get_by_role("status")).to_contain_text("Key file imported", timeout=20_000)
    assert keys.get_by_test_id("file-key-fingerprint").inner_text().replace("\u200b", "") == spki_fingerprint(f"{work}/me.pem")
    # The key is stored non-extractable, and opens what the CLI seals to it.
    extractable = page.evaluate(page_function("storage.js", "fileKeysExtractable"))
    assert extractable == [[False, False]], extractable
    open(f"{work}/note.txt", "wb").write(b"for gil\n")
    cli("seal", "-r", f"{work}/me.pem", "-o", f"{work}/note.txt.cs", f"{work}/note.txt")
    decrypt = panels(page)[1]
    decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/note.txt.cs")
    name = save(page, lambda: decrypt.get_by_role("button", name="Decrypt & Save File").click(), f"{work}/out")
    assert name == "note.txt" and open(f"{work}/out", "rb").read() == b"for gil\n", name
    # Replacing the key asks first.
    keys.get_by_role("button", name="Generate New Key Pair").click()
    expect(keys.get_by_role("group", name="Replace your file key?")).to_be_visible()
    p.shot("files-replace")
    keys.get_by_role("button", name="Cancel").click()
    assert keys.get_by_test_id("file-key-fingerprint").inner_text().replace("\u200b", "") == spki_fingerprint(f"{work}/me.pem")
    p.close()


KEY_FILES_JS = page_function("files.js", "readKeyFiles")


def test_files_key_files_from_openssl_are_read_or_refused_by_name(server, browser):
    keys_dir = os.path.join(VECTORS, "keys")
    files = {name: open(os.path.join(keys_dir, name)).read() for name in sorted(os.listdir(keys_dir))}
    p = Page(browser, server)
    results = p.page.evaluate(KEY_FILES_JS, files)
    p256 = spki_fingerprint(os.path.join(keys_dir, "openssl-p256.pub.pem"))
    assert results == {
        "ed25519.pub.pem": "wrong key type",
        "openssl-p256-3des.key.pem": "unsupported key encryption",
        "openssl-p256-compressed.pub.pem": p256,
        "openssl-p256-pbkdf2.key.pem": p256,
        "openssl-p256-scrypt.key.pem": p256,
        "openssl-p256-sec1.key.pem": p256,
        "openssl-p256.key.pem": p256,
        "openssl-p256.pub.pem": p256,
        "p384.pub.pem": "wrong key type",
        "rsa1024.key.pem": "wrong key type",
        "rsa1024.pub.pem": "wrong key type",
        "x25519.pub.pem": "wrong key type",
        "rfc7914": "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887",
    }, results
    p.close()


FILE_SINK_JS = page_function("files.js", "sinkToChosenFile")


def test_files_streamed_to_a_chosen_file_leave_nothing_when_refused(server, browser):
    p = Page(browser, server)
    assert p.page.evaluate(FILE_SINK_JS) == {"same": True, "refusal": "tampered", "left": False}
    p.close()


def files_with_a_key(p, username, work):
    """The Files screen with a file key made, its public key saved at `work`/me.pem."""
    page = open_files(p, username)
    keys = panels(page)[2]
    keys.get_by_role("button", name="Generate New Key Pair").click()
    expect(keys.get_by_role("status")).to_contain_text("New key pair generated")
    save(page, lambda: keys.get_by_role("button", name="Download public key (SPKI PEM)").click(), f"{work}/me.pem")
    return page


def test_files_encrypt_and_decrypt_twenty_times_in_one_page(server, browser):
    """Large-file operations stopped for good in 2 runs of 8 (a 50 MiB seal at "Encrypting… 7 %", an open
    at "Checking…", no CPU): a garbage collection while a read of the file was in flight collected the
    reader and the code awaiting it. Here the page collects garbage over and over while a file of 16 MiB
    (five batches) is encrypted and decrypted 20 times, each within a generous bound, each output opening
    to the input, and no reader left in use."""
    import time

    work = tempfile.mkdtemp(prefix="cs-files-")
    p = Page(browser, server)
    page = files_with_a_key(p, "rhea", work)
    encrypt, decrypt, _ = panels(page)
    plain = os.urandom(16 * 1024 * 1024 + 12_345)
    open(f"{work}/big.bin", "wb").write(plain)
    encrypt.get_by_label("File to encrypt").set_input_files(f"{work}/big.bin")
    encrypt.get_by_label("Recipient's public key").set_input_files(f"{work}/me.pem")
    cdp = p.context.new_cdp_session(page)
    downloads = []
    page.on("download", lambda d: downloads.append(d))

    def run(form, button, done_words, bound=60):
        """Clicks `button`, collecting garbage until the form says `done_words`; returns the seconds."""
        before = len(downloads)
        started = time.time()
        form.get_by_role("button", name=button).click()
        while True:
            for _ in range(5):
                cdp.send("HeapProfiler.collectGarbage")
            status, alert = form.get_by_role("status").inner_text(), form.get_by_role("alert").inner_text()
            if status.startswith(done_words):
                break
            assert not alert, alert
            elapsed = time.time() - started
            assert elapsed < bound, f"{button}: still {status!r} after {elapsed:.0f} s"
        expect(form.get_by_role("button", name=button)).to_be_enabled()
        while len(downloads) == before:
            page.wait_for_timeout(20)
        return time.time() - started, downloads[-1]

    times = []
    for i in range(20):
        seconds, download = run(encrypt, "Encrypt & Save File", "Encrypted big.bin")
        download.save_as(f"{work}/big.bin.cs")
        decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/big.bin.cs")
        more, download = run(decrypt, "Decrypt & Save File", "Decrypted big.bin")
        download.save_as(f"{work}/big.out")
        assert open(f"{work}/big.out", "rb").read() == plain, f"run {i}: the output is not the input"
        times.append(round(seconds + more, 1))
    assert page.evaluate("async () => (await import('/js/sealed-file.js')).readersInUse()") == 0
    print(f"  20 × encrypt + decrypt of 16 MiB: {times} s")
    # The modules alone, as a click starts them: nothing holds the running seal and open but the reads
    # they wait for. Without the readers held, this stopped at the first collection during a read.
    page.evaluate(page_function("files.js", "sealAndOpenTenTimes"))
    started, runs = time.time(), []
    while len(runs) < 10:
        for _ in range(5):
            cdp.send("HeapProfiler.collectGarbage")
        runs = page.evaluate("window.__runs")
        assert time.time() - started < 120, f"the modules stopped after {len(runs)} runs of 10"
    assert runs == [True] * 10, runs
    p.close()


def test_files_cancel_stops_an_operation_and_offers_nothing(server, browser):
    """Cancel, pressed while a large file is encrypted or decrypted: the operation stops, nothing is
    offered or downloaded, the button works again, the page says it was cancelled; the next run finishes."""
    work = tempfile.mkdtemp(prefix="cs-files-")
    p = Page(browser, server)
    page = files_with_a_key(p, "saul", work)
    encrypt, decrypt, _ = panels(page)
    with open(f"{work}/huge.bin", "wb") as f:
        for _ in range(96):
            f.write(os.urandom(1024 * 1024))
    encrypt.get_by_label("File to encrypt").set_input_files(f"{work}/huge.bin")
    encrypt.get_by_label("Recipient's public key").set_input_files(f"{work}/me.pem")
    # The sealed file to decrypt: made first, whole.
    save(page, lambda: encrypt.get_by_role("button", name="Encrypt & Save File").click(), f"{work}/huge.bin.cs")
    expect(encrypt.get_by_role("status")).to_contain_text("Encrypted huge.bin", timeout=120_000)
    decrypt.get_by_label("Encrypted file").set_input_files(f"{work}/huge.bin.cs")
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    # A slower machine: each chunk's encryption and decryption waits 300 ms more (so each batch of 4 MiB,
    # and the 96 MiB take 7 s at least), so that the test's click on Cancel comes mid-way.
    page.evaluate(page_function("page.js", "slowDownCrypto"))
    for form, button, cancel, words, shot in (
        (encrypt, "Encrypt & Save File", "Cancel encryption", "Encryption cancelled: nothing was saved.", "encrypt"),
        (decrypt, "Decrypt & Save File", "Cancel decryption", "Decryption cancelled: nothing was decrypted or saved.", "decrypt"),
    ):
        form.get_by_role("button", name=button).click()
        expect(form.get_by_role("button", name=button)).to_be_disabled()
        expect(form.get_by_role("status")).to_contain_text(" %", timeout=30_000)
        # Cancel first, while it runs (two full-page shots took longer than the whole run on a loaded
        # machine); the in-progress shot is this viewport's alone.
        page.screenshot(path=os.path.join(support.ARTIFACTS, f"files-{shot}-in-progress-desktop.png"))
        form.get_by_role("button", name=cancel).click()
        expect(form.get_by_role("status")).to_have_text(words)
        expect(form.get_by_role("alert")).to_have_text("")
        expect(form.get_by_role("button", name=button)).to_be_enabled()
        expect(form.get_by_role("button", name=cancel)).to_be_hidden()
        expect(form.get_by_role("progressbar")).to_be_hidden()
        expect(form.get_by_role("link")).to_have_count(0)
        p.shot(f"files-{shot}-cancelled")
    # The work itself stopped: no reader left reading the file, nothing downloaded.
    readers = "async () => (await import('/js/sealed-file.js')).readersInUse()"
    for _ in range(150):
        if page.evaluate(readers) == 0:
            break
        page.wait_for_timeout(200)
    assert page.evaluate(readers) == 0, "a reader is still reading the file"
    page.wait_for_timeout(500)
    assert downloads == [], [d.suggested_filename for d in downloads]
    # And the next run goes through.
    name = save(page, lambda: decrypt.get_by_role("button", name="Decrypt & Save File").click(), f"{work}/huge.out")
    assert name == "huge.bin", name
    assert os.path.getsize(f"{work}/huge.out") == 96 * 1024 * 1024
    p.close()
