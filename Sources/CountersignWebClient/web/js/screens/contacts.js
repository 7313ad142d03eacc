// Contacts, inside Messages: who is pinned in this browser (trust on first use, pins.js) and whether
// their devices still match the pins, and a look-up to compare the safety number with anyone before
// the first message, then "Trust" to pin them on that comparison rather than on first contact, and "Mark as
// verified" (Signal's) once compared. Every change followed without the user (a rotation, a linked or removed
// device) shows as "Safety number changed 12:15" and a calm notice kept until "OK".
import { describe } from "../api.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, field, replace } from "../dom.js";
import {
  contacts,
  directory,
  markNoticesSeen,
  normalise,
  noticeWords,
  pinOfUser,
  pinState,
  setVerified,
  unseenNotices,
} from "../pins.js";
import { USERNAME_RULE } from "../rules.js";
import { session } from "../session.js";
import { showSafetyNumber } from "./safety.js";

const when = (ms) => new Date(ms).toLocaleString();
/** "12:15" today, "Nov 29, 12:15" another day. */
function clock(ms) {
  const at = new Date(ms);
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (at.toDateString() === new Date().toDateString()) return time;
  return `${at.toLocaleDateString([], { month: "short", day: "numeric" })}, ${time}`;
}
const devicesWord = (n, self) => `${n} ${self ? "other " : ""}device${n === 1 ? "" : "s"}${self ? " of yours" : ""}`;

/**
 * The Contacts section. `identity()` gives this browser's identity for the pin rules, read fresh;
 * `onTrusted()` runs after "Trust". Returns `{ section, refresh }`; `refresh()` lists the pins again.
 */
export function contactsPanel({ identity, onTrusted = () => {} }) {
  const list = el("ul", { class: "list", "aria-label": "Pinned contacts" });
  const lookup = field("Username", { autocomplete: "off", autocapitalize: "none", spellcheck: "false" });
  const lookupButton = el("button", { type: "submit" }, "Look up");
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const result = el("section", { class: "card", "aria-label": "Safety number check", hidden: true });
  const form = el(
    "form",
    { "aria-label": "Look up a user" },
    lookup.row,
    el("div", { class: "actions" }, lookupButton),
  );

  /** Whether `name`'s devices still match the pins: the same check as before a send, nothing pinned. */
  async function check(name, own, into) {
    try {
      const { changes, followed } = await pinState(await directory(name), own);
      // Something was followed now: the list shows its notice and the time the safety number changed.
      if (followed.rotations.length + followed.links.length + followed.removals.length) return refresh();
      into.textContent = changes.length
        ? `Changed keys: ${changes.join("; ")}. Sending is blocked until you compare the safety number and trust them.`
        : "Keys as pinned.";
      if (changes.length) into.className = "warning";
    } catch (error) {
      into.textContent = `Not checked: ${describe(error)}`;
    }
  }

  let listing = 0;
  async function refresh() {
    const mine = ++listing;
    let pins;
    let own;
    try {
      [pins, own] = await Promise.all([contacts(), identity()]);
    } catch (error) {
      alert.textContent = describe(error);
      return;
    }
    if (mine !== listing) return;
    pins.sort((a, b) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0));
    replace(list);
    if (!pins.length)
      list.append(el("li", { class: "muted" }, "Nobody yet. Look someone up, or send a first message."));
    for (const pin of pins) {
      const self = pin.username === own.username;
      const state = el("p", { class: "muted" }, "Checking their keys…");
      const who = self ? `${visibleText(pin.username)} (you)` : visibleText(pin.username);
      list.append(
        el(
          "li",
          { "aria-label": who },
          el(
            "strong",
            {},
            nameElement(pin.username),
            self ? " (you)" : "",
            pin.verifiedAt ? " " : null,
            pin.verifiedAt ? el("span", { class: "badge" }, "Verified") : null,
          ),
          el("p", {}, `${devicesWord(pin.devices.length, self)}, pinned since ${when(pin.firstSeen)}`),
          pin.changedAt ? el("p", { class: "muted" }, `Safety number changed ${clock(pin.changedAt)}`) : null,
          notices(pin, self, who),
          state,
          el(
            "button",
            { type: "button", on: { click: () => show(pin.username) } },
            `Safety number with ${pin.username}`,
          ),
        ),
      );
      check(pin.username, own, state);
    }
  }

  /** The changes followed for `pin` and not seen yet, calmly, until "OK". */
  function notices(pin, self, who) {
    const unseen = unseenNotices(pin);
    if (!unseen.length) return null;
    const box = el(
      "div",
      { class: "notice", role: "note", "aria-label": `Changes of ${who}` },
      unseen.map((n) => el("p", {}, `${clock(n.at)}: ${noticeWords(pin.username, n, self)}`)),
    );
    const ok = el("button", { type: "button", "aria-label": `OK, seen the changes of ${who}` }, "OK");
    ok.addEventListener("click", async () => {
      await markNoticesSeen(pin.username);
      box.remove();
    });
    box.append(ok);
    return box;
  }

  /** "Mark as verified" under a compared safety number, or "Verified" with "Remove mark". */
  function verifyControls(name, pin) {
    const part = el("div", { class: "verify" });
    const render = (verifiedAt) => {
      const button = el("button", { type: "button" }, verifiedAt ? "Remove mark" : "Mark as verified");
      button.addEventListener("click", async () => {
        button.disabled = true;
        try {
          await setVerified(name, !verifiedAt, undefined, { compared: pin?.devices });
          const now = await pinOfUser(name);
          render(now?.verifiedAt ?? null);
          status.textContent = now?.verifiedAt
            ? `${name} is marked verified: any change of their devices now waits for you.`
            : `${name} is no longer marked verified.`;
          refresh();
        } catch (error) {
          button.disabled = false;
          alert.textContent = describe(error);
        }
      });
      replace(
        part,
        verifiedAt
          ? el(
              "p",
              {},
              el("span", { class: "badge" }, "Verified"),
              ` since ${when(verifiedAt)}. Any change of ${name}'s devices, linked or not, waits for you to compare ` +
                `again.`,
            )
          : el(
              "p",
              { class: "muted" },
              `Compared the number with ${name}? Mark them verified: then no change of their devices is followed ` +
                `without you, not even one their own devices approved.`,
            ),
        el("div", { class: "actions" }, button),
      );
    };
    render(pin.verifiedAt ?? null);
    return part;
  }

  async function show(name) {
    alert.textContent = "";
    status.textContent = "";
    lookup.input.value = name;
    result.hidden = false;
    await showSafetyNumber(result, name, {
      heading: `Safety number with ${name}`,
      intro: `Compare it with ${name} in person or over a call, or scan each other's code, before you trust their ` +
        `devices. If it differs, do not trust them: someone may be reading along.`,
      identity,
      // "Trust" for a user not pinned yet, or whose devices changed; the same answer is compared and pinned.
      offerTrust: async (theirs, own) => {
        const { pin, changes } = await pinState(theirs, own);
        if (pin && !changes.length) {
          result.append(
            el("p", { class: "muted" }, `Trusted since ${when(pin.trustedAt)}: these are the keys you pinned.`),
          );
          // Nobody compares with themselves: the own account's devices are simply theirs.
          if (theirs.username !== own.username) result.append(verifyControls(theirs.username, pin));
        } else if (pin?.verifiedAt) {
          // Marked verified and changed since: trusting anew takes the mark away; so may the user, to let what
          // the devices may do alone (a vouched device, a signed rotation) be followed.
          result.append(verifyControls(theirs.username, pin));
        }
        return !pin || changes.length > 0;
      },
      onTrusted: async (theirs) => {
        status.textContent = `${theirs.username}'s devices are trusted.`;
        const pin = await pinOfUser(theirs.username);
        const self = theirs.username === normalise(session.account.username);
        if (pin && !self) result.append(verifyControls(theirs.username, pin));
        refresh();
        onTrusted(theirs);
      },
      onError: (error) => (alert.textContent = describe(error)),
    });
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = normalise(lookup.input.value);
    if (!name) {
      alert.textContent = `A username is ${USERNAME_RULE}.`;
      lookup.input.focus();
      return;
    }
    show(name);
  });

  const section = el(
    "section",
    { class: "card contacts", "aria-label": "Contacts", hidden: true },
    el("h2", {}, "Contacts"),
    el(
      "p",
      { class: "muted" },
      "People whose devices this browser pinned: a message is sealed only to their pinned devices, and a change " +
        "blocks sending until you trust it.",
    ),
    list,
    el("h3", {}, "Look up a user"),
    form,
    status,
    alert,
    result,
  );
  /** Shown again: the list is read anew, and a number compared earlier is dropped (keys may have changed). */
  function open() {
    result.hidden = true;
    result.replaceChildren();
    alert.textContent = status.textContent = "";
    refresh();
    lookup.input.focus();
  }
  return { section, refresh, open };
}
