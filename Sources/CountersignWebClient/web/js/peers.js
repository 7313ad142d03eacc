// Whom the signed-in account accepted or blocked in this browser, for message requests (conversations.js):
// one record per account and username in IndexedDB, kept with its messages and forgotten with them. Block
// hides a sender's messages here only; the server still relays them, and Unblock shows them again.
import { allFor, run } from "./keystore.js";
import { session } from "./session.js";

const key = (username) => `${session.account.id}/${username}`;

/** { accepted: Set, blocked: Set } of usernames for the signed-in account. */
export async function peers() {
  const accepted = new Set();
  const blocked = new Set();
  for (const record of await allFor("peers", session.account.id)) {
    (record.state === "blocked" ? blocked : accepted).add(record.username);
  }
  return { accepted, blocked };
}

/** Records `usernames` as "accepted" or "blocked" (from either), in one transaction. */
export function setPeers(usernames, state) {
  const accountId = session.account.id;
  return run("peers", "readwrite", (store) => {
    for (const username of usernames) store.put({ key: key(username), accountId, username, state, at: Date.now() });
    return null;
  });
}

/** Unblocks `username`: its messages show again, as a request until accepted. */
export const unblock = (username) => run("peers", "readwrite", (store) => store.delete(key(username)));
