// The order a conversation opens its messages in, without keys or the page: newest first (the end of the
// thread is what is in view when it opens), in chunks, and a message brought into view meanwhile (scrolled
// to) goes next, ahead of the rest.

/**
 * The messages `ids` (oldest first, as the thread shows them) still to open. `next(n)` takes up to `n` of them:
 * those preferred first (in the order they were preferred), then the newest left. `prefer(id)` puts one still
 * waiting ahead of the rest; one taken already, or never given, is ignored. `size` is how many wait.
 */
export function openingOrder(ids) {
  const waiting = new Set([...ids].reverse());
  const preferred = new Set();
  return {
    get size() {
      return waiting.size;
    },
    prefer(id) {
      if (waiting.has(id)) preferred.add(id);
    },
    next(n) {
      const taken = [];
      for (const source of [preferred, waiting]) {
        for (const id of source) {
          if (taken.length >= n) break;
          if (!waiting.has(id)) continue;
          taken.push(id);
          waiting.delete(id);
          preferred.delete(id);
        }
      }
      return taken;
    },
  };
}
