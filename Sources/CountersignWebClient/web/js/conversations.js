// Conversations without keys, storage or the page: which conversation a stored message belongs to (one per
// other party; a message to several people goes to the group of all the others), which conversations are
// requests (a first message from someone this account never exchanged with), which senders are blocked,
// and what the server's acknowledgements say of an outgoing message's delivery. Messages here are the
// records messages.js keeps: { id, direction, from, to, acceptedAt, deliverAt, read }.

/** The other participants of `message` for the account `me`, sorted, each once; [me] for a note to self. */
export function participants(message, me) {
  const everyone = message.direction === "incoming" ? [message.from, ...message.to] : message.to;
  const others = [...new Set(everyone)].filter((name) => name !== me).sort();
  return others.length ? others : [me];
}

/** The conversation's key, as its address says it (`#/messages/bob`, `#/messages/bob,carol`). */
export const conversationKey = (message, me) => participants(message, me).join(",");

/** The names a conversation key holds, or null when it is not one (`isUsername` checks each name). */
export function keyNames(key, isUsername) {
  if (typeof key !== "string" || !key) return null;
  const names = key.split(",");
  const sorted = [...new Set(names)].sort();
  if (!names.every(isUsername) || sorted.join(",") !== key) return null;
  return names;
}

const newestFirst = (a, b) => (a.acceptedAt < b.acceptedAt ? 1 : a.acceptedAt > b.acceptedAt ? -1 : 0);
const oldestFirst = (a, b) => -newestFirst(a, b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Whoever this account sent to at least once: they are known, their messages are never requests. */
export function sentTo(messages) {
  const names = new Set();
  for (const m of messages) if (m.direction === "outgoing") for (const name of m.to) names.add(name);
  return names;
}

/**
 * Sorts the stored messages of account `me` into conversations, newest first. `accepted` and `blocked` are
 * Sets of usernames this account accepted or blocked here. A message from a blocked sender is in no
 * conversation (only counted under `blocked`). A conversation with no outgoing message whose senders are
 * all strangers (never sent to, never accepted) is a request. Returns { conversations, requests, blocked }:
 * each conversation { key, names, messages (oldest first), latest, unread, senders }, and blocked as
 * [{ name, hidden }] (the messages it keeps hidden), sorted by name.
 */
export function sortConversations(messages, me, { accepted = new Set(), blocked = new Set() } = {}) {
  const known = sentTo(messages);
  const hidden = new Map([...blocked].map((name) => [name, 0]));
  const byKey = new Map();
  for (const message of messages) {
    if (message.direction === "incoming" && blocked.has(message.from)) {
      hidden.set(message.from, hidden.get(message.from) + 1);
      continue;
    }
    const key = conversationKey(message, me);
    if (!byKey.has(key)) byKey.set(key, { key, names: key.split(","), messages: [] });
    byKey.get(key).messages.push(message);
  }
  const conversations = [];
  const requests = [];
  for (const c of byKey.values()) {
    c.messages.sort(oldestFirst);
    c.latest = c.messages[c.messages.length - 1];
    c.unread = c.messages.filter((m) => m.direction === "incoming" && !m.read).length;
    c.senders = [...new Set(c.messages.filter((m) => m.direction === "incoming").map((m) => m.from))].sort();
    const stranger = (name) => !known.has(name) && !accepted.has(name) && name !== me;
    const request = c.messages.every((m) => m.direction === "incoming") && c.senders.every(stranger);
    (request ? requests : conversations).push(c);
  }
  const byLatest = (a, b) => newestFirst(a.latest, b.latest);
  return {
    conversations: conversations.sort(byLatest),
    requests: requests.sort(byLatest),
    blocked: [...hidden].map(([name, count]) => ({ name, hidden: count })).sort((a, b) => (a.name < b.name ? -1 : 1)),
  };
}

const devices = (n) => `${n} ${n === 1 ? "device" : "devices"}`;

/**
 * An outgoing message's delivery in words, from the server's MessageStatus (`acknowledgedBy`: recipient
 * devices that stored it; the sender's own devices are not counted) at `now` (ms).
 */
export function deliveryWords(status, now = Date.now()) {
  if (!status) return "Delivery state unknown.";
  if (status.cancelled) return "Cancelled before delivery.";
  const total = status.recipientDevices;
  const deliverAt = Date.parse(status.deliverAt);
  if (Number.isFinite(deliverAt) && deliverAt > now) {
    const at = new Date(deliverAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
    return `Held by the server until ${at}, then delivered to ${devices(total)}.`;
  }
  if (total === 0) return "Sent to your own devices only.";
  const done = Math.min(status.acknowledgedBy, total);
  if (done === 0) return "Sent, not yet delivered.";
  return `Delivered to ${done} of ${devices(total)}.`;
}

/** A message whose delivery may still change: its state is asked again later (not cancelled, not all in). */
export const deliveryPending = (status) =>
  Boolean(status) && !status.cancelled && status.acknowledgedBy < status.recipientDevices;

/** The list's words for a conversation's names: "bob", "bob, carol", "Note to self". */
export const conversationTitle = (names, me) =>
  names.length === 1 && names[0] === me ? "Note to self" : names.join(", ");
