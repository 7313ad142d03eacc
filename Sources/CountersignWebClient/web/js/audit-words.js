// The audit log in words (Settings → Audit): each event the server records (kind and outcome, as
// docs/openapi.yaml's AuditEvent lists them) as a sentence a person reads, and whether it went wrong.
// Pure: no DOM. An outcome this client does not know yet is shown in plain words, never dropped.

// Per kind: what a success is called, and the noun a refusal or another outcome is said of.
const KINDS = {
  "account-created": ["Account created", "Account creation"],
  "sign-in": ["Signed in", "Sign-in"],
  "sign-out": ["Signed out", "Sign-out"],
  "sign-out-everywhere": ["Signed out everywhere", "Sign-out everywhere"],
  reauth: ["Password confirmed again", "Re-authentication"],
  "password-change": ["Password changed", "Password change"],
  "settings-change": ["Settings changed", "Settings change"],
  "device-register": ["Device added", "Device registration"],
  "device-session": ["Device session opened", "Device session"],
  "device-rename": ["Device renamed", "Device rename"],
  "device-revoke": ["Device revoked", "Device revocation"],
  "device-rotate": ["Message key changed", "Message key change"],
  "device-vouch": ["New device approved", "Device approval"],
  "approver-endorse": ["Authenticator allowed to approve new devices", "Authenticator endorsement"],
  "device-key-proof": ["Device keys proven (an older device)", "Device key proof"],
  mfa: ["Second step passed", "Second step"],
  "mfa-settings": ["Two-factor settings changed", "Two-factor settings"],
  "mfa-pairing-key": ["Pairing key made", "Pairing key"],
  "mfa-pair": ["Authenticator paired", "Authenticator pairing"],
  "mfa-unpair": ["Authenticator removed", "Authenticator removal"],
  "mfa-totp": ["Authenticator app set up", "Authenticator app"],
  "mfa-recovery-codes": ["Recovery codes made", "Recovery codes"],
  "mfa-push": ["Push approval changed", "Push approval"],
  "auth-code": ["Authentication code used", "Authentication code"],
  passkey: ["Passkey used", "Passkey"],
  "key-gate": ["Key gate changed", "Key gate"],
  "session-bound": ["This browser stays signed in", "Stay signed in"],
  "session-resumed": ["Signed in again after a reload", "Sign-in after a reload"],
  "oidc-authorize": ["Signed in to an app", "Sign-in to an app"],
  "oidc-consent": ["Allowed an app", "App permission"],
  "oidc-token": ["An app collected its tokens", "An app's tokens"],
  "oidc-logout": ["Signed out from an app", "Sign-out from an app"],
};

// How a second step was given: after "Signed in" / "approved".
const METHODS = {
  push: ["approved on your authenticator", "on your authenticator"],
  code: ["with a passcode", "with a passcode"],
  totp: ["with an authenticator code", "with an authenticator code"],
  "recovery-code": ["with a recovery code", "with a recovery code"],
  "auth-code": ["with an authentication code", "with an authentication code"],
  passkey: ["with a passkey", "with a passkey"],
};
const WRONG = {
  password: "wrong password",
  code: "wrong passcode",
  totp: "wrong authenticator code",
  "recovery-code": "wrong recovery code",
  "auth-code": "wrong authentication code",
  passkey: "not accepted",
};
const SECOND_STEP_FAILURES = {
  denied: "denied",
  reported: "reported as not them",
  "wrong-number": "the wrong number was picked",
  "too-many-codes": "too many wrong codes",
};
const REFUSALS = {
  delayed: "sign-in is delayed",
  locked: "the account is locked",
  superseded: "the password changed meanwhile",
};
// Outcomes said the same whatever the kind.
const PLAIN = {
  renamed: "renamed",
  removed: "removed",
  created: "added",
  refused: "refused",
  disabled: "turned off",
  "enroll-started": "set-up started",
  enrolled: "set up",
  generated: "made",
  allowed: "allowed",
  disallowed: "turned off",
  "revocation-token-set": "revocation token set",
  "self-revoked": "revoked by its own key gate",
  "bad-signature": "refused: bad signature",
  "pairing-grant": "with a pairing for a new authenticator",
  declined: "declined",
  "passkey-counter-not-increasing": "refused: its counter did not increase (it may have been copied)",
};
const GATE_EVENTS = {
  enabled: "turned on",
  disabled: "turned off",
  unlocked: "unlocked",
  "unlock-failed": "unlock failed",
  wiped: "wiped this browser's keys",
  "method-added": "way to unlock added",
  "method-removed": "way to unlock removed",
};
const GATE_METHODS = { prf: "passkey", password: "password" };
const NUMBER_MATCHING = { ENTER_MANUALLY: "type the number", SELECT_NUMBER: "pick the number", NONE: "none" };
const CODE_ACTIONS = { claim: "claimed", approve: "approved", deny: "denied" };

const words = (text) => text.replace(/[-_]+/g, " ").toLowerCase();
const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** The kinds that have words here: every kind docs/openapi.yaml lists (tested). */
export const KINDS_WITH_WORDS = new Set(Object.keys(KINDS));

/** `{kind, outcome}` as `{what, failed}`: "Signed in with a passkey", or "Sign-in refused: wrong password". */
export function auditWords({ kind, outcome }) {
  const [done, noun] = KINDS[kind] ?? [capital(words(kind)), capital(words(kind))];
  const said = (what, failed = false) => ({ what, failed });
  const refused = (why) => said(`${noun} refused: ${why}`, true);
  if (outcome === "success") return said(done);
  let m;
  if ((m = /^success-(.+)$/.exec(outcome)) && METHODS[m[1]]) {
    return said(m[1] === "push" ? `${done}, ${METHODS[m[1]][0]}` : `${done} ${METHODS[m[1]][0]}`);
  }
  if ((m = /^wrong-(password|passkey)(?:-(delayed|locked))?$/.exec(outcome))) {
    const then = { delayed: "; sign-in delayed", locked: "; account locked" }[m[2]] ?? "";
    return refused(`${WRONG[m[1]]}${then}`);
  }
  if ((m = /^wrong-(.+)$/.exec(outcome)) && WRONG[m[1]]) return refused(WRONG[m[1]]);
  if ((m = /^refused-(.+)$/.exec(outcome)) && REFUSALS[m[1]]) return refused(REFUSALS[m[1]]);
  if (outcome === "password-ok-second-factor-pending") return said("Password accepted; second step pending");
  if ((m = /^second-factor-(.+)$/.exec(outcome))) {
    return said(`Second step failed: ${SECOND_STEP_FAILURES[m[1]] ?? words(m[1])}`, true);
  }
  if ((m = /^approved-(.+)$/.exec(outcome)) && METHODS[m[1]]) return said(`Second step approved ${METHODS[m[1]][1]}`);
  if (kind === "key-gate" && (m = /^(.+)-(prf|password)$/.exec(outcome)) && GATE_EVENTS[m[1]]) {
    return said(`Key gate: ${GATE_EVENTS[m[1]]} (${GATE_METHODS[m[2]]})`, m[1] === "unlock-failed" || m[1] === "wiped");
  }
  if ((m = /^(ENTER_MANUALLY|SELECT_NUMBER|NONE)-(\d+)$/.exec(outcome))) {
    return said(`Number matching set: ${NUMBER_MATCHING[m[1]]}, ${m[2]} digits`);
  }
  if (kind === "auth-code" && (m = /^(claim|approve|deny)-(\w+)$/.exec(outcome))) {
    const ended = m[2] === "expired" ? " (it had expired)" : "";
    return said(`Authentication code ${CODE_ACTIONS[m[1]]}${ended}`, m[1] === "deny" || m[2] === "expired");
  }
  if (Object.hasOwn(PLAIN, outcome)) {
    const failed = ["refused", "bad-signature", "passkey-counter-not-increasing"].includes(outcome);
    return said(`${noun} ${PLAIN[outcome]}`, failed);
  }
  return said(`${noun}: ${words(outcome)}`, /refused|wrong|failed|locked|denied/.test(outcome));
}
