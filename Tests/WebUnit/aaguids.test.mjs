// aaguids.js: passkey providers' names by AAGUID (data only: a name, never a decision).
import assert from "node:assert/strict";
import test from "node:test";

import { authenticatorName } from "../../Sources/CountersignWebClient/web/js/aaguids.js";

test("known AAGUIDs are named, in either case", () => {
  assert.equal(authenticatorName("ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"), "Google Password Manager");
  assert.equal(authenticatorName("FBFC3007-154E-4ECC-8C0B-6E020557D7BD"), "Apple Passwords");
  assert.equal(authenticatorName("08987058-cadc-4b81-b6e1-30de50dcbe96"), "Windows Hello");
  assert.equal(authenticatorName("9ddd1817-af5a-4672-a2b9-3e3dd95000a9"), "Windows Hello");
});

test("an unknown, all-zero or malformed AAGUID has no name", () => {
  const zero = "00000000-0000-0000-0000-000000000000";
  for (const aaguid of [zero, "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d5", "", null, undefined]) {
    assert.equal(authenticatorName(aaguid), null, String(aaguid));
  }
});
