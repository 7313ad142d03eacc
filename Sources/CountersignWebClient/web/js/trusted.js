// Trusted Types (the page's policy requires them for script URLs): the only script URLs this client
// makes are its own workers', by name (the service worker's too).
const workers = new Set(["/js/captcha-worker.js", "/js/scrypt-worker.js", "/sw.js"]);

const policy = globalThis.trustedTypes?.createPolicy("countersign", {
  createScriptURL(url) {
    if (!workers.has(url)) throw new TypeError(`not a Countersign worker: ${url}`);
    return url;
  },
});

export function workerURL(url) {
  return policy ? policy.createScriptURL(url) : url;
}
