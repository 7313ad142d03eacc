// The key gate (docs/SPEC.md §14) through the page's own modules: whether it is open, its changes, attempts
// made at once, and wrapped keys tried as keys. (How these files are run: page.js.)

/** Whether the signed-in account's gate is open now. */
async function isUnlockedNow() {
  const { isUnlocked } = await import("/js/gate-keys.js");
  const { session } = await import("/js/session.js");
  const { savedBinding } = await import("/js/stay-signed-in.js");
  // On "Locked" (a reload) there is no session yet: the account is the saved binding's.
  return isUnlocked(session.account?.id ?? (await savedBinding())?.accountId);
}

/** Every change of any gate from now on, in `window.__gateChanges` (true: opened, false: closed). */
async function watchGateChanges() {
  const { on } = await import("/js/events.js");
  window.__gateChanges = [];
  on("gate-changed", ({ unlocked }) => window.__gateChanges.push(unlocked));
}

/** Turns the gate on with the password (a limit of 10 attempts), then locks it. */
async function enableWithPasswordAndLock(id) {
  const setup = await import("/js/gate-setup.js");
  await setup.enableWithPassword(id, "correct horse battery", 10);
  (await import("/js/gate-keys.js")).lock();
}

/** An unlock's outcome in words: "unlocked", or "kind:attemptsLeft". */
const unlockOutcome = (o) =>
  o.status === "fulfilled" ? "unlocked" : `${o.reason?.kind ?? o.reason?.message}:${o.reason?.attemptsLeft ?? ""}`;

/** `n` wrong passwords at once through the page's own module; each outcome as unlockOutcome says. */
async function wrongPasswordsAtOnce([accountId, n]) {
  const gate = await import("/js/gate.js");
  const tries = Array.from({ length: n }, () => gate.unlockWithPassword(accountId, "not the password"));
  return (await Promise.allSettled(tries)).map(unlockOutcome);
}

/** These passwords tried at once; each outcome as unlockOutcome says. */
async function passwordsAtOnce([accountId, passwords]) {
  const gate = await import("/js/gate.js");
  const tries = passwords.map((password) => gate.unlockWithPassword(accountId, password));
  return (await Promise.allSettled(tries)).map(unlockOutcome);
}

/** Each wrapped private key (hex), and it without its last 16 bytes, imported as a PKCS#8 ECDSA and ECDH key:
 *  "imported" or the error's name, for each. */
async function importWrappedKeys(hexes) {
  const h = (s) => Uint8Array.from(s.match(/../g), (b) => parseInt(b, 16));
  const kinds = [
    [{ name: "ECDSA", namedCurve: "P-256" }, ["sign"]],
    [{ name: "ECDH", namedCurve: "P-256" }, ["deriveBits"]],
  ];
  const out = [];
  for (const x of hexes) {
    for (const bytes of [h(x), h(x).subarray(0, h(x).length - 16)]) {
      for (const [alg, use] of kinds) {
        try {
          await crypto.subtle.importKey("pkcs8", bytes, alg, false, use);
          out.push("imported");
        } catch (e) {
          out.push(e.name);
        }
      }
    }
  }
  return out;
}
