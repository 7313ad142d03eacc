// WebAuthn in the page: passkeys registered through the API, and navigator.credentials watched or changed.
// (How these files are run: page.js; the init scripts through support.page_script.)

/** Registers a passkey through the API as the passkey screens do: the server's options parsed (they ask whether
 *  the passkey has a PRF, `prf: {}`, and evaluate nothing: SPEC §14.7), create(), and toJSON() posted without
 *  its extension outputs. Returns what the browser said of the PRF: { enabled, results }. */
async function registerPasskey(name) {
  const { session } = await import("/js/session.js");
  const post = async (path, json) => {
    const r = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${session.token}` },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${path}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const start = await post("/v1/me/passkeys/options");
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(start.publicKey);
  const credential = await navigator.credentials.create({ publicKey });
  const prf = credential.getClientExtensionResults().prf;
  const json = credential.toJSON();
  delete json.clientExtensionResults;
  await post("/v1/me/passkeys", { ceremonyId: start.ceremonyId, name: name ?? "Test passkey", credential: json });
  return { enabled: prf?.enabled ?? null, results: Boolean(prf?.results?.first) };
}

/** Every WebAuthn call the page makes, in `window.__webauthn`: its kind, mediation, whether it was aborted, and
 *  how it ended (an init script). */
function spyOnWebAuthn() {
  const calls = (window.__webauthn = []);
  for (const kind of ["get", "create"]) {
    const original = navigator.credentials[kind].bind(navigator.credentials);
    navigator.credentials[kind] = (options = {}) => {
      const call = { kind, mediation: options.mediation ?? "optional", aborted: false, state: "pending" };
      calls.push(call);
      options.signal?.addEventListener("abort", () => (call.aborted = true));
      return original(options).then(
        (credential) => ((call.state = "resolved"), credential),
        (error) => ((call.state = error.name), Promise.reject(error)),
      );
    };
  }
}

/** Wraps navigator.credentials.get: while window.__clearUserVerified is set, the assertion's authenticator data
 *  comes back with the user-verified flag (bit 2 of byte 32) cleared, as from an authenticator that did not
 *  verify anyone, while Chromium's virtual authenticator still answers (it then evaluates the PRF regardless). */
function clearUserVerified() {
  const real = navigator.credentials.get.bind(navigator.credentials);
  navigator.credentials.get = async (options) => {
    const credential = await real(options);
    if (!credential || !window.__clearUserVerified) return credential;
    const data = new Uint8Array(credential.response.authenticatorData.slice(0));
    data[32] &= ~0x04;
    const pass = (target, key) => (typeof target[key] === "function" ? target[key].bind(target) : target[key]);
    const response = new Proxy(credential.response, {
      get: (r, k) => (k === "authenticatorData" ? data.buffer : pass(r, k)),
    });
    return new Proxy(credential, { get: (c, k) => (k === "response" ? response : pass(c, k)) });
  };
}

/** Every PRF output the page is given (SPEC §14.7: the key gate's secret), as hex, kept in sessionStorage so a
 *  reload keeps the list: what getClientExtensionResults() returns, and what toJSON() of each credential that
 *  navigator.credentials.create/get resolves with would carry (an init script). */
function recordPrfOutputs() {
  if (typeof PublicKeyCredential !== "function") return;
  const KEY = "__prfSeen";
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const fromBase64url = (v) =>
    Uint8Array.from(atob(v.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((v.length + 3) % 4)), (c) =>
      c.charCodeAt(0),
    );
  const bytesOf = (v) =>
    typeof v === "string"
      ? fromBase64url(v)
      : ArrayBuffer.isView(v)
        ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
        : new Uint8Array(v);
  const note = (value) => {
    if (value === undefined || value === null) return;
    const seen = JSON.parse(sessionStorage.getItem(KEY) || "[]");
    const h = hex(bytesOf(value));
    if (!seen.includes(h)) seen.push(h);
    sessionStorage.setItem(KEY, JSON.stringify(seen));
    window.__prfSeen = seen;
  };
  const record = (outputs) => {
    const results = outputs?.prf?.results;
    if (results) {
      note(results.first);
      note(results.second);
    }
  };
  const real = PublicKeyCredential.prototype.getClientExtensionResults;
  PublicKeyCredential.prototype.getClientExtensionResults = function () {
    const outputs = real.call(this);
    record(outputs);
    return outputs;
  };
  for (const kind of ["create", "get"]) {
    const original = navigator.credentials[kind].bind(navigator.credentials);
    navigator.credentials[kind] = async (options) => {
      const credential = await original(options);
      if (credential) {
        record(real.call(credential));
        record(credential.toJSON().clientExtensionResults);
      }
      return credential;
    };
  }
}
