// Hardening of the page's parsers and slow work: scrypt in a worker, key files crafted to be non-canonical,
// and the push challenge's JWS header. (How these files are run: page.js.)

/** scrypt with N = `n` in the page's worker, a heartbeat every 10 ms meanwhile (its gaps: how long the page
 *  froze), RFC 7914's third vector, each refusal's words, and how many workers were made and ended. */
async function scryptInAWorker({ n }) {
  const { scrypt } = await import("/js/scrypt.js");
  // Every worker made and ended, counted through the constructor scrypt.js calls.
  const counts = { made: 0, ended: 0 };
  const Real = globalThis.Worker;
  globalThis.Worker = class extends Real {
    constructor(...args) {
      super(...args);
      counts.made++;
    }
    terminate() {
      counts.ended++;
      super.terminate();
    }
  };
  const x = (b) => Array.from(b, (c) => c.toString(16).padStart(2, "0")).join("");
  const e = new TextEncoder();
  try {
    // A heartbeat every 10 ms while the derivation runs: its gaps are how long the page froze.
    let last = performance.now(),
      beats = 0,
      beating = true;
    const gaps = [];
    const beat = () => {
      const now = performance.now();
      gaps.push(Math.round(now - last));
      last = now;
      beats++;
      if (beating) setTimeout(beat, 10);
    };
    setTimeout(beat, 10);
    const started = performance.now();
    const big = x(await scrypt(e.encode("password"), e.encode("NaCl"), n, 8, 1, 64));
    const ms = performance.now() - started;
    beating = false;
    // RFC 7914 §12's third vector, the one the key file tests use too.
    const rfc = x(await scrypt(e.encode("pleaseletmein"), e.encode("SodiumChloride"), 16384, 8, 1, 64));
    const errors = {};
    for (const [name, args] of Object.entries({
      nNotPowerOfTwo: [3, 8, 1, 32],
      nOne: [1, 8, 1, 32],
      rZero: [16, 0, 1, 32],
      pFraction: [16, 8, 1.5, 32],
      lengthZero: [16, 8, 1, 0],
      tooMuchMemory: [2 ** 24, 1024, 1, 32],
    })) {
      try {
        await scrypt(e.encode("pw"), e.encode("salt"), ...args);
        errors[name] = "resolved";
      } catch (error) {
        errors[name] = error.message;
      }
    }
    const long = gaps.filter((g) => g >= 200);
    return { big, rfc, ms, longest: Math.max(...gaps), long, beats, errors, ...counts };
  } finally {
    globalThis.Worker = Real;
  }
}

/** Each crafted key file (name → [label, PEM]) read as a public or a private key: "ok" or the refusal's words. */
async function readCraftedKeys(cases) {
  const { parsePublicKey } = await import("/js/pem.js");
  const { readPrivateKeyFile } = await import("/js/pkcs8.js");
  const out = {};
  for (const [name, [label, text]] of Object.entries(cases)) {
    try {
      if (label === "PUBLIC KEY") await parsePublicKey(text);
      else await readPrivateKeyFile(text, async () => new TextEncoder().encode("hunter22"));
      out[name] = "ok";
    } catch (e) {
      out[name] = e.message;
    }
  }
  return out;
}

/** Push challenges signed by the server's key, each with another JWS header, verified by the authenticator:
 *  "accepted" or the refusal's words, for each header. */
async function challengeHeaders() {
  const { verifyChallenge } = await import("/js/authenticator/challenge.js");
  const b64 = (bytes) =>
    btoa(String.fromCharCode(...new Uint8Array(bytes)))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
  const enc = (s) => new TextEncoder().encode(s);
  const hex = (b) => Array.from(new Uint8Array(b), (c) => c.toString(16).padStart(2, "0")).join("");
  const ecdsa = { name: "ECDSA", namedCurve: "P-256" };
  // The server's challenge key, as pairing stores it; and another key, which a token might carry.
  const server = await crypto.subtle.generateKey(ecdsa, true, ["sign", "verify"]);
  const other = await crypto.subtle.generateKey(ecdsa, true, ["sign", "verify"]);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", server.publicKey));
  const kid = hex((await crypto.subtle.digest("SHA-256", spki)).slice(0, 16));
  const record = {
    deviceId: "hzjws-device",
    username: "hzjws",
    challengeKey: { kid, spki, issuer: `countersign:${kid}` },
  };
  const iat = Math.floor(Date.now() / 1000);
  const claims = {
    iss: `countersign:${kid}`,
    aud: "hzjws-device",
    sub: "hzjws",
    txn: "hz-txn",
    nonce: b64(crypto.getRandomValues(new Uint8Array(32))),
    iat,
    exp: iat + 120,
    ctx: { address: "127.0.0.1", userAgent: "test", time: iat },
    nm: { type: "ENTER_MANUALLY" },
  };
  // Every token is signed correctly by the server's key: only its header differs.
  const token = async (header) => {
    const headerText = typeof header === "string" ? header : JSON.stringify(header);
    const input = `${b64(enc(headerText))}.${b64(enc(JSON.stringify(claims)))}`;
    const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, server.privateKey, enc(input));
    return `${input}.${b64(signature)}`;
  };
  const h = { alg: "ES256", kid, typ: "JWT" };
  const jwk = await crypto.subtle.exportKey("jwk", other.publicKey);
  const cases = {
    plain: h,
    noTyp: { alg: "ES256", kid },
    critExp: { ...h, crit: ["exp"], exp: iat + 60 },
    critEmpty: { ...h, crit: [] },
    critB64: { ...h, crit: ["b64"], b64: false },
    b64False: { ...h, b64: false },
    b64True: { ...h, b64: true },
    jwk: { ...h, jwk },
    jku: { ...h, jku: "https://attacker.example/jwks.json" },
    x5u: { ...h, x5u: "https://attacker.example/cert.pem" },
    x5c: { ...h, x5c: ["MIIB"] },
    typJose: { ...h, typ: "JOSE" },
    typAccessToken: { ...h, typ: "at+jwt" },
    typNotString: { ...h, typ: 1 },
    headerArray: `["ES256"]`,
    headerNull: "null",
  };
  const out = {};
  for (const [name, header] of Object.entries(cases)) {
    const r = await verifyChallenge(record, await token(header));
    out[name] = r.request ? "accepted" : r.refused;
  }
  return out;
}
