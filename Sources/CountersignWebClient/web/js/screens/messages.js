// Messages as conversations (issue 35 §3): one per other party (a group for a message to several people),
// newest first, with a preview decrypted here only while the keys are open and the unread count; first
// messages from strangers under "Requests" (Accept, Block; blocked senders listed with Unblock); and a
// conversation's thread, its messages in order, yours on the right, each with its "Details" (PingIdentity's
// steps and what the server sees) and, for yours, its delivery from the server's acknowledgements. The
// composer at the bottom sends on Enter. Addresses: #/messages and #/messages/<names> (main.js). Decrypted
// text is on the page only while shown: the privacy overlay's signal drops it.
import { describe } from "../api.js";
import { utf8 } from "../bytes.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, feedback, field, replace } from "../dom.js";
import { on } from "../events.js";
import {
  conversationKey,
  conversationTitle,
  deliveryPending,
  deliveryWords,
  keyNames,
  sortConversations,
} from "../conversations.js";
import { keystore } from "../keystore.js";
import { get, list, markRead, openMessage, ownIdentity } from "../messages.js";
import { openingOrder } from "../open-order.js";
import { peers, setPeers, unblock } from "../peers.js";
import {
  isUsername,
  markNoticesSeen,
  noticeWords,
  normalise,
  pinOfUser,
  rereadPins,
  unseenNotices,
  unverifiedWords,
} from "../pins.js";
import { isKeyId } from "../rules.js";
import { messageStatus } from "../server/messages.js";
import { session } from "../session.js";
import { composer, sentSteps, showSteps } from "./composer.js";
import { contactsPanel } from "./contacts.js";
import { deviceReady } from "./device-ready.js";
import { NotUnlocked, unlockedRecord } from "./gate.js";
import { showSafetyNumber } from "./safety.js";
import { detailsOf } from "./message-details.js";
import { turnOnHere } from "./notifications.js";

const time = (iso) => {
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
};
const when = (iso) => new Date(iso).toLocaleString();

/** A conversation's address. */
const addressOf = (key) => (key ? `#/messages/${encodeURIComponent(key)}` : "#/messages");
/** Goes to a conversation (or the list): a history entry, so Back returns. */
const goTo = (key) => (location.hash = addressOf(key));

/** What the next screen shown says first: the steps of a send from "New message", an action's result. */
let carried = null;

/** The first line of a text, short enough for a preview. */
const previewOf = (text) => {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
};

const isOpen = (record) => Boolean(record?.encryption?.privateKey);
/** How many characters of a message a thread shows before "Show all of it". */
const LONG_TEXT = 1_000;
/** How many messages a thread opens at once after those in view. */
const CHUNK = 48;
/** How long a long opening trusts its one reading of each sender's pins before reading them again. */
const PINS_REREAD_MS = 1_000;

/** The stored message `id`, waiting up to `ms` for the inbox to store it (a notification's tap opens the app
 *  before its push channel has fetched what is new); undefined when it does not come. */
function arrived(id, ms) {
  return new Promise((resolve) => {
    let timer = null;
    const stop = on("inbox", (event) => event.kind === "message" && event.entry.id === id && done());
    function done() {
      stop();
      clearTimeout(timer);
      get(id).then(resolve, () => resolve(undefined));
    }
    get(id).then(
      (message) => {
        if (!message) return void (timer = setTimeout(done, ms));
        stop();
        resolve(message);
      },
      () => done(),
    );
  });
}

export function messagesScreen(app, { onBack, open: address }) {
  const gateSlot = el("div");
  const identity = async () => ownIdentity(await keystore.device(session.account.id));
  const me = normalise(session.account.username) ?? String(session.account.username);
  const section = el("section", { "aria-label": "Messages", class: "card messages" });
  replace(app, section);
  const stops = [];
  const alive = () => app.contains(section);
  const listen = (topic, listener) => stops.push(on(topic, (value) => (alive() ? listener(value) : stopAll())));
  const stopAll = () => stops.splice(0).forEach((stop) => stop());

  (async () => {
    // Opened straight from its address (a reload): this browser becomes the device here, not on Home.
    if (!session.deviceToken) {
      replace(section, el("h1", {}, "Messages"), gateSlot);
      try {
        await deviceReady(gateSlot);
      } catch {
        // Said below when it left no device; otherwise sending says what is missing.
      }
      if (!alive()) return;
    }
    const record = await keystore.device(session.account.id);
    if (!record?.deviceId) {
      replace(
        section,
        el("div", { class: "actions" }, el("button", { type: "button", on: { click: onBack } }, "Back")),
        el("h1", {}, "Messages"),
        el("p", { role: "alert", class: "alert" },
          "This browser is not set up as a device yet: go back and wait for “Device ready”."),
      );
      return;
    }
    let key = address;
    // A notification's address names the message: its conversation is shown, at the conversation's address.
    // Opened from a notification with the app closed, the message may still be on its way from the server.
    // An ID that does not come is said so, and never taken for a username (32 hex digits are one).
    if (key && isKeyId(key)) {
      replace(
        section,
        el("div", { class: "actions" }, el("button", { type: "button", on: { click: onBack } }, "Back")),
        el("h1", {}, "Messages"),
        el("p", { role: "status", class: "status" }, "Getting the message…"),
      );
      const message = await arrived(key, 15_000);
      if (!alive()) return;
      if (!message) {
        history.replaceState(null, "", addressOf(""));
        return listView("That message is not here: it expired, was removed, or this browser's data was wiped.");
      }
      key = conversationKey(message, me);
      history.replaceState(null, "", addressOf(key));
    }
    if (key && keyNames(key, isUsername)) return thread(key);
    return listView(key ? "There is no conversation at that address." : "");
  })();

  // ---- The list: requests, conversations, blocked senders, and "New message".

  async function listView(notice) {
    const { status, alert } = feedback();
    const to = field("To", {
      autocomplete: "off",
      autocapitalize: "none",
      spellcheck: "false",
      placeholder: "alice, bob",
    });
    const write = composer({
      to,
      gateSlot,
      identity,
      label: "New message",
      onSent: ({ names, steps }) => {
        const key = [...new Set(names.filter(Boolean).map(normalise))].filter((n) => n !== me).sort().join(",") || me;
        carried = { key, steps };
        goTo(key);
      },
    });
    const newButton = el("button", { type: "button", class: "primary", "aria-expanded": "false" }, "New message");
    const cancel = el("button", { type: "button", on: { click: () => showNew(false) } }, "Cancel");
    const newPanel = el("div", { class: "new-message", hidden: true }, write.form, write.steps, write.alert,
      write.trustPanel, cancel);
    const showNew = (shown) => {
      newPanel.hidden = !shown;
      newButton.setAttribute("aria-expanded", String(shown));
      if (shown) to.input.focus();
      else newButton.focus();
    };
    newButton.addEventListener("click", () => showNew(true));
    const contacts = contactsPanel({ identity });
    const contactsButton = el("button", { type: "button", "aria-expanded": "false" }, "Contacts");
    contactsButton.addEventListener("click", () => {
      const opening = contacts.section.hidden;
      contacts.section.hidden = !opening;
      contactsButton.setAttribute("aria-expanded", String(opening));
      if (opening) contacts.open();
    });
    // Offered until this browser has decided: on, it is told of messages while Countersign is closed too.
    const notifications = el(
      "button",
      { type: "button", hidden: !("Notification" in window) || Notification.permission !== "default" },
      "Turn on notifications",
    );
    notifications.addEventListener("click", async () => {
      alert.textContent = "";
      status.textContent = "Turning on notifications…";
      notifications.disabled = true;
      try {
        await turnOnHere();
        status.textContent = "Notifications are on: this browser is told of new messages while Countersign is closed.";
        notifications.hidden = true;
      } catch (error) {
        status.textContent = "";
        alert.textContent = `${describe(error)} Settings → Notifications shows where it stands.`;
        notifications.hidden = Notification.permission === "denied";
      } finally {
        notifications.disabled = false;
      }
    });
    const requestsPart = el("section", { "aria-label": "Requests", class: "message-requests", hidden: true });
    const conversationList = el("ul", { class: "conversations", "aria-label": "Conversations" });
    const blockedPart = el("details", { class: "blocked", hidden: true });

    replace(
      section,
      el("div", { class: "actions" }, el("button", { type: "button", on: { click: onBack } }, "Back"), contactsButton,
        notifications),
      el("div", { class: "title-row" }, el("h1", {}, "Messages"), newButton),
      contacts.section,
      gateSlot,
      newPanel,
      status,
      alert,
      requestsPart,
      el("h2", {}, "Conversations"),
      conversationList,
      blockedPart,
    );
    if (notice) alert.textContent = notice;
    if (carried?.said) {
      status.textContent = carried.said;
      carried = null;
    }

    // Previews are decrypted one conversation at a time; a newer refresh drops what an older one still does.
    let generation = 0;
    async function refresh() {
      const mine = ++generation;
      const [messages, known] = await Promise.all([list(), peers()]);
      if (mine !== generation || !alive()) return;
      const { conversations, requests, blocked } = sortConversations(messages, me, known);
      const previews = [];
      replace(conversationList, ...conversations.map((c) => row(c, previews)));
      if (!conversations.length)
        conversationList.append(el("li", { class: "muted empty" }, "No conversations yet: press New message."));
      showRequests(requests, previews);
      showBlocked(blocked);
      if (!conversations.length && !requests.length && !newPanel.dataset.offered) {
        newPanel.dataset.offered = "1";
        showNew(true);
      }
      const record = await keystore.device(session.account.id);
      for (const [conversation, node] of previews) {
        if (mine !== generation || !alive()) return;
        await preview(record, conversation.latest, node);
      }
    }

    /** One conversation's row: its names, when, the preview's place and the unread count. */
    function row(c, previews) {
      const preview = el("span", { class: "preview" }, "");
      previews.push([c, preview]);
      const title = c.names.length === 1 && c.names[0] === me
        ? "Note to self"
        : c.names.flatMap((name, i) => [i ? ", " : "", nameElement(name)]);
      return el(
        "li",
        { class: c.unread ? "unread" : "" },
        el(
          "a",
          { href: addressOf(c.key), class: "conversation" },
          el("span", { class: "names" }, title),
          el("time", { datetime: c.latest.acceptedAt, class: "when" }, time(c.latest.acceptedAt)),
          preview,
          c.unread ? el("span", { class: "badge", "aria-label": `${c.unread} unread` }, String(c.unread)) : null,
        ),
      );
    }

    /** The latest message's first line, decrypted here only while the keys are open and the page shown. */
    async function preview(record, message, node) {
      if (document.visibilityState === "hidden") return;
      if (!isOpen(record)) {
        node.textContent = "Locked";
        node.classList.add("muted");
        return;
      }
      try {
        const options = { markAsRead: false, pinFirst: false };
        const { text, unverified, copy } = await openMessage(record, message, () => {}, options);
        if (copy) markRead([], { copies: new Map([[message.id, copy]]) }).catch(() => {});
        // A contact's device nobody approved is named in the preview too, never passed off as the contact.
        const who = unverified ? `F${unverifiedWords(visibleText(message.from), unverified).slice(1)}: ` : "";
        node.textContent = `${message.direction === "outgoing" ? "You: " : who}${previewOf(text)}`;
      } catch {
        node.textContent = "Could not be opened: open it to see why.";
        node.classList.add("muted");
      }
    }

    function showRequests(requests, previews) {
      requestsPart.hidden = !requests.length;
      if (!requests.length) return requestsPart.replaceChildren();
      replace(
        requestsPart,
        el("h2", {}, `Requests (${requests.length})`),
        el("p", { class: "muted" },
          "First messages from people you have not written to. Accept moves one to your conversations; Block hides " +
            "that sender's messages in this browser."),
        el("ul", { class: "conversations", "aria-label": "Message requests" }, ...requests.map((c) => {
          const item = row(c, previews);
          const who = c.senders.map(visibleText).join(", ");
          item.append(
            el(
              "div",
              { class: "actions" },
              el("button", { type: "button", on: { click: () => decide(c, "accepted") } }, `Accept ${who}`),
              el("button", { type: "button", class: "danger", on: { click: () => decide(c, "blocked") } },
                `Block ${who}`),
            ),
          );
          return item;
        })),
      );
    }

    async function decide(c, state) {
      try {
        await setPeers(c.senders, state);
        const who = c.senders.map(visibleText).join(", ");
        status.textContent = state === "accepted"
          ? `Accepted ${who}: the conversation is under Conversations.`
          : `Blocked ${who}: their messages are hidden in this browser. To see them again, open Blocked below and ` +
            `press Unblock.`;
        await refresh();
      } catch (error) {
        alert.textContent = describe(error);
      }
    }

    function showBlocked(blocked) {
      blockedPart.hidden = !blocked.length;
      replace(
        blockedPart,
        el("summary", {}, `Blocked (${blocked.length})`),
        el("p", { class: "muted" },
          "Their messages stay hidden in this browser (the server still delivers them). Unblock shows them again, as " +
            "a request."),
        el("ul", { class: "list", "aria-label": "Blocked senders" }, ...blocked.map(({ name, hidden }) =>
          el("li", {},
            nameElement(name),
            ` (${hidden} hidden ${hidden === 1 ? "message" : "messages"}) `,
            el("button", {
              type: "button",
              on: {
                click: async () => {
                  await unblock(name);
                  status.textContent = `Unblocked ${visibleText(name)}: their messages show again, under Requests.`;
                  await refresh();
                },
              },
            }, `Unblock ${visibleText(name)}`)))),
      );
    }

    listen("inbox", (event) => event.kind === "message" && refresh());
    listen("gate-changed", (change) => change.accountId === session.account?.id && refresh());
    listen("drop-decrypted", () => {
      generation++;
      for (const node of section.querySelectorAll(".preview")) node.textContent = "";
    });
    await refresh();
    if (newPanel.hidden) newButton.focus();
  }

  // ---- One conversation: its messages in order, the composer at the bottom.

  async function thread(key) {
    const names = key.split(",");
    const self = names.length === 1 && names[0] === me;
    const title = conversationTitle(names, me);
    const back = el("button", { type: "button", on: { click: () => goTo(null) } }, "All conversations");
    const safety = el("section", { class: "trust card", "aria-label": "Compare the safety number", hidden: true });
    /** The safety number with `name`; `verify`: with "Trust" for a new device nobody approved yet. */
    const compare = (name, verify = false) => {
      safety.hidden = false;
      showSafetyNumber(safety, name, {
        heading: `Compare the safety number with ${name}`,
        intro: `Read it to ${name} in person or over a call, or scan each other's code. If it matches theirs, ` +
          (verify
            ? "press Trust: their new device is then one of theirs here."
            : "the server gave each of you the other's real keys.") +
          " If not, someone may be reading along.",
        identity,
        offerTrust: async () => verify,
        onTrusted: again,
        onError: (error) => (alert.textContent = describe(error)),
      });
      safety.scrollIntoView?.({ block: "nearest" });
    };
    const safetyButtons = self ? [] : names.map((name) =>
      el("button", { type: "button", on: { click: () => compare(name) } }, `Safety number with ${visibleText(name)}`));
    // What changed in the contacts' devices since last seen, calmly ("bob linked a new device …"), until "OK".
    const notices = el("div", { class: "thread-notices" });
    for (const name of self ? [] : names) {
      pinOfUser(name).then((pin) => {
        const unseen = unseenNotices(pin);
        if (!unseen.length || !alive()) return;
        const box = el("div", { class: "notice", role: "status" },
          unseen.map((n) => el("p", {}, `${time(new Date(n.at).toISOString())}: ${noticeWords(name, n)}`)));
        box.append(el("button", {
          type: "button",
          "aria-label": `OK, seen the changes of ${visibleText(name)}`,
          on: { click: async () => (await markNoticesSeen(name), box.remove()) },
        }, "OK"));
        notices.append(box);
      }).catch(() => {});
    }
    const { status, alert } = feedback();
    const requestPart = el("div", { class: "request-banner", hidden: true });
    const messagesList = el("ol", { class: "thread", "aria-label": `Messages with ${title}` });
    const write = composer({
      recipients: () => names,
      gateSlot,
      identity,
      label: `Reply to ${title}`,
    });
    replace(
      section,
      el("div", { class: "actions" }, back, ...safetyButtons),
      el("h1", {}, self ? "Note to self" : names.flatMap((name, i) => [i ? ", " : "", nameElement(name)])),
      safety,
      notices,
      status,
      alert,
      requestPart,
      gateSlot,
      messagesList,
      write.form,
      write.steps,
      write.alert,
      write.trustPanel,
    );
    section.classList.add("in-thread");
    if (carried?.key === key) showSteps(write.steps, carried.steps);
    carried = null;
    write.text.focus();

    // The conversation shown afresh: the keys asked for again, every message opened again.
    const again = () => messagesScreen(app, { onBack, open: key });
    const shown = new Map(); // message ID → its list item
    let record = null;
    let locked = false;
    // The page was hidden: the text went, and nothing is opened again until "Show them again".
    let dropped = false;
    const pending = new Set(); // outgoing messages whose delivery may still change

    async function load() {
      const [messages, known] = await Promise.all([list(), peers()]);
      const sorted = sortConversations(messages, me, known);
      const c = [...sorted.conversations, ...sorted.requests].find((x) => x.key === key);
      const request = sorted.requests.some((x) => x.key === key);
      showRequest(request ? c : null);
      return c?.messages ?? [];
    }

    function showRequest(c) {
      requestPart.hidden = !c;
      if (!c) return requestPart.replaceChildren();
      const who = c.senders.map(visibleText).join(", ");
      replace(
        requestPart,
        el("p", {}, `${who} is not in your conversations: you have not written to them before.`),
        el("div", { class: "actions" },
          el("button", { type: "button", class: "primary", on: { click: async () => {
            await setPeers(c.senders, "accepted");
            requestPart.hidden = true;
            status.textContent = `Accepted ${who}: this conversation is under Conversations now.`;
          } } }, `Accept ${who}`),
          el("button", { type: "button", class: "danger", on: { click: async () => {
            await setPeers(c.senders, "blocked");
            carried = { said: `Blocked ${who}: their messages are hidden in this browser. To see them again, open ` +
              `Blocked below and press Unblock.` };
            goTo(null);
          } } }, `Block ${who}`)),
      );
    }

    /** A message's place in the thread, its text filled when it opens. */
    function bubble(message) {
      const mine = message.direction === "outgoing";
      const label = `${mine ? "You" : `From ${visibleText(message.from)}`}, ${when(message.acceptedAt)}`;
      const textNode = el("p", { class: "message-text muted" }, locked ? "Locked" : "Opening…");
      const meta = el("p", { class: "meta" }, el("time", { datetime: message.acceptedAt }, time(message.acceptedAt)));
      const item = el(
        "li",
        { class: `bubble ${mine ? "mine" : "theirs"}`, "aria-label": label, "data-id": message.id },
        !mine && names.length > 1 ? el("p", { class: "sender" }, nameElement(message.from)) : null,
        textNode,
        meta,
      );
      if (mine) {
        const delivery = el("span", { class: "delivery", "data-testid": "delivery" }, "");
        meta.append(" · ", delivery);
        pending.add(message.id);
      }
      shown.set(message.id, item);
      return item;
    }

    // The directory answers shared by one opening of the thread (a message arriving later asks afresh).
    let directories;

    /** Opens a message (verified and decrypted, or refused): `{ message, opened, error, said }`, where `said` is
     *  what sending and opening said, for its Details. Touches no bubble: a chunk is shown at once (show). */
    async function opening(message) {
      const said = [...(sentSteps.get(message.id) ?? [])];
      try {
        const report = (words) => said.push(words);
        const opened = await openMessage(record, message, report, { directories, markAsRead: false });
        return { message, opened, error: null, said };
      } catch (error) {
        said.push(`Refused: ${describe(error)}`);
        return { message, opened: null, error, said };
      }
    }

    /** Opens a chunk: each sender's messages one after the other until one opens (the first of a first contact
     *  pins them, as when they were opened one by one), then the rest of them side by side, as are different
     *  senders'. */
    async function openingAll(chunk) {
      const bySender = new Map();
      for (const message of chunk) {
        const sender = message.direction === "outgoing" ? me : message.from;
        bySender.set(sender, [...(bySender.get(sender) ?? []), message]);
      }
      const found = new Map();
      await Promise.all([...bySender.values()].map(async (theirs) => {
        let next = 0;
        while (next < theirs.length) {
          const result = await opening(theirs[next++]);
          found.set(result.message.id, result);
          // Opened under the pins (not from a copy re-sealed before the keys changed, which consults none).
          if (result.opened && !result.opened.local) break;
        }
        const rest = await Promise.all(theirs.slice(next).map(opening));
        for (const result of rest) found.set(result.message.id, result);
      }));
      return chunk.map((message) => found.get(message.id));
    }

    /** Shows what `opening` found in the message's bubble. True when it opened (the caller marks it read). */
    function show({ message, opened, error, said }) {
      const item = shown.get(message.id);
      if (!item?.isConnected) return opened !== null;
      const textNode = item.querySelector(".message-text");
      if (opened) {
        textNode.classList.remove("muted");
        textNode.setAttribute("aria-label", "Message text");
        // A long text (up to 1 MiB) starts cut: laying out all of it at once would stall the thread.
        if (opened.text.length > LONG_TEXT) {
          replace(textNode, `${opened.text.slice(0, LONG_TEXT)}…`);
          const kib = Math.ceil(utf8(opened.text).length / 1024).toLocaleString("en");
          const all = el("button", { type: "button", class: "show-all" }, `Show all of it (${kib} KiB)`);
          all.addEventListener("click", () => (replace(textNode, opened.text), all.remove()));
          textNode.after(all);
        } else {
          replace(textNode, opened.text);
        }
        if (opened.unverified) {
          // "From bob's new, unverified device “Laptop”.", with "Verify" beside it: not refused, not bob's yet.
          const words = unverifiedWords(visibleText(message.from), opened.unverified);
          item.setAttribute("aria-label", `F${words.slice(1)}, ${when(message.acceptedAt)}`);
          const verify = el("button", { type: "button", on: { click: () => compare(message.from, true) } }, "Verify");
          textNode.before(el("p", { class: "unverified" }, `F${words.slice(1)}. `, verify));
        }
      } else {
        const refusal = `This message was refused: ${describe(error)}`;
        textNode.replaceWith(el("p", { role: "alert", class: "alert" }, refusal));
      }
      item.append(detailsOf(message, {
        opened,
        steps: said,
        status: () => (message.direction === "outgoing" ? statusOf(message.id) : Promise.resolve(null)),
      }));
      return opened !== null;
    }

    const statuses = new Map();
    const statusOf = (id) => messageStatus(id, session.deviceToken).then((s) => (statuses.set(id, s), s));

    /** Asks the server how far each outgoing message got, again while some are still on the way. */
    let polls = 0;
    let pollTimer = null;
    async function deliveries() {
      // The latest 20 of yours are asked about; an older one's state is in its Details.
      for (const id of [...pending].slice(0, -20)) pending.delete(id);
      for (const id of [...pending]) {
        const node = shown.get(id)?.querySelector(".delivery");
        if (!node) continue;
        try {
          const s = await statusOf(id);
          node.textContent = deliveryWords(s);
          if (!deliveryPending(s)) pending.delete(id);
        } catch (error) {
          node.textContent = error?.status === 404 ? "The server no longer keeps its delivery state." : "";
          pending.delete(id);
        }
      }
      // Asked again while some are on the way: soon at first, then less often, for about ten minutes.
      clearTimeout(pollTimer);
      if (!pending.size || !alive() || polls >= 30) return;
      pollTimer = setTimeout(() => alive() && deliveries(), Math.min(3_000 * 1.2 ** polls++, 30_000));
    }

    async function openAll(messages) {
      try {
        record = await unlockedRecord(gateSlot, "Unlock them to read this conversation.");
        locked = false;
      } catch (error) {
        locked = true;
        for (const node of messagesList.querySelectorAll(".message-text")) node.textContent = "Locked";
        alert.textContent = error instanceof NotUnlocked ? error.message : describe(error);
        messagesList.after(el("button", { type: "button", on: { click: again } }, "Unlock to read"));
        deliveries();
        return;
      }
      // The bubbles in view first (the end of the thread), then the rest newest first, a chunk at a time, a
      // bubble scrolled to meanwhile next; each chunk's read marks in one transaction. One look at each
      // sender's directory serves the whole opening.
      directories = new Map();
      const order = openingOrder(messages.map((m) => m.id));
      const byId = new Map(messages.map((m) => [m.id, m]));
      const prefer = (entries) => entries.forEach((e) => e.isIntersecting && order.prefer(e.target.dataset.id));
      const seen = "IntersectionObserver" in window ? new IntersectionObserver(prefer) : null;
      for (const message of messages) seen?.observe(shown.get(message.id));
      let size = inView();
      let first = true;
      let pinsReadAt = performance.now();
      while (order.size && alive() && !dropped) {
        const chunk = order.next(size).map((id) => byId.get(id));
        // Shown together once opened: one change of the page (one layout) a chunk, not one a message.
        const results = await openingAll(chunk);
        const opened = results.map(show);
        const copies = new Map(results.filter((r) => r.opened?.copy).map((r) => [r.message.id, r.opened.copy]));
        // Shown, the texts in view grew: the newest is brought back into view.
        if (first) messagesList.lastElementChild?.scrollIntoView?.({ block: "end" });
        for (const message of chunk) if (shown.has(message.id)) seen?.unobserve(shown.get(message.id));
        await markRead(chunk.filter((_, i) => opened[i]), { copies }).catch(() => {});
        if (performance.now() - pinsReadAt >= PINS_REREAD_MS) {
          rereadPins(directories);
          pinsReadAt = performance.now();
        }
        // The server asked how far yours got once the texts in view are shown.
        if (first) deliveries();
        first = false;
        size = CHUNK;
      }
      seen?.disconnect();
      if (first && alive()) deliveries();
    }

    /** How many bubbles, counted from the newest, the window shows now (at least one). */
    function inView() {
      let count = 0;
      for (let item = messagesList.lastElementChild; item; item = item.previousElementSibling) {
        const box = item.getBoundingClientRect();
        if (box.bottom <= 0) break;
        if (box.top < innerHeight) count++;
      }
      return Math.max(count, 1);
    }

    const messages = await load();
    if (!messages.length) {
      messagesList.append(el("li", { class: "muted empty" }, `No messages with ${title} yet: write the first below.`));
    }
    messagesList.append(...messages.map(bubble));
    messagesList.lastElementChild?.scrollIntoView?.({ block: "end" });
    await openAll(messages);

    listen("inbox", async (event) => {
      if (event.kind !== "message" || conversationKey(event.entry, me) !== key || dropped) return;
      const message = await get(event.entry.id);
      if (!message || shown.has(message.id) || !alive()) return;
      messagesList.querySelector(".empty")?.remove();
      messagesList.append(bubble(message));
      if (message.direction === "outgoing") deliveries();
      if (locked) return;
      record = await keystore.device(session.account.id);
      if (!isOpen(record)) return;
      directories = undefined;
      const result = await opening(message);
      const copies = new Map(result.opened?.copy ? [[message.id, result.opened.copy]] : []);
      if (show(result)) await markRead([message], { copies }).catch(() => {});
      shown.get(message.id)?.scrollIntoView?.({ block: "nearest" });
    });
    listen("drop-decrypted", () => {
      dropped = true;
      replace(messagesList, el("li", { class: "muted" }, "The messages were hidden with the page. ",
        el("button", { type: "button", on: { click: again } }, "Show them again")));
      shown.clear();
    });
  }
}
