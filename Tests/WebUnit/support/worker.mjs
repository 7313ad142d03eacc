// A browser `Worker` for Node, enough for scrypt.js: the page's worker script (a URL under /js/) runs
// unchanged in a worker thread, with `self` standing for the worker's global scope. Installed only by
// the tests that need it; the module under test is not changed.
import { Worker as ThreadWorker } from "node:worker_threads";
import { fileURLToPath } from "node:url";

const WEB_ROOT = fileURLToPath(new URL("../../../Sources/CountersignWebClient/web/", import.meta.url));

// Runs in the thread: `self` as a worker's global, messages queued until the script has loaded.
const BOOTSTRAP = `
const { parentPort, workerData } = require("node:worker_threads");
const queued = [];
let ready = false;
globalThis.self = { postMessage: (message, transfer) => parentPort.postMessage(message, transfer) };
parentPort.on("message", (data) => (ready ? self.onmessage({ data }) : queued.push(data)));
import(workerData).then(() => {
  ready = true;
  for (const data of queued.splice(0)) self.onmessage({ data });
});
`;

export class NodeWorker {
  static started = 0;

  constructor(url) {
    NodeWorker.started += 1;
    this.thread = new ThreadWorker(BOOTSTRAP, { eval: true, workerData: WEB_ROOT + String(url).replace(/^\//, "") });
    this.thread.on("message", (data) => this.onmessage?.({ data }));
    this.thread.on("error", (error) => this.onerror?.({ message: error.message, preventDefault() {} }));
  }

  postMessage(message) {
    this.thread.postMessage(message);
  }

  terminate() {
    this.thread.terminate();
  }
}

export function installWorker() {
  globalThis.Worker = NodeWorker;
}
