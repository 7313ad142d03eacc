// rules.js and bytes.js against client_rules.json, the cases Tests/CountersignServerTests/ClientRulesTests.swift
// runs against the Swift rules (UsernameRule, Base64URL, KeyPins, the server's re-authentication choices).
import assert from "node:assert/strict";
import test from "node:test";

import { fromBase64url } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import {
  DIRECTORY_DEVICE_LIMIT,
  fingerprint,
  isUsername,
  normalisedUsername,
  PIN_HISTORY_LIMIT,
  REAUTH_CHOICES,
  USERNAME_RULE,
} from "../../Sources/CountersignWebClient/web/js/rules.js";
import { json, toHex } from "./support/vectors.mjs";

const rules = json("client_rules.json");

test("the username rule: accepted names and their normalised forms, refused names", () => {
  assert.equal(USERNAME_RULE, rules.username.description);
  for (const { raw, normalised } of rules.username.accepted) {
    assert.equal(normalisedUsername(raw), normalised, JSON.stringify(raw));
    assert.equal(isUsername(normalised), true, normalised);
    assert.equal(isUsername(raw), raw === normalised, JSON.stringify(raw));
  }
  for (const { raw, comment } of rules.username.refused) {
    assert.equal(normalisedUsername(raw), null, `${JSON.stringify(raw)}: ${comment}`);
    assert.equal(isUsername(raw), false, `${JSON.stringify(raw)}: ${comment}`);
  }
});

test("base64url: canonical unpadded texts read, every other refused", () => {
  for (const { text, hex } of rules.base64url.accepted) assert.equal(toHex(fromBase64url(text)), hex, text);
  for (const { text, comment } of rules.base64url.refused) {
    assert.throws(() => fromBase64url(text), `${JSON.stringify(text)}: ${comment}`);
  }
});

test("key IDs as shown: four groups of 8, other text unchanged", () => {
  for (const { hex, shown } of rules.key_id_fingerprint) assert.equal(fingerprint(hex), shown, hex);
});

test("the pin limits and the re-authentication choices", () => {
  assert.equal(PIN_HISTORY_LIMIT, rules.pin_history_limit);
  assert.equal(DIRECTORY_DEVICE_LIMIT, rules.directory_device_limit);
  assert.deepEqual(REAUTH_CHOICES.map(([minutes]) => minutes), rules.reauth_choices_minutes);
  for (const [minutes, words] of REAUTH_CHOICES) assert.ok(words, `words for ${minutes}`);
});
