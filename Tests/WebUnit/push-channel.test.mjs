// The push channel's visibility frames (js/push.js, docs/PROTOCOL.md §2.2): a page tells the server when it is
// hidden and shown again, so that the server pushes notifications (for the service worker) only while no one
// sees the page. A WebSocket stand-in records what the page sends; `document` is an EventTarget whose
// visibilityState the test sets.
import assert from "node:assert/strict";
import test from "node:test";
import { installBrowser } from "./support/browser.mjs";

class FakeSocket {
  static OPEN = 1;
  static all = [];
  constructor(url) {
    this.url = String(url);
    this.readyState = 0;
    this.sent = [];
    FakeSocket.all.push(this);
    queueMicrotask(() => {
      this.readyState = FakeSocket.OPEN;
      this.onopen?.();
    });
  }
  send(text) {
    this.sent.push(JSON.parse(text));
  }
  close(code = 1000) {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code });
  }
  receive(frame) {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

function installPage(visibilityState) {
  const server = installBrowser();
  const ticket = { ticket: "cst_t", expiresAt: "2030-01-01T00:00:00Z" };
  server.routes.set("POST /v1/devices/current/push-tickets", [201, ticket]);
  globalThis.WebSocket = FakeSocket;
  globalThis.location = { href: "https://cs.example/" };
  const document = new EventTarget();
  document.visibilityState = visibilityState;
  // Listeners counted: a closed channel must leave none behind.
  document.listening = 0;
  const add = document.addEventListener.bind(document);
  const remove = document.removeEventListener.bind(document);
  document.addEventListener = (...args) => (document.listening++, add(...args));
  document.removeEventListener = (...args) => (document.listening--, remove(...args));
  globalThis.document = document;
  return document;
}

async function open(states) {
  const { openPushChannel } = await import("../../Sources/CountersignWebClient/web/js/push.js");
  const before = FakeSocket.all.length;
  const channel = openPushChannel({
    deviceToken: () => "csd_x",
    renewSession: async () => {},
    onState: (s) => states.push(s),
  });
  for (let i = 0; i < 50 && !FakeSocket.all[before]?.sent.length; i++) await settle();
  const ws = FakeSocket.all[before];
  assert.deepEqual(ws.sent, [{ type: "hello", ticket: "cst_t" }]);
  return { channel, ws };
}

test("a shown page says nothing; hidden and shown again it says so, only while the socket is ready", async () => {
  const document = installPage("visible");
  const states = [];
  const { channel, ws } = await open(states);
  // Before `ready`, the server takes no other frame: nothing is sent.
  document.visibilityState = "hidden";
  document.dispatchEvent(new Event("visibilitychange"));
  assert.equal(ws.sent.length, 1);
  document.visibilityState = "visible";
  ws.receive({ type: "ready", deviceId: "d1", window: 64, pingInterval: 25 });
  assert.deepEqual(states, ["connecting", "live"]);
  assert.equal(ws.sent.length, 1, "a shown page is taken as seen: no frame");
  document.visibilityState = "hidden";
  document.dispatchEvent(new Event("visibilitychange"));
  document.visibilityState = "visible";
  document.dispatchEvent(new Event("visibilitychange"));
  assert.deepEqual(ws.sent.slice(1), [
    { type: "visibility", visible: false },
    { type: "visibility", visible: true },
  ]);
  assert.equal(document.listening, 1);
  channel.close();
  assert.equal(document.listening, 0, "a closed channel leaves no listener");
  document.visibilityState = "hidden";
  document.dispatchEvent(new Event("visibilitychange"));
  assert.equal(ws.sent.length, 3, "a closed channel listens no more");
});

test("a page hidden when its socket becomes ready says so at once", async () => {
  installPage("hidden");
  const { channel, ws } = await open([]);
  ws.receive({ type: "ready", deviceId: "d1", window: 64, pingInterval: 25 });
  assert.deepEqual(ws.sent.at(-1), { type: "visibility", visible: false });
  channel.close();
});
