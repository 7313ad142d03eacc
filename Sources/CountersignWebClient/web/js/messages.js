// Messages (PingIdentity and cryptology-project): sealing a text to every device of the recipients and of
// this account (SPEC §8), keeping what arrives still sealed in IndexedDB, and opening it only to show it,
// under a key pinned for its sender.
import { ApiError } from "./api.js";
import { base64url, fromBase64url, hex, sha256, utf8 } from "./bytes.js";
import { spki } from "./device-keys.js";
import { MAX_PLAINTEXT, open, parse, seal } from "./envelope.js";
import { rawPoint } from "./hpke.js";
import { allFor, run } from "./keystore.js";
import { keyIdHex, openCopy, sealCopy } from "./local-seal.js";
import { makeCopy, readCopy } from "./opened-copy.js";
import {
  checkBeforeSending,
  isUsername,
  normalise,
  PinError,
  signerKey,
  UnverifiedDevice,
  unverifiedWords,
} from "./pins.js";
import { USERNAME_RULE } from "./rules.js";
import { sendMessage } from "./server/messages.js";
import { session } from "./session.js";

export const DELAY_SECONDS = 15;

const keyIdBytes = async (spkiBytes) => (await sha256(spkiBytes)).subarray(0, 16);

// A record's identity is the same for every message it opens: worked out once per record object.
const identities = new WeakMap();

/** This browser's identity for the pin rules, from its device record. */
export function ownIdentity(record) {
  if (!identities.has(record)) identities.set(record, identityOf(record));
  return identities.get(record);
}

async function identityOf(record) {
  const signingSpki = await spki(record.signing.publicKey);
  const previous = [];
  for (const old of record.previous ?? []) {
    const oldSpki = await spki(old.signing.publicKey);
    previous.push({ spki: oldSpki, keyId: hex(await keyIdBytes(oldSpki)), retiredAt: old.retiredAt });
  }
  return {
    username: normalise(session.account.username) ?? String(session.account.username),
    deviceId: record.deviceId,
    signingSpki,
    signingKeyId: hex(await keyIdBytes(signingSpki)),
    encryptionKeyId: hex(await keyIdBytes(await spki(record.encryption.publicKey))),
    previous,
  };
}

const kib = (bytes) => Math.ceil(bytes / 1024).toLocaleString("en");

/** What a text of `bytes` (UTF-8) over the limit is told: how much too long, and what to do. */
export const tooLongWords = (bytes) =>
  `The text is ${kib(bytes)} KiB, over the ${kib(MAX_PLAINTEXT)} KiB (1 MiB) a message can hold. Shorten it, or send ` +
    `it as a file under Files. Nothing was sent.`;

/** How many bytes `text` takes in UTF-8, counted only when it may be near `MAX_PLAINTEXT` (a UTF-16
 *  code unit is 1 to 3 bytes): null when it is surely below `share` of the limit. */
export function textSize(text, share = 0.9) {
  // At most 3 UTF-8 bytes per UTF-16 unit: a text that short cannot be near the limit, and is not encoded.
  if (text.length * 3 < share * MAX_PLAINTEXT) return null;
  const bytes = utf8(text).length;
  return bytes < share * MAX_PLAINTEXT ? null : bytes;
}

/** The counter's words for a text of `bytes`: from 90 % of the limit on, before it is reached. */
export const sizeWords = (bytes) =>
  bytes > MAX_PLAINTEXT
    ? `Too long: ${kib(bytes)} KiB of the ${kib(MAX_PLAINTEXT)} KiB a message can hold. Shorten it, or send it as a ` +
        `file under Files.`
    : `${kib(bytes)} KiB of the ${kib(MAX_PLAINTEXT)} KiB (1 MiB) a message can hold.`;

/**
 * Seals `text` to every device of `to` and of this account, signs it, and sends it. `report` gets each
 * step in PingIdentity's words. Throws PinError when a contact's devices changed (nothing is sent).
 */
export async function send(record, { to, text, delayed, report = () => {} }) {
  const own = await ownIdentity(record);
  const given = to.filter((name) => name !== "");
  if (!given.length) throw new Error("Name at least one recipient in To.");
  const names = [...new Set(given.map(normalise))];
  if (!names.every(isUsername)) throw new Error(`A username is ${USERNAME_RULE}.`);
  const plaintext = utf8(text);
  if (plaintext.length > MAX_PLAINTEXT) throw new Error(tooLongWords(plaintext.length));
  const recipients = [];
  const commits = [];
  const encryptionSpki = await spki(record.encryption.publicKey);
  recipients.push({ keyId: await keyIdBytes(encryptionSpki), point: await rawPoint(record.encryption.publicKey) });
  for (const name of [...names, ...(names.includes(own.username) ? [] : [own.username])]) {
    const { devices, commit } = await checkBeforeSending(name, own);
    commits.push(commit);
    if (!devices.length && name !== own.username)
      throw new Error(`${name} has no device to receive messages yet: nothing was sent.`);
    for (const d of devices) {
      const key = fromBase64url(d.encryptionKey);
      recipients.push({ keyId: await keyIdBytes(key), point: key.subarray(key.length - 65) });
    }
  }
  // One stanza per key (a key shared by two devices is sealed to once).
  const distinct = [...new Map(recipients.map((r) => [hex(r.keyId), r])).values()];
  const envelope = await seal({
    plaintext,
    senderKeyId: await keyIdBytes(own.signingSpki),
    signingKey: record.signing.privateKey,
    recipients: distinct,
  });
  report("String encrypted");
  report("String signed");
  let sent;
  try {
    sent = await sendMessage(
      { to: names, envelope: base64url(envelope), deliverAfter: delayed ? DELAY_SECONDS : undefined },
      session.deviceToken,
    );
  } catch (error) {
    if (error instanceof ApiError && error.code === "device-mismatch") {
      throw new Error("The recipients' devices changed while sending. Nothing was sent; send again.");
    }
    throw error;
  }
  for (const commit of commits) await commit();
  if (delayed) report(`Timer created for ${DELAY_SECONDS} sec`);
  return sent;
}

const recordKey = (id) => `${session.account.id}/${id}`;

// The largest envelope (SPEC §8.5: 256 stanzas, a 1 MiB body) in unpadded base64url, with room to spare.
const MAX_ENVELOPE_CHARS = 1_450_000;

/** Whether a queued entry from the server has the documented shape: names under the username rule
 *  (nothing that only looks like one is ever shown), an ID, and an envelope of a possible size. */
function wellFormed(entry) {
  return (
    typeof entry?.id === "string" &&
    /^[0-9a-f]{32}$/.test(entry.id) &&
    (entry.direction === "incoming" || entry.direction === "outgoing") &&
    isUsername(entry.from) &&
    Array.isArray(entry.to) &&
    entry.to.length >= 1 &&
    entry.to.length <= 64 &&
    entry.to.every(isUsername) &&
    typeof entry.envelope === "string" &&
    entry.envelope.length <= MAX_ENVELOPE_CHARS &&
    Number.isFinite(Date.parse(entry.acceptedAt))
  );
}

/**
 * Stores a queued entry still sealed; resolves, once it is durably committed, true when it is new (a
 * duplicate keeps its read state). An entry without the documented shape is dropped (false): it could
 * never be shown, and acknowledging it lets the server delete it.
 */
export async function store(entry) {
  if (!wellFormed(entry)) return false;
  const accountId = session.account.id;
  const key = `${accountId}/${entry.id}`;
  const kept = {
    key,
    accountId,
    id: entry.id,
    direction: entry.direction,
    from: entry.from,
    fromDevice: String(entry.fromDevice ?? ""),
    to: entry.to,
    envelope: entry.envelope,
    acceptedAt: entry.acceptedAt,
    deliverAt: String(entry.deliverAt ?? entry.acceptedAt),
    read: false,
    storedAt: Date.now(),
  };
  let added = false;
  await run(
    "messages",
    "readwrite",
    (messages) => {
      const existing = messages.get(key);
      existing.onsuccess = () => {
        if (existing.result) return;
        added = true;
        messages.put(kept);
      };
      return null;
    },
    { durability: "strict" },
  );
  return added;
}

/** Every message kept here for the account, newest first. */
export async function list() {
  const all = await allFor("messages", session.account.id);
  return all.sort((a, b) => (a.acceptedAt < b.acceptedAt ? 1 : a.acceptedAt > b.acceptedAt ? -1 : 0));
}

export const get = (id) => run("messages", "readonly", (messages) => messages.get(recordKey(id)));

/** This device's key pairs, current first, then the retired ones (newest first). */
const pairsOf = (record) => [record, ...[...(record.previous ?? [])].reverse()];

/** Marks stored messages read and keeps the opened copies in `copies` (message ID → copy, openMessage's
 *  `copy`, for messages of `list` or others), in one transaction, each with its other fields as stored now
 *  (another tab may have changed them). Those read already, without a new copy, are left alone. */
export function markRead(list, { copies = new Map() } = {}) {
  const unread = new Set(list.filter((message) => !message.read).map((message) => message.id));
  const ids = new Set([...unread, ...copies.keys()]);
  if (!ids.size) return Promise.resolve();
  return run("messages", "readwrite", (messages) => {
    for (const id of ids) {
      const request = messages.get(recordKey(id));
      request.onsuccess = () => {
        const stored = request.result;
        const copy = copies.get(id);
        if (!stored || ((!unread.has(id) || stored.read) && !copy)) return;
        messages.put({ ...stored, ...(unread.has(id) && { read: true }), ...(copy && { opened: copy }) });
      };
    }
    return null;
  });
}

// A record's decryption keys, the same for every message it opens: worked out once per record object.
const decryptionKeys = new WeakMap();

/** This device's encryption key pairs, current first, then the retired ones as kept (oldest first), each with
 *  its key ID and public point. */
function keysOf(record) {
  if (!decryptionKeys.has(record)) {
    const pairs = [record.encryption, ...(record.previous ?? []).map((p) => p.encryption)];
    decryptionKeys.set(record, Promise.all(pairs.map(async (pair) => {
      const keyId = await keyIdBytes(await spki(pair.publicKey));
      return { keyId, keyIdHex: hex(keyId), privateKey: pair.privateKey, point: await rawPoint(pair.publicKey) };
    })));
  }
  return decryptionKeys.get(record);
}

/**
 * Verifies and decrypts a stored message: its signer must be a key pinned for the sender the server
 * names (this account for an outgoing one), and its ID the envelope's. `report` gets "Signature verified"
 * then "String decrypted". A message re-sealed here when the keys were replaced (`local`, local-seal.js)
 * opens from that copy, which says what was verified and when. Returns the text, the parsed envelope, and
 * `local` ({ sender, signerKeyId, signedAt, verifiedAt }) for a copy. `markAsRead: false` for a preview (and for
 * a batch, which marks what opened with one `markRead`);
 * `pinFirst: false` leaves a first contact unpinned. `directories` (a Map) lets a batch ask the key
 * directory once per sender (pins.js signerKey).
 */
export async function openMessage(
  record,
  message,
  report = () => {},
  { markAsRead = true, pinFirst = true, directories } = {},
) {
  const bytes = fromBase64url(message.envelope);
  const header = parse(bytes);
  if (hex(header.messageId) !== message.id)
    throw new Error(
      `The server labelled this message ${message.id}, but its envelope is ${hex(header.messageId)}: refused.`,
    );
  if (message.local) {
    const local = await openCopy(message.local, {
      accountId: message.accountId,
      messageId: message.id,
      pairs: pairsOf(record),
    });
    if (local) {
      report(`Signature verified ${new Date(local.verifiedAt).toLocaleString()}, before this browser's keys changed`);
      report("String decrypted from this browser's re-sealed copy");
      if (markAsRead) await markRead([message]);
      return {
        text: local.text,
        envelope: header,
        sender: local.sender,
        bytes,
        firstContact: false,
        local,
        unverified: local.unverified ?? null,
      };
    }
  }
  const own = await ownIdentity(record);
  const sender = message.direction === "outgoing" ? own.username : message.from;
  let signer;
  try {
    signer = await signerKey(sender, hex(header.senderKeyId), header.created, own, undefined, { directories });
  } catch (error) {
    // A device the directory lists for the sender that no pinned device approved: its signature is checked,
    // and the message shown as from that new, unverified device (with "Verify"), never as from the sender.
    if (!(error instanceof UnverifiedDevice)) throw error;
    signer = error.signer;
  }
  const from = signer.unverified ? `, ${unverifiedWords(sender, signer.unverified)}` : "";
  const keys = await keysOf(record);
  // Opened here before, under this device's current keys: the signature held then, under the key the pins
  // name now (the copy says which key signed), so only the copy is decrypted (opened-copy.js).
  const envelopeHash = await sha256(bytes);
  const copied = await copyOf(message, header, envelopeHash, keys[0]);
  if (copied) {
    report(`Signature verified${from} (${new Date(copied.verifiedAt).toLocaleString()}, when first opened here)`);
    if (pinFirst) await signer.commit();
    if (signer.firstContact && pinFirst) report(firstContactWords(sender));
    report("String decrypted from this browser's opened copy");
    if (markAsRead) await markRead([message]);
    return {
      text: copied.text,
      envelope: header,
      sender,
      bytes,
      firstContact: signer.firstContact && pinFirst,
      unverified: signer.unverified ?? null,
      copied,
    };
  }
  const senderSpki = signer.spki;
  // This device's current encryption key, or a retired one the message was sealed to before a rotation.
  const sealedTo = new Set(header.stanzas.map((s) => hex(s.keyId)));
  const mine = keys.findLast((k) => sealedTo.has(k.keyIdHex)) ?? keys[0];
  const opened = await open(bytes, { senderSpki, keyId: mine.keyId, privateKey: mine.privateKey, point: mine.point });
  report(`Signature verified${from}`);
  // A first contact is pinned only now that its key is known to have signed.
  if (pinFirst) await signer.commit();
  if (signer.firstContact && pinFirst) report(firstContactWords(sender));
  const text = new TextDecoder("utf-8", { fatal: true }).decode(opened.plaintext);
  report("String decrypted");
  // What opening found, kept for the next showing: written by the caller with the read marks (markRead).
  const copy = await makeCopy({
    accountId: message.accountId,
    messageId: message.id,
    envelopeHash,
    content: { text, signerKeyId: hex(header.senderKeyId), verifiedAt: Date.now() },
    pair: keys[0],
    keyId: keys[0].keyIdHex,
  }).catch(() => null);
  if (markAsRead) await markRead([message], { copies: new Map(copy ? [[message.id, copy]] : []) });
  return {
    text,
    envelope: opened,
    sender,
    bytes,
    firstContact: signer.firstContact && pinFirst,
    unverified: signer.unverified ?? null,
    copy,
  };
}

const firstContactWords = (sender) =>
  `First message from ${sender}: their devices are now pinned. Compare the safety number with them to be sure.`;

/** The content of a message's opened copy for `current` (this device's current key pair) when it is one for
 *  this envelope's signer; null when there is none, it is for other keys, or it does not open (altered: the
 *  envelope is opened instead, and its copy written anew). */
async function copyOf(message, header, envelopeHash, current) {
  if (!message.opened) return null;
  try {
    const content = await readCopy(message.opened, {
      accountId: message.accountId,
      messageId: message.id,
      envelopeHash,
      pair: current,
      keyId: current.keyIdHex,
    });
    const fits = content && typeof content.text === "string" && content.signerKeyId === hex(header.senderKeyId);
    return fits ? content : null;
  } catch {
    return null;
  }
}

/** Whether `error` (opening `message` in a batch) came from the sender's directory not answering: a pin
 *  refusal for a sender whose directory request failed for a reason other than its content. */
async function unreachable(error, message, directories) {
  if (!(error instanceof PinError)) return false;
  const asked = directories.get(normalise(message.from) ?? message.from);
  return asked ? asked.then(() => false, (failure) => !(failure instanceof PinError)) : false;
}

/**
 * Before this device's keys are replaced and the old ones deleted (the key gate turned on): every stored
 * message that opens under `record`'s keys gets a local copy sealed to `keys` (the new pairs), with what was
 * verified, so nothing that opened before stops opening. One that does not open now (refused) is left as
 * it is. Throws, once it has been through them all, when any could not be checked because its sender's
 * directory did not answer: the caller keeps the old keys (device.js: before the server is asked, nothing
 * changes; after, the rotation stays pending and is settled at the next start with the old keys retired, not
 * deleted). Run again for messages that arrived meanwhile: a message with a copy for `keys` is skipped.
 */
export async function keepHistory(record, keys) {
  const accountId = record.accountId;
  const target = await keyIdHex(keys.encryption.publicKey);
  const directories = new Map();
  const unchecked = [];
  for (const message of await allFor("messages", accountId)) {
    if (message.local?.keyId === target) continue;
    let opened;
    try {
      // A stranger's message is checked against the directory, not pinned: opening it here is not reading it.
      opened = await openMessage(record, message, () => {}, { markAsRead: false, pinFirst: false, directories });
    } catch (error) {
      // Refused before: it stays refused. Not checked because the server could not be asked: not refused.
      if (await unreachable(error, message, directories)) unchecked.push(message.id);
      continue;
    }
    const header = opened.envelope;
    const content = opened.local ?? {
      text: opened.text,
      sender: opened.sender,
      signerKeyId: hex(header.senderKeyId),
      signedAt: header.created,
      verifiedAt: opened.copied?.verifiedAt ?? Date.now(),
      // From a new device nobody approved then: said so still, whatever is trusted later.
      ...(opened.unverified && { unverified: opened.unverified }),
    };
    const local = await sealCopy({ accountId, messageId: message.id, content, ...keys });
    await run("messages", "readwrite", (messages) => {
      const request = messages.get(message.key);
      // The opened copy, for the keys going, is of no use any more.
      request.onsuccess = () => {
        if (!request.result) return;
        const { opened: _, ...kept } = request.result;
        messages.put({ ...kept, local });
      };
      return null;
    }, { durability: "strict" });
  }
  if (unchecked.length) {
    const count = unchecked.length === 1 ? "One stored message" : `${unchecked.length} stored messages`;
    throw new Error(
      `${count} could not be checked now: the server could not be asked whose keys signed them, and they would ` +
        `not open once the old keys are deleted, so the old keys are kept. Try again when you are online.`,
    );
  }
}

/**
 * Opens, in the background, the stored messages of `ids` that have no opened copy yet, and keeps their copies
 * (opened-copy.js) without marking anything read: what arrives while the keys are open is verified and
 * decrypted once, as it comes, so the conversation shows it from the copy. A first contact is checked against
 * the directory, not pinned; one that does not open (refused, or its sender's directory not answering) is left
 * for the screen, which says why. The pins are asked again at every showing, copy or not. `usable()`, asked
 * before each message and the write: whether the keys may still be used for this account.
 */
export async function keepCopies(record, ids, { usable = () => true } = {}) {
  const directories = new Map();
  const copies = new Map();
  for (const id of ids) {
    // Stopped as soon as the keys lock or the page signs out (or in as someone else): nothing opens after.
    if (!usable()) return 0;
    const message = await get(id).catch(() => null);
    if (!message || message.opened || message.local) continue;
    try {
      const options = { markAsRead: false, pinFirst: false, directories };
      const { copy } = await openMessage(record, message, () => {}, options);
      if (copy) copies.set(id, copy);
    } catch {
      // Shown, with its reason, when the person opens it.
    }
  }
  if (!copies.size || !usable()) return 0;
  await markRead([], { copies });
  return copies.size;
}
