// Pairing this browser as an authenticator (docs/PROTOCOL.md §3.2), the parts that need no server: the
// signed pairing statement, the checks of the server's answer (its challenge key, its TOTP secret sealed
// to this authenticator), and the name the authenticator gives itself. Pure: WebCrypto, no DOM, no storage.
import { concat, fromBase64url, hex, lv, sha256, utf8 } from "../bytes.js";
import { spki } from "../device-keys.js";
import { open as openEnvelope } from "../envelope.js";
import { rawPoint } from "../hpke.js";
import { agentWords } from "../user-agent.js";

const TOTP_CONTENT_TYPE = "application/x-countersign-totp-secret";
const ECDSA = { name: "ECDSA", namedCurve: "P-256" };

/** What the authenticator signs to pair: DeviceProof.pairingMessage. */
export async function pairingMessage(pairingKey, signingSpki, encryptionSpki) {
  return concat(
    utf8("countersign/v1 authenticator pairing"),
    new Uint8Array([0]),
    await sha256(concat(lv(utf8(pairingKey)), lv(signingSpki), lv(encryptionSpki))),
  );
}

/** The authenticator's name on the account (64 characters at most). */
export const authenticatorName = ({ userAgent, platform }) =>
  `Approvals in ${agentWords(userAgent, platform)}`.slice(0, 64);

/** Why the server's pairing answer is refused, or null: every authenticator paired, for this account, one
 *  device named. */
export function pairingAnswerProblem(info, account) {
  const failed = (info.authenticators ?? []).filter((a) => a.status !== "COMPLETED");
  if (failed.length)
    return `Pairing ${failed.map((a) => `${a.type}: ${a.status} ${a.errorMessage ?? ""}`.trim()).join(", ")}.`;
  if (info.username !== account.username) {
    return `The server paired this browser for ${info.username}, not ${account.username}.`;
  }
  if (info.session?.device?.id !== undefined && info.session.device.id !== info.deviceId) {
    return "The server's pairing answer names two devices.";
  }
  return null;
}

/** The server's challenge key from the pairing answer's JWKS, checked: its `kid` must be its own key ID
 *  (SPEC §2.4), so a key and a name that disagree are refused. */
export async function challengeKey(jwks) {
  const jwk = jwks?.keys?.find((k) => k.kty === "EC" && k.crv === "P-256" && k.alg === "ES256" && k.use === "sig");
  if (!jwk || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
    throw new Error("The server sent no challenge key (ES256, P-256): pairing refused.");
  }
  let key;
  try {
    const point = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y };
    key = await crypto.subtle.importKey("jwk", point, ECDSA, true, ["verify"]);
  } catch {
    throw new Error("The server's challenge key is not a P-256 point: pairing refused.");
  }
  const keySpki = await spki(key);
  const kid = hex((await sha256(keySpki)).subarray(0, 16));
  if (jwk.kid !== kid) throw new Error("The server's challenge key does not match its key ID: pairing refused.");
  return { kid, spki: keySpki, issuer: `countersign:${kid}` };
}

/** The TOTP secret: opened only if the server's challenge key signed it, then kept as an HMAC key the
 *  page can use and never read; the bytes are wiped. */
export async function totpKey(sealed, encryption, signer) {
  const { algorithm, digits, period } = sealed ?? {};
  if (algorithm !== "SHA1" || digits !== 6 || !Number.isInteger(period) || period < 1) {
    throw new Error("The server's passcode settings are not SHA1, 6 digits: pairing refused.");
  }
  const encryptionSpki = await spki(encryption.publicKey);
  const opened = await openEnvelope(fromBase64url(sealed.envelope), {
    senderSpki: signer.spki,
    keyId: (await sha256(encryptionSpki)).subarray(0, 16),
    privateKey: encryption.privateKey,
    point: await rawPoint(encryption.publicKey),
  });
  try {
    if (opened.contentType !== TOTP_CONTENT_TYPE || opened.plaintext.length !== 20) {
      throw new Error("The server's passcode secret is malformed: pairing refused.");
    }
    const hmac = { name: "HMAC", hash: "SHA-1" };
    const key = await crypto.subtle.importKey("raw", opened.plaintext, hmac, false, ["sign"]);
    return { key, period: sealed.period, digits: sealed.digits };
  } finally {
    opened.plaintext.fill(0);
  }
}
