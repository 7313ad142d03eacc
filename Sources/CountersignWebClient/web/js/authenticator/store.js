// Where this browser keeps its authenticator: one record per account in IndexedDB's "authenticators"
// store (keystore.js), beside the messaging device: its keys, the server's challenge key pinned at pairing,
// and the TOTP secret as a non-extractable HMAC key.
import { run } from "../keystore.js";

/** The account's authenticator record, or undefined when this browser is not paired for it. */
export const pairedRecord = (accountId) => run("authenticators", "readonly", (store) => store.get(accountId));

export const saveRecord = (record) => run("authenticators", "readwrite", (store) => store.put(record));

export const deleteRecord = (accountId) => run("authenticators", "readwrite", (store) => store.delete(accountId));

/** Deletes the account's record only while it is still authenticator `deviceId`: a pairing made since,
 *  in another tab, is kept. */
export const deleteIfStill = (accountId, deviceId) =>
  run("authenticators", "readwrite", (store) => {
    const get = store.get(accountId);
    get.onsuccess = () => get.result?.deviceId === deviceId && store.delete(accountId);
    return null;
  });
