// The push channel (docs/PROTOCOL.md §2): one WebSocket per device, authenticated by its first frame
// (a single-use ticket, so no credential is in a URL); each queued entry is acknowledged only after
// `onMessage` has stored it. When the socket cannot connect, the long poll does the same work.
import { ApiError } from "./api.js";
import { acknowledgeMessages, fetchMessages } from "./server/messages.js";
import { createPushTicket, pushChannel } from "./server/push.js";

const reconnectable = new Set([1001, 1006, 4401, 4408]);
// Whether someone sees this page: the server sends no push notification for a device whose page is shown
// (PROTOCOL §2.2), and one again while it is hidden, for the service worker to show.
const shown = () => globalThis.document?.visibilityState !== "hidden";
const visibilityFrame = () => JSON.stringify({ type: "visibility", visible: shown() });
const backoff = (attempt) => Math.min(30_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);

/**
 * Opens the channel for a device session.
 * - `deviceToken()`: the current device session token.
 * - `renewSession()`: opens a new device session after 4403 (rejects when the device was revoked; with
 *   SignedOutError when the page's account session ended, which closes the channel quietly).
 * - `onMessage(entry)`: stores one QueuedMessage; the entry is acknowledged once it resolves.
 * - `onEvent(frame)`: any other frame (an authenticator's challenges); unknown types are ignored.
 * - `onState(state, detail)`: "connecting", "live", "long-poll", "locked" (the account is locked: no device
 *   session opens until an administrator unlocks it; tried again with backoff), "revoked" (final),
 *   "elsewhere" (final: the device connected again, from another tab of this browser), "closed" (final).
 * Returns `{ close() }`.
 */
export function openPushChannel({
  deviceToken,
  renewSession,
  onMessage = async () => {},
  onEvent = () => {},
  onState = () => {},
}) {
  let closed = false;
  let socket = null;
  let failures = 0;
  let timer = null;
  // The socket that is ready, told of the page being shown or hidden.
  let live = null;
  const onVisibility = () => {
    if (live?.readyState === WebSocket.OPEN) live.send(visibilityFrame());
  };
  globalThis.document?.addEventListener("visibilitychange", onVisibility);

  function stop(state, detail) {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    globalThis.document?.removeEventListener("visibilitychange", onVisibility);
    socket?.close(1000);
    onState(state, detail);
  }

  function later(run, delay) {
    if (!closed) timer = setTimeout(run, delay);
  }

  // A device session refused (the device revoked, its keys gone) ends the channel; anything else (the
  // network, a busy server) is tried again later.
  async function renewOrStop(attempt = 0) {
    try {
      await renewSession();
      later(connect, 0);
    } catch (error) {
      if (error?.name === "SignedOutError") return stop("closed");
      if (error instanceof ApiError && [400, 401, 403, 404].includes(error.status))
        return stop("revoked", error.message);
      if (!(error instanceof ApiError)) return stop("revoked", String(error?.message ?? error));
      if (error.status === 423) onState("locked", error.message);
      later(() => renewOrStop(attempt + 1), backoff(attempt));
    }
  }

  async function connect() {
    if (closed) return;
    onState("connecting");
    let ticket;
    try {
      ({ ticket } = await createPushTicket(deviceToken()));
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return renewOrStop();
      failures++;
      return later(connect, backoff(failures));
    }
    const ws = pushChannel();
    socket = ws;
    let ready = false;
    // Entries are stored one at a time, in order, then acknowledged together.
    let storing = Promise.resolve();
    const stored = [];
    let flushing = false;
    const flush = () => {
      if (flushing || !stored.length || ws.readyState !== WebSocket.OPEN) return;
      flushing = true;
      queueMicrotask(() => {
        flushing = false;
        const seqs = stored.splice(0, 64);
        if (seqs.length && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "ack", seqs }));
        if (stored.length) flush();
      });
    };
    ws.onopen = () => ws.send(JSON.stringify({ type: "hello", ticket }));
    ws.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame?.type === "ready") {
        ready = true;
        failures = 0;
        live = ws;
        // A connection is taken as seen until it says otherwise.
        if (!shown()) ws.send(visibilityFrame());
        onState("live");
      } else if (frame?.type === "message" && frame.message) {
        storing = storing.then(async () => {
          try {
            await onMessage(frame.message);
            stored.push(frame.seq);
            flush();
          } catch {
            // Not stored, so not acknowledged: the server sends it again on the next connection.
          }
        });
      } else if (frame && typeof frame.type === "string") {
        onEvent(frame);
      }
    };
    ws.onclose = (event) => {
      if (live === ws) live = null;
      if (socket !== ws || closed) return;
      socket = null;
      if (event.code === 4403) return renewOrStop();
      if (event.code === 4409) return stop("elsewhere", "This device connected again elsewhere.");
      if (!ready) {
        // The socket never became ready (a proxy without WebSocket, say): the long poll instead.
        failures++;
        return failures >= 2 ? longPoll(0) : later(connect, backoff(failures));
      }
      if (reconnectable.has(event.code) || event.code === 1000 || event.code === 1011)
        return later(connect, backoff(failures++));
      stop("closed", `The push channel closed (${event.code}).`);
    };
  }

  async function longPoll(after) {
    if (closed) return;
    onState("long-poll");
    const started = Date.now();
    try {
      const body = await fetchMessages({ after, wait: 25 }, deviceToken());
      const seqs = [];
      for (const entry of body.messages) {
        await onMessage(entry);
        seqs.push(entry.seq);
      }
      if (seqs.length) await acknowledgeMessages({ seqs }, deviceToken());
      // Every few rounds, try the socket again.
      if (++failures % 8 === 0) return later(connect, 0);
      // An empty answer that came at once (a server not waiting) is not asked again at once.
      later(() => longPoll(0), seqs.length || Date.now() - started > 1000 ? 0 : 1000);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return renewOrStop();
      later(() => longPoll(0), backoff(3));
    }
  }

  connect();
  return { close: () => stop("closed") };
}
