// scrypt (RFC 7914) for the page: the work runs in a module Worker (scrypt-worker.js), since N = 2^14 and
// more freeze a page for seconds on its own thread. One worker per derivation, ended when it answers, so
// the passphrase and the 16+ MiB of ROMix state do not outlive the call.
import { workerURL } from "./trusted.js";

/** scrypt(password, salt, N, r, p, length) → bytes. The caller bounds N, r and p (untrusted files). */
export function scrypt(password, salt, n, r, p, length) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerURL("/js/scrypt-worker.js"), { type: "module", name: "scrypt" });
    const finish = (settle, value) => {
      worker.terminate();
      settle(value);
    };
    worker.onmessage = ({ data }) => {
      if (data?.key instanceof Uint8Array) finish(resolve, data.key);
      else finish(reject, new Error(`scrypt: ${data?.error ?? "no answer from the worker"}`));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      finish(reject, new Error(`scrypt: the worker could not run (${event.message || "not loaded"})`));
    };
    worker.onmessageerror = () => finish(reject, new Error("scrypt: the worker's answer could not be read"));
    try {
      worker.postMessage({ password, salt, n, r, p, length });
    } catch (error) {
      finish(reject, new Error(`scrypt: ${error.message}`));
    }
  });
}
