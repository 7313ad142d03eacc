// The web client's files keep to 120 columns (the same limit as the Swift code and the page files of the
// browser tests): every .js, .css and .html file served from web/, counted in characters as an editor shows
// them.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const MAX = 120;
const files = readdirSync(WEB, { recursive: true })
  .filter((name) => /\.(js|css|html)$/.test(name))
  .sort();

test("the web client has files to check", () => {
  assert.ok(files.includes("app.css") && files.includes("index.html"));
  assert.ok(files.some((name) => name.endsWith("main.js")));
  assert.ok(files.length >= 60, files.join(", "));
});

test(`web client files keep to ${MAX} columns`, () => {
  const long = [];
  for (const file of files) {
    readFileSync(join(WEB, file), "utf8")
      .split("\n")
      .forEach((line, i) => [...line].length > MAX && long.push(`${file}:${i + 1} (${[...line].length})`));
  }
  assert.deepEqual(long, []);
});
