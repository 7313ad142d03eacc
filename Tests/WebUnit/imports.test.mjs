// The web client's module graph (web/js): every import, static (`import … from`, `export … from`) or dynamic
// (`import("…")`), is a relative path to a module that exists; the graph has no cycle, dynamic imports
// included (a cycle through a lazy import still makes two modules each need the other); and layers point
// one way: only the entry (main.js) and the screens import from js/screens/.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const JS = join(WEB, "js");

/** Every .js file under js/, as a path relative to js/ ("screens/gate.js"). */
const files = readdirSync(JS, { recursive: true })
  .filter((name) => name.endsWith(".js"))
  .map((name) => name.split("\\").join("/"))
  .sort();

const STATIC = /^\s*(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)"/gms;
const BARE = /^\s*import\s*"([^"]+)"/gm;
const DYNAMIC = /\bimport\(\s*"([^"]+)"\s*\)/g;

/** The modules `file` imports, as paths relative to js/, each once. */
function importsOf(file) {
  const text = readFileSync(join(JS, file), "utf8");
  const specifiers = [...text.matchAll(STATIC), ...text.matchAll(BARE), ...text.matchAll(DYNAMIC)].map((m) => m[1]);
  return [...new Set(specifiers)].map((spec) => ({ spec, path: relative(JS, join(JS, dirname(file), spec)) }));
}

const graph = new Map(files.map((file) => [file, importsOf(file)]));

test("the graph is read: every module, and the imports it names", () => {
  assert.ok(files.length >= 40, files.join(", "));
  assert.ok(files.includes("main.js") && files.includes("screens/signin.js"));
  const edges = [...graph.values()].reduce((n, list) => n + list.length, 0);
  assert.ok(edges >= 150, `${edges} imports`);
});

test("every import is a relative path to a module of js/", () => {
  const bad = [];
  for (const [file, imports] of graph) {
    for (const { spec, path } of imports) {
      if (!spec.startsWith("./") && !spec.startsWith("../")) bad.push(`${file}: ${spec} (not relative)`);
      else if (!existsSync(join(JS, path))) bad.push(`${file}: ${spec} (no such module)`);
    }
  }
  assert.deepEqual(bad, []);
});

/** Every cycle's modules in order, found by a depth-first walk (each cycle reported from where it closes). */
function cycles() {
  const found = [];
  const state = new Map(); // file → "open" while on the stack, "done" after
  const stack = [];
  const visit = (file) => {
    state.set(file, "open");
    stack.push(file);
    for (const { path } of graph.get(file) ?? []) {
      if (state.get(path) === "open") found.push([...stack.slice(stack.indexOf(path)), path].join(" → "));
      else if (!state.has(path)) visit(path);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return found;
}

test("no import cycle, dynamic imports included", () => {
  assert.deepEqual(cycles(), []);
});

test("a cycle would be found", () => {
  const saved = new Map(graph);
  try {
    graph.set("wipe.js", [...graph.get("wipe.js"), { spec: "./device.js", path: "device.js" }]);
    graph.set("device.js", [...graph.get("device.js"), { spec: "./wipe.js", path: "wipe.js" }]);
    const found = cycles();
    const closes = (cycle) => cycle.includes("device.js → wipe.js") || cycle.includes("wipe.js → device.js");
    assert.ok(found.some(closes));
  } finally {
    for (const [file, imports] of saved) graph.set(file, imports);
  }
});

test("only main.js and the screens import from js/screens/", () => {
  const upward = [];
  for (const [file, imports] of graph) {
    if (file === "main.js" || file.startsWith("screens/")) continue;
    for (const { path } of imports) if (path.startsWith("screens/")) upward.push(`${file} → ${path}`);
  }
  assert.deepEqual(upward, []);
});
