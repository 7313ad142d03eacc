// The page's signals: a module that tells the others something happened emits it here, and a module that
// wants to hear it listens here; nothing else carries them (no window events of our own, no listener sets
// in the modules). The topics are fixed, so a misspelt one throws instead of going nowhere.
//
// Listeners of a topic run at once, in the order they were added, with the emitter's value; one removed
// meanwhile (by an earlier one) is not called, and what one throws reaches the emitter.

/** Every topic, with what its listeners get. */
export const TOPICS = Object.freeze({
  /** The account session ended elsewhere (api.js found it at a call): nothing. */
  "session-ended": "nothing",
  /** The key gate's limit wiped this browser's keys: the words to sign in with. */
  wiped: "the words",
  /** A key gate opened or closed: { accountId, unlocked }. */
  "gate-changed": "{ accountId, unlocked, shared }",
  /** The page is hidden, or signed out: decrypted text must go. */
  "drop-decrypted": "nothing",
  /** The inbox: { kind: "message", entry } | { kind: "state", state, detail } | { kind: "moved-here" }. */
  inbox: "{ kind, … }",
  /** The authenticator: { kind: "requests" | "state" | "ignored" | "paired" | "removed", why? }. */
  authenticator: "{ kind, … }",
  /** A message's notification was clicked: its ID. */
  "message-requested": "the message ID",
  /** A sign-in request's notification was clicked: nothing. */
  "approval-requested": "nothing",
  /** Another screen (or none) is shown in the page's main element: nothing. */
  "screen-changed": "nothing",
});

const listeners = new Map(Object.keys(TOPICS).map((topic) => [topic, new Set()]));

function topicListeners(topic) {
  const set = listeners.get(topic);
  if (!set) throw new Error(`No such signal: ${topic}`);
  return set;
}

/** Calls `listener(value)` at every `emit(topic, value)` from now on (once, however often it is added);
 *  returns a function that stops it. */
export function on(topic, listener) {
  const set = topicListeners(topic);
  set.add(listener);
  return () => set.delete(listener);
}

/** Tells every listener of `topic`. */
export function emit(topic, value) {
  topicListeners(topic).forEach((listener) => listener(value));
}

/** Removes every listener of `topic` (signed out: what the screens registered goes with them). */
export function clear(topic) {
  topicListeners(topic).clear();
}
