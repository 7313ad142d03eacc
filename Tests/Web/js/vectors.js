// The vector files the Swift tests read (Tests/CountersignCryptoTests/Vectors), run through the page's own
// modules, and round trips of the same formats. (How these files are run: page.js.)

const fromHex = (s) => Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));
const toHex = (b) => Array.from(new Uint8Array(b), (c) => c.toString(16).padStart(2, "0")).join("");

/** RFC 9180's vector for the suite: sealed with its ephemeral key, its first message opened, and that message
 *  with a bit flipped refused. */
async function hpkeVector(v) {
  const hpke = await import("/js/hpke.js");
  const b64u = (b) => btoa(String.fromCharCode(...b)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const jwk = (sk, pk) => ({
    kty: "EC",
    crv: "P-256",
    d: b64u(fromHex(sk)),
    x: b64u(fromHex(pk).subarray(1, 33)),
    y: b64u(fromHex(pk).subarray(33)),
  });
  const ecdh = { name: "ECDH", namedCurve: "P-256" };
  const importPair = async (sk, pk) => ({
    privateKey: await crypto.subtle.importKey("jwk", jwk(sk, pk), ecdh, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", fromHex(pk), ecdh, true, []),
  });
  const e = v.encryptions[0];
  const h = fromHex;
  const sealed = await hpke.seal(h(v.pkRm), h(v.info), h(e.aad), h(e.pt), await importPair(v.skEm, v.pkEm));
  const r = await importPair(v.skRm, v.pkRm);
  const opened = await hpke.open(r.privateKey, h(v.pkRm), h(v.enc), h(v.info), h(e.aad), h(e.ct));
  let tamperedRefused = false;
  const bad = h(e.ct);
  bad[0] ^= 1;
  try {
    await hpke.open(r.privateKey, h(v.pkRm), h(v.enc), h(v.info), h(e.aad), bad);
  } catch {
    tamperedRefused = true;
  }
  return { enc: toHex(sealed.enc), ct: toHex(sealed.ciphertext), pt: toHex(opened), tamperedRefused };
}

/** Each message vector opened by its identity, expecting its `from`: "success <SHA-256>" or the refusal's kind. */
async function openEnvelopeVectors(vectors) {
  const envelope = await import("/js/envelope.js");
  const der = (pem) =>
    Uint8Array.from(atob(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "")), (c) => c.charCodeAt(0));
  const b64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const keyId = async (spki) => new Uint8Array(await crypto.subtle.digest("SHA-256", spki)).subarray(0, 16);
  const ecdh = { name: "ECDH", namedCurve: "P-256" };
  const out = {};
  for (const [name, v] of Object.entries(vectors)) {
    try {
      const pkcs8 = der(atob(v.identity));
      const privateKey = await crypto.subtle.importKey("pkcs8", pkcs8, ecdh, true, ["deriveBits"]);
      const j = await crypto.subtle.exportKey("jwk", privateKey);
      const u = (t) => Uint8Array.from(atob(t.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
      const point = new Uint8Array([4, ...u(j.x), ...u(j.y)]);
      const pub = await crypto.subtle.importKey("raw", point, ecdh, true, []);
      const own = await keyId(new Uint8Array(await crypto.subtle.exportKey("spki", pub)));
      const opened = await envelope.open(fromHex(v.bytes), { senderSpki: b64(v.from), keyId: own, privateKey, point });
      out[name] = "success " + toHex(await crypto.subtle.digest("SHA-256", opened.plaintext));
    } catch (e) {
      out[name] = e.kind || "error " + e.message;
    }
  }
  return out;
}

/** A message the page seals from alice to bob and alice, opened by each, by carol, flipped, and as if from carol. */
async function envelopeRoundTrip() {
  const envelope = await import("/js/envelope.js");
  const { makeDeviceKeys, spki } = await import("/js/device-keys.js");
  const id = async (k) => new Uint8Array(await crypto.subtle.digest("SHA-256", await spki(k))).subarray(0, 16);
  const raw = async (k) => new Uint8Array(await crypto.subtle.exportKey("raw", k));
  const [alice, bob, carol] = [await makeDeviceKeys(), await makeDeviceKeys(), await makeDeviceKeys()];
  const reader = async (k) => ({
    keyId: await id(k.encryption.publicKey),
    privateKey: k.encryption.privateKey,
    point: await raw(k.encryption.publicKey),
  });
  const text = new TextEncoder().encode("Meet at the usual place.");
  const bytes = await envelope.seal({
    plaintext: text,
    senderKeyId: await id(alice.signing.publicKey),
    signingKey: alice.signing.privateKey,
    recipients: [await reader(bob), await reader(alice)].map(({ keyId, point }) => ({ keyId, point })),
  });
  const senderSpki = await spki(alice.signing.publicKey);
  const outcome = async (b, who, from = senderSpki) => {
    try {
      return new TextDecoder().decode((await envelope.open(b, { senderSpki: from, ...(await reader(who)) })).plaintext);
    } catch (e) {
      return e.kind || e.message;
    }
  };
  const flipped = bytes.slice();
  flipped[flipped.length - 70] ^= 1;
  return {
    bob: await outcome(bytes, bob),
    alice: await outcome(bytes, alice),
    carol: await outcome(bytes, carol),
    flipped: await outcome(flipped, bob),
    otherSender: await outcome(bytes, bob, await spki(carol.signing.publicKey)),
  };
}

/** Each sealed-file and FileLock vector opened as the Files screen opens it: the identity imported from its
 *  PKCS#8 PEM, the format from the first bytes; "success <SHA-256>" or the refusal's kind. */
async function openSealedVectors(vectors) {
  const sealed = await import("/js/sealed-file.js");
  const filelock = await import("/js/filelock.js");
  const { importIdentity } = await import("/js/file-keys.js");
  const { parsePublicKey } = await import("/js/pem.js");
  const out = {};
  for (const [name, v] of Object.entries(vectors)) {
    try {
      const identity = await importIdentity(atob(v.identity), async () => {
        throw new Error("no passphrase");
      });
      const bytes = fromHex(v.bytes);
      const format = sealed.detect(bytes);
      let plaintext;
      if (format === "filelock") {
        plaintext = await filelock.open(bytes, identity);
      } else {
        const expectedSender = v.from
          ? await parsePublicKey("-----BEGIN PUBLIC KEY-----\n" + v.from + "\n-----END PUBLIC KEY-----\n")
          : null;
        const r = await sealed.open(new Blob([bytes]), { identity, expectedSender });
        plaintext = new Uint8Array(await r.sink.blob().arrayBuffer());
      }
      out[name] = "success " + toHex(await crypto.subtle.digest("SHA-256", plaintext));
    } catch (e) {
      out[name] = e.kind || "error " + e.message;
    }
  }
  return out;
}

/** Vectors/safety_number.json through the page's module: both sides' digits, the number both ways round and
 *  its display, libsignal's vector, and the refusal of an empty key set. */
async function safetyNumberVector(file) {
  const sn = await import("/js/safety-number.js");
  const v = file.vector;
  const side = (s) => ({ username: s.username, signingKeys: s.signing_keys_spki.map(fromHex) });
  const number = await sn.safetyNumber(side(v.local), side(v.remote));
  const swapped = await sn.safetyNumber(side(v.remote), side(v.local));
  const ls = file.libsignal;
  const enc = (t) => new TextEncoder().encode(t);
  const a = await sn.digits(fromHex(ls.local.key_bytes), enc(ls.local.identifier), file.iterations);
  const b = await sn.digits(fromHex(ls.remote.key_bytes), enc(ls.remote.identifier), file.iterations);
  let empty = "";
  try {
    await sn.safetyNumber({ username: "x", signingKeys: [] }, side(v.remote));
  } catch (e) {
    empty = e.message;
  }
  return {
    keys: toHex(sn.keyBytes(side(v.local).signingKeys)),
    number,
    swapped,
    display: sn.display(number),
    libsignal: a < b ? a + b : b + a,
    empty,
    digits: [
      await sn.digits(sn.keyBytes(side(v.local).signingKeys), enc(v.local.username)),
      await sn.digits(sn.keyBytes(side(v.remote).signingKeys), enc(v.remote.username)),
    ],
  };
}

/** The authenticator's passcodes for RFC 6238's SHA-1 vectors (8 digits), and one of 6 with its window. */
async function totpVectors() {
  const { passcode } = await import("/js/authenticator/passcode.js");
  const secret = new TextEncoder().encode("12345678901234567890");
  const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  const out = [];
  for (const t of [59, 1111111109, 1111111111, 1234567890, 2000000000, 20000000000]) {
    out.push((await passcode({ totp: { key, period: 30, digits: 8 } }, t * 1000)).passcode);
  }
  const six = await passcode({ totp: { key, period: 30, digits: 6 } }, 59_000);
  return { out, six };
}
