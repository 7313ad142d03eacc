// Where the browser keeps its device: IndexedDB, one record per account (so another account signing in
// on the same browser profile gets a device and a store of its own). The private keys are WebCrypto
// CryptoKeys with extractable = false: the page can use them and never read them. Beside them, per
// account: received messages still sealed, the key pins of contacts (trust on first use), whom it accepted
// or blocked for message requests, and the browser's authenticator (a device of its own, PROTOCOL §3)
// when it is paired for the account.
// With the key gate on (SPEC §14), device records pass through gate-keys.js: private keys are stored only
// wrapped, and read back from the page's memory while the gate is open.
import { storable, usable } from "./gate-keys.js";

const DB = "countersign";
const VERSION = 5;
const STORES = {
  devices: { keyPath: "accountId" },
  messages: { keyPath: "key", index: "accountId" },
  pins: { keyPath: "key", index: "accountId" },
  authenticators: { keyPath: "accountId" },
  // The one session this browser stays signed in with (stay-signed-in.js): a binding's ID, never a token.
  bindings: { keyPath: "slot" },
  // Key gate events from before a session existed (a locked reload, gate.js): sent at the next session.
  heldReports: { keyPath: "id", index: "accountId" },
  // Whom the account accepted or blocked here, for message requests (peers.js).
  peers: { keyPath: "key", index: "accountId" },
};

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      for (const [name, { keyPath, index }] of Object.entries(STORES)) {
        if (db.objectStoreNames.contains(name)) continue;
        const store = db.createObjectStore(name, { keyPath });
        if (index) store.createIndex(index, index);
      }
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(new Error(`This browser's storage cannot be opened: ${request.error?.message}`));
  });
}

// One connection serves every transaction of the page (opening one costs more than most transactions do). It
// is let go when another page needs the database upgraded or deleted (versionchange) or the browser closes
// it, and the next transaction opens a new one.
let connection = null;

function database() {
  if (!connection) {
    const opening = open().then(
      (db) => {
        const forget = () => {
          if (connection === opening) connection = null;
        };
        db.onversionchange = () => (forget(), db.close());
        db.onclose = forget;
        return db;
      },
      (error) => {
        connection = null;
        throw error;
      },
    );
    connection = opening;
  }
  return connection;
}

/** `use(tx)` on a new transaction of the shared connection, called at once (a transaction left waiting commits
 *  with nothing in it); a connection closed meanwhile is replaced once. */
async function transaction(names, mode, options, use) {
  let db = await database();
  let tx;
  try {
    tx = db.transaction(names, mode, options);
  } catch (error) {
    if (error?.name !== "InvalidStateError") throw error;
    if (connection && (await connection.catch(() => null)) === db) connection = null;
    db = await database();
    tx = db.transaction(names, mode, options);
  }
  return use(tx);
}

/** Runs `body(store)` in one transaction on `name`; resolves with the result of the request it returns. */
export function run(name, mode, body, options = {}) {
  return transaction(name, mode, options, (tx) => new Promise((resolve, reject) => {
    const result = body(tx.objectStore(name));
    tx.oncomplete = () => resolve(result?.result);
    tx.onerror = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
    tx.onabort = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
  }));
}

/** Every record of `name` for an account. */
export const allFor = (name, accountId) => run(name, "readonly", (store) => store.index("accountId").getAll(accountId));

export const keystore = {
  device: async (accountId) => usable(await run("devices", "readonly", (store) => store.get(accountId))),
  save: async (record) => {
    const stored = await storable(record);
    return run("devices", "readwrite", (store) => store.put(stored));
  },
  /**
   * Changes the account's key gate (SPEC §14) in one readwrite transaction, so changes made at once, in this
   * page or another, each start from the one before: `change(gate)` gets the stored gate (null when there is
   * none, or only a wipe's note) and returns the gate to store, or null to store nothing. It runs inside the
   * transaction, so it must not await; what it throws rejects the call and stores nothing. Resolves with the
   * gate as stored afterwards (null when there is none).
   */
  updateGate: (accountId, change) =>
    transaction("devices", "readwrite", {}, (tx) => new Promise((resolve, reject) => {
      const store = tx.objectStore("devices");
      let stored = null;
      let thrown = null;
      store.get(accountId).onsuccess = (event) => {
        const record = event.target.result;
        try {
          const gate = change(record?.gate ?? null);
          stored = record?.gate ?? null;
          if (gate && record) {
            store.put({ ...record, gate });
            stored = gate;
          }
        } catch (error) {
          thrown = error;
          tx.abort();
        }
      };
      tx.oncomplete = () => resolve(stored);
      tx.onerror = tx.onabort = () => reject(
        thrown ?? new Error(`This browser's storage failed: ${tx.error?.message}`),
      );
    })),
  /** Notes in one transaction that the device `deviceId`'s signing key `signingSpki` (base64url) has its key
   *  proof (PROTOCOL §1.3): the record as stored then is kept, not a copy read before. */
  markKeysProven: (accountId, deviceId, signingSpki) =>
    transaction("devices", "readwrite", {}, (tx) => new Promise((resolve, reject) => {
      const store = tx.objectStore("devices");
      store.get(accountId).onsuccess = (event) => {
        const record = event.target.result;
        if (record?.deviceId === deviceId) store.put({ ...record, keysProven: signingSpki });
      };
      tx.oncomplete = () => resolve();
      tx.onerror = tx.onabort = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
    })),
  /**
   * Forgets the account's device keys, its messages, its pins and whom it accepted or blocked, in one
   * transaction. `note`, when given, takes the device record's place (the key gate's wipe keeps what the
   * device needs to revoke itself).
   */
  remove: async (accountId, note = null) => {
    await transaction(Object.keys(STORES), "readwrite", {}, (tx) => new Promise((resolve, reject) => {
      if (note) tx.objectStore("devices").put({ ...note, accountId });
      else tx.objectStore("devices").delete(accountId);
      for (const name of ["messages", "pins", "peers"]) {
        const store = tx.objectStore(name);
        store.index("accountId").getAllKeys(accountId).onsuccess = (event) => {
          for (const key of event.target.result) store.delete(key);
        };
      }
      tx.oncomplete = resolve;
      tx.onerror = tx.onabort = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
    }));
  },
};
