// Pairing this browser as an authenticator of the signed-in account (docs/PROTOCOL.md §3.2): the server's
// pairing key, new non-extractable keys, the signed pairing request, the answer checked (pairing.js), the
// record kept (store.js), then the authenticator started (runtime.js).
import { base64url } from "../bytes.js";
import { makeDeviceKeys, signLowS, spki } from "../device-keys.js";
import { pairAuthenticator } from "../server/authenticator.js";
import { revokeDevice } from "../server/devices.js";
import { createPairingKey, mfaStatus } from "../server/mfa.js";
import { authenticatorName, challengeKey, pairingAnswerProblem, pairingMessage, totpKey } from "./pairing.js";
import { startAuthenticator } from "./runtime.js";
import { saveRecord } from "./store.js";

const ONLY_SECOND_FACTOR =
  "This browser can approve sign-ins only while you are signed in here, so it cannot be your only second " +
  "factor. Create recovery codes (or set up an authenticator app) under Two-factor sign-in first.";

/**
 * Pairs this browser for the signed-in account: a pairing key from the server (needs a recent sign-in:
 * the caller wraps this in withReauth), new keys, the signed pairing request, then the answer checked.
 * Starts the authenticator and returns its record.
 */
export async function pair(accountToken, account) {
  // This browser answers only while one of its tabs is signed in: as the account's only second factor it
  // could lock its owner out after a sign-out. Another way back in must exist first.
  const mfa = await mfaStatus(accountToken);
  if (!mfa.authenticators?.length && !mfa.totpApp && !mfa.recoveryCodesLeft) throw new Error(ONLY_SECOND_FACTOR);
  const issued = await createPairingKey(accountToken);
  const keys = await makeDeviceKeys();
  const signingSpki = await spki(keys.signing.publicKey);
  const encryptionSpki = await spki(keys.encryption.publicKey);
  const statement = await pairingMessage(issued.key, signingSpki, encryptionSpki);
  const signature = await signLowS(keys.signing.privateKey, statement);
  const info = await pairAuthenticator({
    pairingKey: issued.key,
    name: authenticatorName(navigator),
    signingKey: base64url(signingSpki),
    encryptionKey: base64url(encryptionSpki),
    signature: base64url(signature),
  });
  let record;
  try {
    const problem = pairingAnswerProblem(info, account);
    if (problem) throw new Error(problem);
    const signer = await challengeKey(info.jwks);
    record = {
      accountId: account.id,
      deviceId: info.deviceId,
      username: info.username,
      name: info.session?.device?.name ?? authenticatorName(navigator),
      signing: keys.signing,
      encryption: keys.encryption,
      challengeKey: signer,
      totp: await totpKey(info.totp, keys.encryption, signer),
      pairedAt: Date.now(),
    };
    await saveRecord(record);
  } catch (error) {
    // Paired on the server but not usable here: that authenticator is revoked at once, so the account
    // is never left with a second factor nobody holds.
    if (typeof info?.deviceId === "string") {
      await revokeDevice(info.deviceId, accountToken).catch(() => {});
    }
    throw error;
  }
  startAuthenticator(account.id, { record, token: info.session.token });
  return record;
}
