// The key gate's passkey prompt (docs/SPEC.md §14.4): one prompt both re-authenticates the session and
// unlocks. It is the server's passkey re-authentication ceremony, with `extensions.prf.evalByCredential`
// built from this browser's own gate record. The PRF output is used here only; the JSON sent to the server
// has no extension outputs (credentialForServer).
import { fromBase64url } from "./bytes.js";
import { refuse } from "./gate-rules.js";
import { credentialForServer } from "./passkeys.js";
import {
  listPasskeys,
  passkeyReauth,
  passkeySignIn,
  startPasskeyReauth,
  startPasskeySignIn,
} from "./server/passkeys.js";
import { session } from "./session.js";

/**
 * Re-authenticates the session with a passkey, asking each credential in `salts` (base64url credential ID
 * → 32-byte salt) for its PRF at its salt. `pick` maps the server's options to the salts when they are not
 * known yet. `signIn`: sign in with the passkey instead (no session yet). Returns { credentialId, prfOutput
 * (null without one), signedIn (the Session of a sign-in, else null) }.
 */
export async function passkeyCeremony(salts, pick, { signIn = false } = {}) {
  // Without a session yet (the "Locked" screen of a reload, screens/locked.js): a passkey sign-in, so the one
  // prompt signs in and unlocks. Its options name no credential (discoverable): the gate's are asked for.
  const start = signIn ? await startPasskeySignIn() : await startPasskeyReauth();
  if (pick) salts = await pick(start.publicKey.allowCredentials);
  const allowed = signIn
    ? [...salts.keys()].map((id) => ({ id, type: "public-key" }))
    : start.publicKey.allowCredentials.filter((c) => salts.has(c.id));
  const options = PublicKeyCredential.parseRequestOptionsFromJSON({
    ...start.publicKey,
    // Only the passkeys that can unlock: evalByCredential may name no other.
    allowCredentials: allowed,
  });
  if (!options.allowCredentials.length) throw refuse("other passkey");
  const evalByCredential = Object.fromEntries([...salts].map(([id, salt]) => [id, { first: salt }]));
  options.extensions = { prf: { evalByCredential } };
  let credential;
  try {
    credential = await navigator.credentials.get({ publicKey: options });
  } catch {
    throw refuse("cancelled");
  }
  if (!credential) throw refuse("cancelled");
  // User verification (flags bit 2, SPEC §13.3): without it an authenticator evaluates another PRF, and
  // the server would count the assertion as a wrong passkey.
  const flags = new Uint8Array(credential.response.authenticatorData)[32];
  if (!(flags & 0x04)) throw refuse("not verified");
  const first = credential.getClientExtensionResults().prf?.results?.first;
  const answer = { ceremonyId: start.ceremonyId, credential: credentialForServer(credential) };
  let signedIn = null;
  if (signIn) signedIn = await passkeySignIn(answer);
  else {
    await passkeyReauth(answer);
    session.authenticated();
  }
  return { credentialId: new Uint8Array(credential.rawId), prfOutput: first ? new Uint8Array(first) : null, signedIn };
}

/**
 * A `pick` for passkeyCeremony over the account's passkeys that `include` (a summary → bool) admits: each
 * summary names its credential, so a salt goes with the passkey it belongs to. `enough(allow, salts)`
 * checks the server's options against them. `salts` holds what was picked, after the prompt.
 */
export function saltPicker(include, enough, ifNone) {
  const picker = {
    salts: null,
    pick: async (allow) => {
      const { passkeys } = await listPasskeys();
      picker.salts = new Map(passkeys.filter(include).map((p) => [p.credentialId, fromBase64url(p.prfSalt)]));
      if (ifNone && !picker.salts.size) throw ifNone();
      if (!enough(allow, picker.salts)) throw new Error("Your passkeys changed meanwhile. Try again.");
      return picker.salts;
    },
  };
  return picker;
}
