// The message composer, in a conversation and in "New message": the text (Enter sends, Shift+Enter adds a
// line), its size against the 1 MiB a message holds, the 15-second delayed send as a switch, PingIdentity's
// steps as they happen, and, when a contact's devices changed, their safety number with "Trust".
import { describe } from "../api.js";
import { el, replace } from "../dom.js";
import { MAX_PLAINTEXT } from "../envelope.js";
import { DELAY_SECONDS, send, sizeWords, textSize, tooLongWords } from "../messages.js";
import { PinError } from "../pins.js";
import { session } from "../session.js";
import { unlockedRecord } from "./gate.js";
import { showSafetyNumber } from "./safety.js";

/** The steps of the messages this page sent, by message ID: each message's "Details" shows them. */
export const sentSteps = new Map();

let ids = 0;

/**
 * A composer. `to` (optional): the "To" field's row and input, read at each send; otherwise `recipients()`
 * names them. `gateSlot`: where the unlock prompt goes. `identity()`: this browser's identity, read fresh.
 * `onSent({ names, sent, steps })` runs after a send. Returns { form, text, steps, alert, trustPanel }.
 */
export function composer({ to = null, recipients = () => [], gateSlot, identity, onSent = () => {}, label }) {
  const n = ++ids;
  const textId = `message-text-${n}`;
  const sizeId = `message-size-${n}`;
  const switchId = `deliver-later-${n}`;
  // No maxlength: it would cut a pasted text without a word (and counts UTF-16, not the limit's bytes).
  const text = el("textarea", {
    id: textId,
    rows: to ? 4 : 2,
    placeholder: "Please Enter Text",
    "aria-describedby": `${sizeId} ${textId}-hint`,
    enterkeyhint: "send",
  });
  const hint = el("p", { id: `${textId}-hint`, class: "muted hint" }, "Enter sends; Shift+Enter adds a line.");
  const size = el("p", { id: sizeId, class: "muted", "data-testid": "message-size", hidden: true });
  const delayed = el("input", { type: "checkbox", role: "switch", id: switchId });
  const sendButton = el("button", { type: "submit", class: "primary" }, "Send");
  const steps = el("ul", { role: "status", class: "steps", "aria-label": "Steps" });
  const alert = el("p", { role: "alert", class: "alert", tabindex: "-1" });
  const trustPanel = el("section", { class: "trust card", "aria-label": "Trust new devices", hidden: true });

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

  const form = el(
    "form",
    { "aria-label": label, class: "composer" },
    to?.row,
    el("div", { class: "field" }, el("label", { for: textId }, "Message"), text, hint, size),
    el(
      "div",
      { class: "composer-actions" },
      el("div", { class: "choice" }, delayed, el("label", { for: switchId }, `Deliver in ${DELAY_SECONDS} seconds`)),
      sendButton,
    ),
  );
  // Enter sends; Shift+Enter (and Enter while an input method composes) adds a line as usual.
  text.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.altKey || event.ctrlKey) return;
    event.preventDefault();
    form.requestSubmit(sendButton);
  });

  const step = (words) => steps.append(el("li", {}, words));

  /** The safety number of this account and `username`, with "Trust" when their devices changed. */
  function showTrust(username) {
    trustPanel.hidden = false;
    return showSafetyNumber(trustPanel, username, {
      heading: `Compare the safety number with ${username}`,
      intro: `Read it to ${username} in person or over a call, or scan each other's code. If it matches theirs, ` +
        `press Trust. If not, do not send: someone may be reading along.`,
      identity,
      offerTrust: async () => true,
      onTrusted: (theirs) => {
        trustPanel.hidden = true;
        alert.textContent = "";
        step(`${theirs.username}'s devices are trusted. Send again.`);
      },
      onError: (error) => (alert.textContent = describe(error)),
    });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (sendButton.disabled) return;
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
    const said = [];
    const report = (words) => (said.push(words), step(words));
    try {
      if (session.keypairCreated && session.keypairCreated === session.account?.id) {
        report("Keypair created");
        session.keypairCreated = null;
      }
      const record = await unlockedRecord(gateSlot, "Unlock them to send this message.");
      const names = to ? to.input.value.split(/[\s,]+/) : recipients();
      const sent = await send(record, { to: names, text: text.value, delayed: delayed.checked, report });
      report(delayed.checked ? `Sent. It is delivered in ${DELAY_SECONDS} seconds.` : "Sent.");
      if (sent?.id) sentSteps.set(sent.id, said);
      text.value = "";
      showSize();
      onSent({ names, sent, steps: said });
    } catch (error) {
      alert.textContent = describe(error);
      if (alert.isConnected && document.activeElement !== text) alert.focus({ preventScroll: true });
      if (error instanceof PinError && error.changes.length) showTrust(error.username);
    } finally {
      sendButton.disabled = false;
    }
  });

  return { form, text, steps, alert, trustPanel, showTrust, disable: () => (sendButton.disabled = true) };
}

/** Replaces `node`'s children with the steps `words`, as a composer shows them. */
export const showSteps = (node, words) => replace(node, ...words.map((w) => el("li", {}, w)));
