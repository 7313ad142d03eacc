// Web Push in the browser tests (tests_notifications.py). Chromium here has no vendor push service, so
// PushManager.subscribe fails: `fakePushSubscription` stands in for it with a subscription whose keys Python
// made (window.__pushSubscription, set by the init script before this), kept across this origin's pages.

/** PushManager.subscribe and getSubscription as a browser with a push service answers them. */
function fakePushSubscription() {
  const json = window.__pushSubscription;
  const subscription = {
    endpoint: json.endpoint,
    expirationTime: null,
    toJSON: () => ({ endpoint: json.endpoint, expirationTime: null, keys: { ...json.keys } }),
    unsubscribe: async () => (localStorage.removeItem("test-push-subscribed"), true),
  };
  PushManager.prototype.subscribe = async function (options) {
    window.__subscribedWith = options;
    localStorage.setItem("test-push-subscribed", "1");
    return subscription;
  };
  PushManager.prototype.getSubscription = async function () {
    return localStorage.getItem("test-push-subscribed") ? subscription : null;
  };
}

/** The authenticator record's pinned challenge key replaced by another P-256 key's (a forged challenge's signer
 *  as the browser sees it); resolves with the pinned SPKI's bytes, to put back with `putChallengeKey`. */
function swapChallengeKey() {
  return crypto.subtle
    .generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign"])
    .then((pair) => crypto.subtle.exportKey("spki", pair.publicKey))
    .then((spki) => putChallengeKey(Array.from(new Uint8Array(spki))));
}

/** Puts `bytes` as the authenticator record's pinned challenge key; resolves with the bytes it had. */
function putChallengeKey(bytes) {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const store = r.result.transaction("authenticators", "readwrite").objectStore("authenticators");
      const all = store.getAll();
      all.onsuccess = () => {
        const record = all.result[0];
        const before = Array.from(new Uint8Array(record.challengeKey.spki));
        record.challengeKey.spki = new Uint8Array(bytes);
        const put = store.put(record);
        put.onsuccess = () => resolve(before);
        put.onerror = () => reject(put.error);
      };
    };
    r.onerror = () => reject(r.error);
  });
}
