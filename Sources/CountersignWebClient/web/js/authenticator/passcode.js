// An authenticator's one-time passcodes (docs/PROTOCOL.md §3.8; SPEC §5): RFC 6238 over the TOTP secret,
// which exists in the browser only as a non-extractable HMAC key. Pure: WebCrypto only.

/** PingOne's OneTimePasscodeInfo for `now` (ms): RFC 6238 over the non-extractable HMAC key. */
export async function passcode(record, now = Date.now()) {
  const { key, period, digits } = record.totp;
  const step = Math.floor(now / 1000 / period);
  const counter = new Uint8Array(8);
  new DataView(counter.buffer).setBigUint64(0, BigInt(step));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, counter));
  const at = mac[mac.length - 1] & 0x0f;
  const binary = ((mac[at] & 0x7f) << 24) | (mac[at + 1] << 16) | (mac[at + 2] << 8) | mac[at + 3];
  return {
    passcode: String(binary % 10 ** digits).padStart(digits, "0"),
    validFrom: step * period,
    validUntil: (step + 1) * period,
    timeWindowSize: period,
  };
}
