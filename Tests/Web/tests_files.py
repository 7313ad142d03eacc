"""The Files screen and its formats in the browser: the sealed-file and FileLock vectors the Swift tests
use, key files from `countersign keygen` and OpenSSL, and files crossing between the browser and the CLI
both ways, with the refusals (tampered, truncated, wrong key, wrong passphrase) on screen."""
import base64
import hashlib
import os
import subprocess
import tempfile

from support import ARTIFACTS, Page, expect, sign_up  # noqa: F401
import support

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "CountersignCryptoTests", "Vectors")


def read_vector(path):
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


# Opens each vector with the browser's modules: the identity imported from its PKCS#8 PEM, the format
# detected from the first bytes, the result the SHA-256 of the plaintext or the refusal's class.
OPEN_VECTORS_JS = """async (vectors) => {
    const sealed = await import("/js/sealed-file.js");
    const filelock = await import("/js/filelock.js");
    const { importIdentity } = await import("/js/file-keys.js");
    const { parsePublicKey } = await import("/js/pem.js");
    const h = (s) => Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));
    const x = (b) => Array.from(new Uint8Array(b), (c) => c.toString(16).padStart(2, "0")).join("");
    const out = {};
    for (const [name, v] of Object.entries(vectors)) {
        try {
            const identity = await importIdentity(atob(v.identity), async () => { throw new Error("no passphrase"); });
            const bytes = h(v.bytes);
            const format = sealed.detect(bytes);
            let plaintext;
            if (format === "filelock") {
                plaintext = await filelock.open(bytes, identity);
            } else {
                const expectedSender = v.from ? await parsePublicKey("-----BEGIN PUBLIC KEY-----\\n" + v.from + "\\n-----END PUBLIC KEY-----\\n") : null;
                const r = await sealed.open(new Blob([bytes]), { identity, expectedSender });
                plaintext = new Uint8Array(await r.sink.blob().arrayBuffer());
            }
            out[name] = "success " + x(await crypto.subtle.digest("SHA-256", plaintext));
        } catch (e) {
            out[name] = e.kind || ("error " + e.message);
        }
    }
    return out;
}"""


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
