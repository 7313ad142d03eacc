// js/screen-modules.js against the static import graph (web/js): its wiring list is exactly what the inbox, the
// authenticator and Approvals import beyond main.js's static imports, and each screen's list exactly what the
// screen adds to both, so that a resumed page preloads every module its screen needs and nothing it does not.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const JS = join(WEB, "js");
const { LOCKED, SCREENS, WIRING, modulesFor } = await import("../../Sources/CountersignWebClient/web/js/screen-modules.js");

const STATIC = /^\s*(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)"/gms;
const BARE = /^\s*import\s*"([^"]+)"/gm;

/** `entry` and every module it reaches by static imports, as paths relative to js/. */
function closure(entry) {
  const seen = new Set();
  const stack = [entry];
  while (stack.length) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(join(JS, file), "utf8");
    for (const m of [...text.matchAll(STATIC), ...text.matchAll(BARE)]) {
      stack.push(relative(JS, join(JS, dirname(file), m[1])));
    }
  }
  return seen;
}

const minus = (a, ...bs) => [...a].filter((x) => !bs.some((b) => b.has(x))).sort();
const main = closure("main.js");
const wiring = new Set(
  ["inbox.js", "gate-rules.js", "authenticator/runtime.js", "screens/approvals.js"].flatMap((e) => [...closure(e)]),
);

test("the wiring list is what every signed-in page imports beyond main.js's", () => {
  assert.deepEqual(WIRING, minus(wiring, main));
});

const ENTRIES = {
  home: "screens/home.js",
  messages: "screens/messages.js",
  settings: "screens/settings.js",
  files: "screens/files.js",
  approvals: "screens/approvals.js",
};

test("each screen's list is what it imports beyond both", () => {
  assert.deepEqual(Object.keys(SCREENS).sort(), Object.keys(ENTRIES).sort());
  for (const [name, entry] of Object.entries(ENTRIES)) {
    assert.deepEqual(SCREENS[name], minus(closure(entry), main, wiring), name);
  }
  assert.deepEqual(modulesFor("nowhere"), modulesFor("home"), "any other address is home");
});

test("the Locked list is what a gated reload's screen imports beyond main.js's", () => {
  assert.deepEqual(LOCKED, minus(closure("screens/locked.js"), main));
});
