// A message's "Details": PingIdentity's steps as they happened (sending, when this page sent it; opening:
// verified, decrypted, or opened from the copy re-sealed here when the keys changed), and "What the server
// sees" beside them: every piece of metadata the server holds of it, not only its ciphertext. Filled when
// first opened, so a long conversation does not render thousands of hex digits it never shows.
import { groupedKeyId, hex } from "../bytes.js";
import { visibleText } from "../display-name.js";
import { el } from "../dom.js";
import { fingerprint } from "../rules.js";

const when = (value) => {
  const date = new Date(value);
  return Number.isFinite(date.getTime()) ? date.toLocaleString() : String(value);
};

const facts = (rows, attributes = {}) =>
  el("dl", { class: "facts", ...attributes }, ...rows.flatMap(([name, value, mono]) => [
    el("dt", {}, name),
    el("dd", { class: mono ? "mono" : "" }, value),
  ]));

/** The metadata rows the server holds: who, to whom, how many devices, when, how large. */
export function serverRows(message, envelope, bytes, status = null) {
  const rows = [
    ["Sender", `${visibleText(message.from)}${message.fromDevice ? ` (device ${message.fromDevice})` : ""}`],
    ["Recipients", message.to.map(visibleText).join(", ")],
    [
      "Devices sealed to",
      `${envelope.stanzas.length} ${envelope.stanzas.length === 1 ? "key" : "keys"}: every device of the ` +
        `recipients and of the sender's account` +
        (status ? `; ${status.recipientDevices} of them the recipients' devices` : ""),
    ],
    ["Sent (accepted by the server)", when(message.acceptedAt)],
    ["Available to the recipients from", when(message.deliverAt)],
    ["Size", `${bytes.length.toLocaleString("en")} bytes`],
  ];
  if (status) rows.push(["Stored by recipient devices", `${status.acknowledgedBy} of ${status.recipientDevices}`]);
  return rows;
}

/** The envelope's own fields, as the server stores and relays them. */
function envelopeRows(message, envelope, bytes) {
  const long = bytes.length > 65_536;
  const created = Number.isFinite(new Date(envelope.created).getTime())
    ? new Date(envelope.created).toISOString()
    : `${envelope.created} ms`;
  return [
    ["Message ID", hex(envelope.messageId), true],
    ["Signed by key", groupedKeyId(hex(envelope.senderKeyId)), true],
    ["Created (sender's clock)", created, true],
    ["Content type", envelope.contentType, true],
    ["Sealed to keys", envelope.stanzas.map((s) => groupedKeyId(hex(s.keyId))).join(", "), true],
    ["Ciphertext (hex)", hex(envelope.body), true],
    ["Signature (hex)", hex(envelope.signature), true],
    // A long one (up to 1.4 million characters) is cut: the page would only slow down showing it all.
    ["Envelope (base64url)", long ? `${message.envelope.slice(0, 4096)}… (cut here)` : message.envelope, true],
  ];
}

/**
 * The "Details" disclosure of an opened message. `opened`: openMessage's answer (null when it was
 * refused); `steps`: what sending and opening said; `status()`: a promise of the server's MessageStatus for
 * an outgoing message (null otherwise).
 */
export function detailsOf(message, { opened, steps, status = () => Promise.resolve(null) }) {
  const details = el("details", { class: "details" }, el("summary", {}, "Details"));
  let filled = false;
  details.addEventListener("toggle", async () => {
    if (!details.open || filled) return;
    filled = true;
    const stepList = el("ul", { class: "steps", "aria-label": "Steps as they happened" },
      ...steps.map((words) => el("li", {}, words)));
    const local = opened?.local;
    const verified = local && el(
      "p",
      { class: "muted" },
      `Verified ${when(local.verifiedAt)}: signed by ` +
        (local.unverified
          ? `the key ${fingerprint(local.signerKeyId)} of ${visibleText(local.sender)}'s new device ` +
            `“${visibleText(local.unverified.name ?? "")}”, which no device of theirs had approved then,`
          : `${visibleText(local.sender)}'s key ${fingerprint(local.signerKeyId)}`) +
        ` at ${when(local.signedAt)}. This browser re-sealed it to its new keys then, before the old ones were ` +
        `deleted.`,
    );
    const server = el("section", { class: "server-view", "aria-label": "What the server sees" },
      el("h3", {}, "What the server sees"));
    details.append(
      el("div", { class: "details-grid" },
        el("section", { "aria-label": "Steps" }, el("h3", {}, "Steps"), stepList, verified),
        server));
    const known = await status().catch(() => null);
    if (!opened) {
      server.append(el("p", { class: "muted" }, "Its envelope did not open here."));
      return;
    }
    server.append(
      el("p", {}, "The server cannot read the text: only the devices it was sealed to can. It holds this about it:"),
      facts(serverRows(message, opened.envelope, opened.bytes, known), { "aria-label": "Metadata the server holds" }),
      el(
        "p",
        { class: "muted" },
        "It also sees when each device fetches and acknowledges it, and the network address each connection comes " +
          "from. It keeps the envelope and these facts for 30 days after it became available, even once every device " +
          "stored it.",
      ),
      el("details", { class: "server-bytes" },
        el("summary", {}, "The envelope's bytes"),
        facts(envelopeRows(message, opened.envelope, opened.bytes))),
    );
  });
  return details;
}
