// The rules this page shares with the Swift code, written once here. Both sides run the same cases from
// Tests/CountersignCryptoTests/Vectors/client_rules.json: Tests/WebUnit/rules.test.mjs against this module,
// Tests/CountersignServerTests/ClientRulesTests.swift against UsernameRule, Base64URL, KeyPins and the server.

/** UsernameRule.description: the rule in words, as refusals say it. */
export const USERNAME_RULE =
  "3 to 32 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit";

/** NewPassword's rule in words (the server counts Unicode code points). */
export const PASSWORD_RULE = "8 to 128 characters; a passphrase of a few words is easiest to remember";

/** UsernameRule.normalised: the name in lower case, or null when `raw` breaks the rule. Nothing is trimmed,
 *  and a name with any non-ASCII character is refused before it is lower-cased: toLowerCase() maps some
 *  (the Kelvin sign) to ASCII letters. */
export function normalisedUsername(raw) {
  if (typeof raw !== "string" || !/^[\x00-\x7f]*$/.test(raw)) return null;
  const name = raw.toLowerCase();
  return /^[a-z0-9][a-z0-9._-]{1,30}[a-z0-9]$/.test(name) ? name : null;
}

/** Whether `name` is a username as the server keeps it (already normalised): checked on every name a server
 *  supplies, so nothing that only looks like a username is shown or pinned. */
export const isUsername = (name) => typeof name === "string" && normalisedUsername(name) === name;

/** KeyPins.maxHistory: the longest key history (of one device) a rotation is followed through. */
export const PIN_HISTORY_LIMIT = 1_000;

/** ServerConfiguration.maxDevicesPerAccount's default: a directory listing more is refused. */
export const DIRECTORY_DEVICE_LIMIT = 10;

/** AccountSettings.reauthChoices (the server's AccountService.reauthChoices): the re-authentication
 *  intervals in minutes, 0 being never, with the words the settings screen shows. */
export const REAUTH_CHOICES = [
  [0, "Never"],
  [5, "5 min"],
  [10, "10 min"],
  [30, "30 min"],
  [60, "1 hr"],
];

/** A key ID (docs/SPEC.md §2.4) in hex: 32 lower-case digits. */
export const isKeyId = (text) => typeof text === "string" && /^[0-9a-f]{32}$/.test(text);

/** KeyPins.fingerprint(hex:): a key ID as shown, four groups of 8 lower-case hex digits joined by colons;
 *  text that is not 16 bytes of hex (either case) unchanged. */
export const fingerprint = (keyIdHex) =>
  typeof keyIdHex === "string" && /^[0-9a-fA-F]{32}$/.test(keyIdHex)
    ? keyIdHex.toLowerCase().match(/.{8}/g).join(":")
    : keyIdHex;
