// Stand-ins for the browser globals a few modules reach at run time (never at import): an in-memory
// IndexedDB with the few calls keystore.js makes, a `navigator` without Web Locks (pins.js then runs its
// body directly, as in a browser without them), and a `fetch` answering from a table of JSON bodies.
// Installed by the tests that need them; the modules under test are not changed.

class Request {
  constructor(result) {
    this.result = result;
    this.error = null;
    queueMicrotask(() => this.onsuccess?.({ target: this }));
  }
}

const copy = (value) => (value === undefined ? undefined : structuredClone(value));

class ObjectStore {
  constructor(table, transaction) {
    this.table = table;
    this.transaction = transaction;
  }
  get(key) {
    return new Request(copy(this.table.rows.get(key)));
  }
  put(value) {
    const key = value[this.table.keyPath];
    this.table.rows.set(key, copy(value));
    return new Request(key);
  }
  delete(key) {
    this.table.rows.delete(key);
    return new Request(undefined);
  }
  createIndex(name) {
    this.table.indexes.add(name);
  }
  index(name) {
    const matching = (value) => [...this.table.rows.entries()].filter(([, row]) => row[name] === value);
    return {
      getAll: (value) => new Request(matching(value).map(([, row]) => copy(row))),
      getAllKeys: (value) => new Request(matching(value).map(([key]) => key)),
    };
  }
}

class Transaction {
  constructor(db, names) {
    this.tables = [names].flat().map((n) => db.tables.get(n));
    // What to put back if the transaction aborts.
    this.before = this.tables.map((t) => new Map(t.rows));
    this.done = false;
    setTimeout(() => {
      if (this.done) return;
      this.done = true;
      this.oncomplete?.();
    }, 0);
  }
  objectStore(name) {
    const table = this.tables.find((t) => t.name === name);
    if (!table) throw new Error(`NotFoundError: ${name} is not in this transaction`);
    return new ObjectStore(table, this);
  }
  abort() {
    if (this.done) return;
    this.done = true;
    this.tables.forEach((t, i) => (t.rows = this.before[i]));
    this.error = new Error("AbortError");
    queueMicrotask(() => this.onabort?.());
  }
}

class Database {
  constructor(tables) {
    this.tables = tables;
    this.objectStoreNames = { contains: (name) => tables.has(name) };
  }
  createObjectStore(name, { keyPath }) {
    const table = { name, keyPath, rows: new Map(), indexes: new Set() };
    this.tables.set(name, table);
    return new ObjectStore(table, null);
  }
  transaction(names) {
    return new Transaction(this, names);
  }
  close() {}
}

export class MemoryIndexedDB {
  constructor() {
    this.databases = new Map();
  }
  open(name, version = 1) {
    const request = { result: null, error: null };
    queueMicrotask(() => {
      const known = this.databases.get(name) ?? { version: 0, tables: new Map() };
      this.databases.set(name, known);
      request.result = new Database(known.tables);
      if (version > known.version) {
        known.version = version;
        request.onupgradeneeded?.();
      }
      request.onsuccess?.();
    });
    return request;
  }
}

/** The server's answers: `routes` maps "GET /v1/path" to a JSON body (or a function of the request's JSON
 *  body giving one, or [status, body]); `offline` makes every call fail as a network error does. */
export class FakeServer {
  constructor() {
    this.routes = new Map();
    this.offline = false;
    this.calls = [];
  }
  fetch = async (path, { method = "GET", body: sent } = {}) => {
    this.calls.push(`${method} ${path}`);
    if (this.offline) throw new TypeError("fetch failed");
    let answer = this.routes.get(`${method} ${path}`);
    if (typeof answer === "function") answer = await answer(typeof sent === "string" ? JSON.parse(sent) : undefined);
    if (answer === undefined) answer = [404, { code: "not-found" }];
    const [status, body] = Array.isArray(answer) ? answer : [200, answer];
    const text = status === 204 || status === 304 ? null : JSON.stringify(body);
    return new Response(text, { status, headers: { "Content-Type": "application/json" } });
  };
}

/** Installs the stand-ins; returns the fake server. */
export function installBrowser() {
  const server = new FakeServer();
  globalThis.indexedDB = new MemoryIndexedDB();
  globalThis.navigator ??= {};
  globalThis.fetch = server.fetch;
  globalThis.dispatchEvent ??= () => true;
  globalThis.CustomEvent ??= class extends Event {};
  return server;
}
