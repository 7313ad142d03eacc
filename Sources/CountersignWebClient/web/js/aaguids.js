// Names of well-known passkey providers by AAGUID (the authenticator model a passkey names when it is
// made), to tell the user which of their passkeys is which. Data only: an AAGUID is the authenticator's
// own claim (attestation "none" checks nothing), so it names and never decides.
//
// Copied from github.com/passkeydeveloper/passkey-authenticator-aaguids, the community list made for
// this use: `dist/<aaguid>/meta.json` at commit b976141b732e0ded22d4dca0a505660eac3fa1d6, and Windows
// Hello's second AAGUID from `aaguid.json` at 05ab14246014c51fbeb2bfe063bee3424055ce27. A JS module
// rather than a .json file because the server serves only the web client's HTML, CSS and JS.
const names = new Map([
  ["ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4", "Google Password Manager"],
  ["adce0002-35bc-c60a-648b-0b25f1f05503", "Chrome on Mac"],
  ["b5397666-4885-aa6b-cebf-e52262a439a2", "Chromium Browser"],
  ["771b48fd-d3d4-4f74-9232-fc157ab0507a", "Edge on Mac"],
  ["08987058-cadc-4b81-b6e1-30de50dcbe96", "Windows Hello"],
  ["9ddd1817-af5a-4672-a2b9-3e3dd95000a9", "Windows Hello"],
  ["d3452668-01fd-4c12-926c-83a4204853aa", "Microsoft Password Manager"],
  ["fbfc3007-154e-4ecc-8c0b-6e020557d7bd", "Apple Passwords"],
  ["dd4ec289-e01d-41c9-bb89-70fa845d4bf2", "iCloud Keychain (Managed)"],
  ["53414d53-554e-4700-0000-000000000000", "Samsung Pass"],
  ["bada5566-a7aa-401f-bd96-45619a55120d", "1Password"],
  ["d548826e-79b4-db40-a3d8-11116f7e8349", "Bitwarden"],
  ["531126d6-e717-415c-9320-3d9aa6981239", "Dashlane"],
  ["f3809540-7f14-49c1-a8b3-8f813b225541", "Enpass"],
  ["fdb141b2-5d84-443e-8a35-4698c205a502", "KeePassXC"],
  ["0ea242b4-43c4-4a1b-8b17-dd6d0b6baec6", "Keeper"],
  ["b78a0a55-6ef8-d246-a042-ba0f6d55050c", "LastPass"],
  ["b84e4048-15dc-4dd0-8640-f4f60813c8af", "NordPass"],
  ["50726f74-6f6e-5061-7373-50726f746f6e", "Proton Pass"],
  ["de503f9c-21a4-4f76-b4b7-558eb55c6f89", "Devolutions"],
  ["a10c6dd9-465e-4226-8198-c7c44b91c555", "Kaspersky Password Manager"],
  ["ee882879-721c-4913-9775-3dfcce97072a", "YubiKey 5 Series"],
  ["2fc0579f-8113-47ea-b116-bb5a8db9202a", "YubiKey 5 Series with NFC"],
]);

/** The provider's name for `aaguid` (UUID text), or null when it is unknown or all zeros. */
export function authenticatorName(aaguid) {
  return names.get(String(aaguid).toLowerCase()) ?? null;
}
