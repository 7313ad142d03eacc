// What the page keeps in IndexedDB ("countersign": devices, messages, pins, authenticators; "countersign-files":
// file keys), read and edited behind the page's back. (How these files are run: page.js.)

/** How many records `store` of `database` holds. */
function countRecords([database, store]) {
  return new Promise((resolve) => {
    const r = indexedDB.open(database);
    r.onsuccess = () => {
      const c = r.result.transaction(store).objectStore(store).count();
      c.onsuccess = () => resolve(c.result);
    };
  });
}

/** How many device records there are; -1 when the store cannot be read. */
function countDevices() {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const g = r.result.transaction("devices").objectStore("devices").count();
      g.onsuccess = () => resolve(g.result);
      g.onerror = () => resolve(-1);
    };
    r.onerror = () => resolve(-1);
  });
}

/** How many devices, messages and pins are kept: { devices, messages, pins }. */
function countStores() {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const tx = r.result.transaction(["devices", "messages", "pins"]);
      const out = {};
      for (const name of ["devices", "messages", "pins"]) {
        tx.objectStore(name).count().onsuccess = (e) => (out[name] = e.target.result);
      }
      tx.oncomplete = () => resolve(out);
    };
  });
}

/** Whether each device record's private keys are extractable: [[signing, encryption], …]. */
function deviceKeysExtractable() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const get = r.result.transaction("devices").objectStore("devices").getAll();
      get.onsuccess = () =>
        resolve(get.result.map((d) => [d.signing.privateKey.extractable, d.encryption.privateKey.extractable]));
      get.onerror = () => reject(get.error);
    };
    r.onerror = () => reject(r.error);
  });
}

/** The device records as IndexedDB holds them: bytes as { hex }, CryptoKeys as { cryptoKey: type, extractable }. */
function deviceRecords() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const get = r.result.transaction("devices").objectStore("devices").getAll();
      get.onsuccess = () => {
        const plain = (v) =>
          v instanceof Uint8Array
            ? { hex: Array.from(v, (b) => b.toString(16).padStart(2, "0")).join("") }
            : v instanceof CryptoKey
              ? { cryptoKey: v.type, extractable: v.extractable }
              : Array.isArray(v)
                ? v.map(plain)
                : v && typeof v === "object"
                  ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
                  : v;
        resolve(get.result.map(plain));
      };
      get.onerror = () => reject(get.error);
    };
    r.onerror = () => reject(r.error);
  });
}

/** Flips one bit of the first record's first gate method's PRF salt (again: flips it back). The wrap stays,
 *  the salt the passkey is asked at does not: the PRF output is another, so the gate key does not open. */
function flipPrfSalt() {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const store = r.result.transaction("devices", "readwrite").objectStore("devices");
      store.getAll().onsuccess = (e) => {
        const record = e.target.result[0];
        record.gate.methods[0].prfSalt[0] ^= 1;
        store.put(record).onsuccess = () => resolve(true);
      };
    };
  });
}

/** Sets the stored gate's failed-attempts count (as a tab closed during its checks would have left it). */
function setGateFailures(failures) {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const store = r.result.transaction("devices", "readwrite").objectStore("devices");
      store.getAll().onsuccess = (e) => {
        const record = e.target.result[0];
        record.gate.failures = failures;
        store.put(record).onsuccess = () => resolve(true);
      };
    };
  });
}

/** The stored messages, as JSON text. */
function storedMessages() {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const all = r.result.transaction("messages").objectStore("messages").getAll();
      all.onsuccess = () => resolve(JSON.stringify(all.result));
    };
  });
}

/** Each authenticator's keys: [signing, encryption and TOTP key extractable, TOTP algorithm, hash, usages]. */
function authenticatorKeys() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const get = r.result.transaction("authenticators").objectStore("authenticators").getAll();
      get.onsuccess = () =>
        resolve(
          get.result.map((a) => [
            a.signing.privateKey.extractable,
            a.encryption.privateKey.extractable,
            a.totp.key.extractable,
            a.totp.key.algorithm.name,
            a.totp.key.algorithm.hash.name,
            a.totp.key.usages.join(),
          ]),
        );
      get.onerror = () => reject(get.error);
    };
    r.onerror = () => reject(r.error);
  });
}

/** The device ID of each authenticator kept. */
function authenticatorDeviceIds() {
  return new Promise((resolve) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const g = r.result.transaction("authenticators").objectStore("authenticators").getAll();
      g.onsuccess = () => resolve(g.result.map((a) => a.deviceId));
    };
  });
}

/** Whether each file key's halves are extractable: [[agreement, signing], …]. */
function fileKeysExtractable() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign-files");
    r.onsuccess = () => {
      const g = r.result.transaction("keys").objectStore("keys").getAll();
      g.onsuccess = () => resolve(g.result.map((k) => [k.agreement.extractable, k.signing.extractable]));
      g.onerror = () => reject(g.error);
    };
    r.onerror = () => reject(r.error);
  });
}

/** [whether the file key of the account "someone-else" is kept, then the account ID of every file key kept]. */
async function fileKeyAccounts() {
  const { fileKeys } = await import("/js/file-keys.js");
  const otherKept = (await fileKeys.get("someone-else")) !== undefined;
  const accounts = await new Promise((resolve) => {
    const r = indexedDB.open("countersign-files");
    r.onsuccess = () => {
      const all = r.result.transaction("keys").objectStore("keys").getAllKeys();
      all.onsuccess = () => resolve(all.result);
    };
  });
  return [otherKept, ...accounts];
}

/** The binding records this browser stays signed in with (stay-signed-in.js), CryptoKeys as their kind. */
function bindingRecords() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open("countersign");
    r.onsuccess = () => {
      const g = r.result.transaction("bindings").objectStore("bindings").getAll();
      const kind = (key) => (key ? `CryptoKey ${key.extractable}` : null);
      g.onsuccess = () => resolve(g.result.map((b) => ({ ...b, privateKey: kind(b.privateKey) })));
      g.onerror = () => reject(g.error);
    };
    r.onerror = () => reject(r.error);
  });
}
