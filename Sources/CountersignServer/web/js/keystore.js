// Where the browser keeps its device: IndexedDB, one record per account (so another account signing in
// on the same browser profile gets a device and a store of its own). The private keys are WebCrypto
// CryptoKeys with extractable = false: the page can use them and never read them.
const DB = "countersign";
const VERSION = 1;

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains("devices")) db.createObjectStore("devices", { keyPath: "accountId" });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(new Error(`This browser's storage cannot be opened: ${request.error?.message}`));
  });
}

async function run(mode, body) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction("devices", mode);
      const result = body(tx.objectStore("devices"));
      tx.oncomplete = () => resolve(result.result);
      tx.onerror = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
      tx.onabort = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
    });
  } finally {
    db.close();
  }
}

export const keystore = {
  device: (accountId) => run("readonly", (store) => store.get(accountId)),
  save: (record) => run("readwrite", (store) => store.put(record)),
  remove: (accountId) => run("readwrite", (store) => store.delete(accountId)),
};
