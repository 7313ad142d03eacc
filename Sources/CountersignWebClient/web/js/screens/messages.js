// Messages (PingIdentity's steps, cryptology-project's lists and its man in the middle): write to one or
// more users, see each step, read what came in or went out, and trust a contact's new devices only after
// comparing the safety number. Decrypted text is on the page only while a message is open and shown.
import { describe } from "../api.js";
import { groupedKeyId, hex } from "../bytes.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, field, replace } from "../dom.js";
import { on } from "../events.js";
import { keystore } from "../keystore.js";
import { MAX_PLAINTEXT } from "../envelope.js";
import {
  DELAY_SECONDS,
  get,
  list,
  openMessage,
  ownIdentity,
  send,
  sizeWords,
  textSize,
  tooLongWords,
} from "../messages.js";
import { PinError } from "../pins.js";
import { session } from "../session.js";
import { contactsPanel } from "./contacts.js";
import { NotUnlocked, unlockedRecord } from "./gate.js";
import { showSafetyNumber } from "./safety.js";

const when = (iso) => new Date(iso).toLocaleString();

export function messagesScreen(app, { onBack, open: openId }) {
  const to = field("To", {
    autocomplete: "off",
    autocapitalize: "none",
    spellcheck: "false",
    placeholder: "alice, bob",
  });
  const textId = "message-text-input";
  // No maxlength: it would cut a pasted text without a word (and counts UTF-16, not the limit's bytes).
  const text = el("textarea", {
    id: textId,
    rows: 4,
    placeholder: "Please Enter Text",
    "aria-describedby": "message-size",
  });
  const size = el("p", { id: "message-size", class: "muted", "data-testid": "message-size", hidden: true });
  const showSize = () => {
    const bytes = textSize(text.value);
    const over = bytes !== null && bytes > MAX_PLAINTEXT;
    size.hidden = bytes === null;
    size.textContent = bytes === null ? "" : sizeWords(bytes);
    size.classList.toggle("alert", over);
    if (over) text.setAttribute("aria-invalid", "true");
    else text.removeAttribute("aria-invalid");
    // The refusal of a text that was too long is the counter's to say from here on: it goes as it is edited.
    if (!over && alert.dataset.tooLong) {
      alert.textContent = "";
      delete alert.dataset.tooLong;
    }
    return bytes;
  };
  text.addEventListener("input", showSize);
  const delayed = el("input", { type: "checkbox", role: "switch", id: "deliver-later" });
  const sendButton = el("button", { type: "submit", class: "primary" }, "Send");
  const steps = el("ul", { role: "status", class: "steps", "aria-label": "Steps" });
  const alert = el("p", { role: "alert", class: "alert" });
  const trustPanel = el("section", { class: "trust card", "aria-label": "Trust new devices", hidden: true });
  const incoming = el("ul", { class: "list", "aria-label": "Incoming" });
  const outgoing = el("ul", { class: "list", "aria-label": "Outgoing" });
  const opened = el("section", { class: "opened card", "aria-label": "Opened message", hidden: true });
  // The key gate's unlock prompt, when opening or sending needs the keys (screens/gate.js).
  const gateSlot = el("div");
  const notifications = el(
    "button",
    { type: "button", hidden: !("Notification" in window) || Notification.permission !== "default" },
    "Turn on notifications",
  );
  let record = null;
  // Read again before each use: another tab may have rotated the keys.
  const freshRecord = () => keystore.device(session.account.id);

  const step = (words) => steps.append(el("li", {}, words));
  const identity = async () => ownIdentity((record = await freshRecord()));
  const contacts = contactsPanel({ identity });
  const contactsButton = el("button", { type: "button", "aria-expanded": "false" }, "Contacts");
  contactsButton.addEventListener("click", () => {
    const open = contacts.section.hidden;
    contacts.section.hidden = !open;
    contactsButton.setAttribute("aria-expanded", String(open));
    if (open) contacts.open();
  });

  const form = el(
    "form",
    { "aria-label": "New message" },
    to.row,
    el("div", { class: "field" }, el("label", { for: textId }, "Message"), text, size),
    el(
      "div",
      { class: "choice" },
      delayed,
      el("label", { for: "deliver-later" }, `Deliver in ${DELAY_SECONDS} seconds`),
    ),
    sendButton,
  );

  /** The safety number of this account and `username`, and "Trust" when their devices changed. */
  function showTrust(username, { changed }) {
    trustPanel.hidden = false;
    return showSafetyNumber(trustPanel, username, {
      heading: `Compare the safety number with ${username}`,
      intro: `Read it to ${username} in person or over a call, or scan each other's code. If it matches ` +
        `theirs, ${changed ? "press Trust" : "the server gave each of you the other's real keys"}. If not, do not ` +
        `send: someone may be reading along.`,
      identity,
      offerTrust: async () => changed,
      onTrusted: (theirs) => {
        trustPanel.hidden = true;
        alert.textContent = "";
        step(`${theirs.username}'s devices are trusted. Send again.`);
        if (!contacts.section.hidden) contacts.refresh();
      },
      onError: (error) => (alert.textContent = describe(error)),
    });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    alert.textContent = "";
    steps.replaceChildren();
    trustPanel.hidden = true;
    if (!text.value) {
      alert.textContent = "Write something to send.";
      text.focus();
      return;
    }
    const bytes = showSize();
    if (bytes !== null && bytes > MAX_PLAINTEXT) {
      alert.textContent = tooLongWords(bytes);
      alert.dataset.tooLong = "1";
      text.focus();
      return;
    }
    sendButton.disabled = true;
    try {
      if (session.keypairCreated && session.keypairCreated === session.account?.id) {
        step("Keypair created");
        session.keypairCreated = null;
      }
      record = await unlockedRecord(gateSlot, "Unlock them to send this message.");
      await send(record, {
        to: to.input.value.split(/[\s,]+/),
        text: text.value,
        delayed: delayed.checked,
        report: step,
      });
      step(delayed.checked ? `Sent. It is delivered in ${DELAY_SECONDS} seconds.` : "Sent.");
      text.value = "";
      showSize();
    } catch (error) {
      alert.textContent = describe(error);
      if (error instanceof PinError && error.changes.length) showTrust(error.username, { changed: true });
    } finally {
      sendButton.disabled = false;
    }
  });

  notifications.addEventListener("click", async () => {
    await Notification.requestPermission();
    notifications.hidden = Notification.permission !== "default";
  });

  function entry(message) {
    // Names as the server lists them: hidden and direction-changing characters written out (display-name.js).
    const who = message.direction === "incoming"
      ? `From ${visibleText(message.from)}`
      : `To ${message.to.map(visibleText).join(", ")}`;
    const unread = message.direction === "incoming" && !message.read;
    const label = message.direction === "incoming"
      ? `${who}, ${when(message.acceptedAt)}, ${unread ? "unread" : "read"}`
      : `${who}, ${when(message.acceptedAt)}`;
    return el(
      "li",
      { class: unread ? "unread" : "" },
      el("button", { type: "button", class: "link", on: { click: () => show(message.id) } }, label),
    );
  }

  async function refresh() {
    const all = await list();
    replace(incoming, ...all.filter((m) => m.direction === "incoming").map(entry));
    replace(outgoing, ...all.filter((m) => m.direction === "outgoing").map(entry));
    if (!incoming.children.length) incoming.append(el("li", { class: "muted" }, "Nothing yet."));
    if (!outgoing.children.length) outgoing.append(el("li", { class: "muted" }, "Nothing yet."));
  }

  /** What the server holds of a message: the envelope's header fields and its ciphertext. */
  function serverView(message, envelope, bytes) {
    const rows = [
      ["Message ID", hex(envelope.messageId)],
      ["Signed by key", groupedKeyId(hex(envelope.senderKeyId))],
      [
        "Created (sender's clock)",
        Number.isFinite(new Date(envelope.created).getTime())
          ? new Date(envelope.created).toISOString()
          : `${envelope.created} ms`,
      ],
      ["Content type", envelope.contentType],
      ["Sealed to keys", envelope.stanzas.map((s) => groupedKeyId(hex(s.keyId))).join(", ")],
      ["Ciphertext (hex)", hex(envelope.body)],
      ["Signature (hex)", hex(envelope.signature)],
      ["Envelope (base64url)", message.envelope],
      ["Size", `${bytes.length} bytes`],
    ];
    return el(
      "details",
      { class: "server-view" },
      el("summary", {}, "What the server sees"),
      el(
        "p",
        { class: "muted" },
        "The server stores and relays only these bytes. It cannot read the text: only the devices it was sealed to " +
          "can.",
      ),
      el(
        "dl",
        { class: "facts" },
        ...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", { class: "mono" }, value)])
      ),
    );
  }

  // Only the latest message opened may fill the panel: an earlier one still verifying is dropped.
  let generation = 0;
  async function show(id) {
    const mine = ++generation;
    const message = await get(id);
    if (!message || mine !== generation) return;
    const openSteps = el("ul", { role: "status", class: "steps", "aria-label": "Opening" });
    const openAlert = el("p", { role: "alert", class: "alert" });
    const peer = message.direction === "incoming" ? message.from : null;
    const names = peer ? [peer] : message.to;
    const who = names.flatMap((name, i) => [i ? ", " : "", nameElement(name)]);
    replace(
      opened,
      el("h2", {}, peer ? "From " : "To ", ...who),
      el("p", { class: "muted" }, when(message.acceptedAt)),
      openSteps,
      openAlert,
    );
    opened.hidden = false;
    const current = () => mine === generation && document.visibilityState === "visible" && opened.contains(openSteps);
    try {
      record = await unlockedRecord(gateSlot, "Unlock them to open this message.");
      if (!current()) return;
      const { text: plain, envelope, bytes } = await openMessage(
        record,
        message,
        (words) => current() && openSteps.append(el("li", {}, words)),
      );
      if (!current()) return;
      opened.append(
        el("p", { class: "message-text", "aria-label": "Message text" }, plain),
        serverView(message, envelope, bytes),
      );
    } catch (error) {
      if (!current()) return;
      openAlert.textContent = error instanceof NotUnlocked
        ? error.message
        : `This message was refused: ${describe(error)}`;
    }
    if (peer)
      opened.append(
        el(
          "button",
          { type: "button", on: { click: () => showTrust(peer, { changed: false }) } },
          `Safety number with ${visibleText(peer)}`,
        ),
      );
    opened.append(el("button", { type: "button", on: {
            click: () => {
              generation++;
              opened.hidden = true;
              opened.replaceChildren();
            },
          } }, "Close message"));
    opened.scrollIntoView?.({ block: "nearest" });
    refresh();
  }

  replace(
    app,
    el(
      "section",
      { "aria-label": "Messages", class: "card" },
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", on: { click: onBack } }, "Back"),
        contactsButton,
        notifications,
      ),
      el("h1", {}, "Messages"),
      contacts.section,
      gateSlot,
      form,
      steps,
      alert,
      trustPanel,
      opened,
      el("h2", {}, "Incoming"),
      incoming,
      el("h2", {}, "Outgoing"),
      outgoing,
    ),
  );

  // Decrypted text leaves the page when it is hidden (the privacy overlay).
  const forget = on("drop-decrypted", () => {
    generation++;
    opened.hidden = true;
    opened.replaceChildren();
  });
  const unsubscribe = on("inbox", (event) => {
    if (!app.contains(incoming)) return (unsubscribe(), forget());
    if (event.kind === "message") refresh();
  });

  (async () => {
    record = await freshRecord();
    if (!record?.deviceId) {
      alert.textContent = "This browser is not set up as a device yet: go back and wait for “Device ready”.";
      sendButton.disabled = true;
      return;
    }
    await refresh();
    if (openId) show(openId);
  })();
  to.input.focus();
}
