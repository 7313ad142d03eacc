// The safety number with one user, as Messages and Contacts show it: the 60 digits and their QR code,
// computed from one directory answer per account, with this browser's own key standing in for what the
// server lists for it. "Trust" pins that same answer and asks the server nothing more, so what is
// pinned is exactly what the user compared.
import { describe } from "../api.js";
import { el, replace } from "../dom.js";
import { directory, safetyKeys, trust } from "../pins.js";
import { qrCode } from "../qr.js";
import { display, safetyNumber } from "../safety-number.js";

/**
 * Fills `panel` with `heading`, `intro` and the safety number of this account and `username`.
 * - `identity()`: this browser's identity for the pin rules (messages.js ownIdentity), read fresh.
 * - `offerTrust(theirs, own)`: whether to add "Trust" under the number.
 * - `onTrusted(theirs)`: runs once "Trust" pinned the answer; `onError(error)` when it failed.
 * Resolves with `{ theirs, own }`, or null when no number could be computed (the reason is shown).
 */
export async function showSafetyNumber(panel, username, {
  heading,
  intro,
  identity,
  offerTrust = async () => false,
  onTrusted = () => {},
  onError = () => {},
}) {
  const number = el("p", { class: "safety mono", "aria-label": "Safety number" }, "Computing the safety number…");
  replace(panel, el("h2", {}, heading), el("p", {}, intro), number);
  let own;
  let theirs;
  try {
    own = await identity();
    const mine = await directory(own.username);
    theirs = await directory(username);
    const digits = await safetyNumber(
      { username: mine.username, signingKeys: await safetyKeys(mine, own) },
      { username: theirs.username, signingKeys: await safetyKeys(theirs, own) },
    );
    if (!panel.contains(number)) return null; // another number was asked for meanwhile
    number.textContent = display(digits);
    // The same 60 digits to scan, for two people in one room.
    number.after(qrCode(digits, { label: `QR code of the safety number with ${theirs.username}` }));
    if (!(await offerTrust(theirs, own))) return { theirs, own };
  } catch (error) {
    if (panel.contains(number)) number.textContent = `No safety number: ${describe(error)}`;
    return null;
  }
  const trustButton = el("button", { type: "button", class: "primary" }, "Trust");
  panel.append(trustButton);
  trustButton.addEventListener("click", async () => {
    trustButton.disabled = true;
    try {
      await trust(theirs, own);
      trustButton.remove();
      onTrusted(theirs);
    } catch (error) {
      trustButton.disabled = false;
      onError(error);
    }
  });
  return { theirs, own };
}
