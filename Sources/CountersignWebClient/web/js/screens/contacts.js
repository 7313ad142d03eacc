// Contacts, inside Messages: who is pinned in this browser (trust on first use, pins.js) and whether
// their devices still match the pins, and a look-up to compare the safety number with anyone before
// the first message, then "Trust" to pin them on that comparison rather than on first contact.
import { describe } from "../api.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, field, replace } from "../dom.js";
import { contacts, directory, normalise, pinState } from "../pins.js";
import { USERNAME_RULE } from "../rules.js";
import { showSafetyNumber } from "./safety.js";

const when = (ms) => new Date(ms).toLocaleString();
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
      const { changes } = await pinState(await directory(name), own);
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
          el("strong", {}, nameElement(pin.username), self ? " (you)" : ""),
          el("p", {}, `${devicesWord(pin.devices.length, self)}, pinned since ${when(pin.firstSeen)}`),
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
        if (pin && !changes.length)
          result.append(
            el("p", { class: "muted" }, `Trusted since ${when(pin.trustedAt)}: these are the keys you pinned.`),
          );
        return !pin || changes.length > 0;
      },
      onTrusted: (theirs) => {
        status.textContent = `${theirs.username}'s devices are trusted.`;
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
