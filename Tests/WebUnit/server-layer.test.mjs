// The web client's server layer (Sources/CountersignWebClient/web/js/server/) against docs/openapi.yaml.
//
// Each module there exports ENDPOINTS, one entry per function, the function named after the operation's
// operationId: {operationId, method, path, sends?, answer, reads?, upgrade?}
// - `path`: the template as openapi.yaml writes it (`/v1/devices/{id}`);
// - `sends`: the top-level fields of the JSON body the client sends (absent: no body);
// - `answer`: the schema of the 2xx answer ("Session"), null for none (204), or {status: schema | null}
//   when the operation answers in more than one way ({201: "Session", 202: "MFARequired"});
// - `reads`: the fields of the answer the client reads (`devices[].id`, `session.device.name`), or
//   {status: [fields]} with an answer by status;
// - `upgrade`: a WebSocket (101), no answer.
// Here each is checked against openapi.yaml: the operation exists with that operationId, the answer's schema is
// the document's, every field read exists in it (so `body.settings` of a bare Settings fails), every field sent
// is in the request's schema and every required one is sent; each function calls the one endpoint it declares;
// and no web module outside js/server/ names a /v1/ URL.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import test from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const web = join(root, "Sources/CountersignWebClient/web/js");
const serverDir = join(web, "server");

// No YAML parser in Node: PyYAML (python3) reads it into JSON.
const READ_YAML =
  "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1], encoding='utf-8')), sys.stdout, default=str)";
const yaml = join(root, "docs/openapi.yaml");
const spec = JSON.parse(execFileSync("python3", ["-c", READ_YAML, yaml], { encoding: "utf8" }));

const modules = readdirSync(serverDir)
  .filter((name) => name.endsWith(".js"))
  .sort();
const loaded = await Promise.all(
  modules.map(async (name) => ({ name, exports: await import(pathToFileURL(join(serverDir, name)).href) })),
);
const endpoints = loaded.flatMap(({ name, exports }) => (exports.ENDPOINTS ?? []).map((e) => ({ ...e, module: name })));
const label = (e) => `${e.method} ${e.path} (${e.operationId}, server/${e.module})`;

/** A schema with its $ref followed. */
function resolve(schema) {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++) {
    const name = s.$ref.replace("#/components/schemas/", "");
    s = spec.components.schemas[name];
    assert.ok(s, `openapi.yaml has no schema ${name}`);
  }
  return s;
}
/** A schema's name, or "A | B" for an answer that is one of named schemas (anyOf). */
const schemaName = (schema) =>
  schema?.anyOf?.every((s) => s.$ref)
    ? schema.anyOf.map((s) => s.$ref.replace("#/components/schemas/", "")).join(" | ")
    : (schema?.$ref?.replace("#/components/schemas/", "") ?? null);
const operation = (e) => spec.paths[e.path]?.[e.method.toLowerCase()];

/** Why `path` (`a.b[].c`) is not a field of `schema`, or null when it is. */
function missingField(schema, path) {
  let s = schema;
  let walked = "";
  for (const step of path.split(".")) {
    const array = step.endsWith("[]");
    const name = array ? step.slice(0, -2) : step;
    walked = walked ? `${walked}.${name}` : name;
    s = resolve(s);
    if (!s?.properties || !Object.hasOwn(s.properties, name)) return `it has no field ${walked}`;
    s = s.properties[name];
    if (array) {
      s = resolve(s);
      if (s?.type !== "array" || !s.items) return `${walked} is not an array`;
      s = s.items;
      walked += "[]";
    }
  }
  return null;
}

/** The operation's 2xx answers: status → schema name (null without a JSON body). */
function successes(op) {
  const out = {};
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (!/^2\d\d$/.test(status)) continue;
    const schema = response.content?.["application/json"]?.schema;
    out[status] = schema ? (schemaName(schema) ?? "(a schema written in place)") : null;
  }
  return out;
}

/** The answers an entry declares, as status → schema name, over the operation's 2xx statuses. */
function declaredAnswers(e, statuses) {
  if (e.answer !== null && typeof e.answer === "object") return Object.fromEntries(Object.entries(e.answer));
  return Object.fromEntries(statuses.map((status) => [status, e.answer]));
}

/** The reads an entry declares, as status → fields. */
function declaredReads(e, answers) {
  if (Array.isArray(e.reads)) return Object.fromEntries(Object.keys(answers).map((status) => [status, e.reads]));
  return e.reads ?? {};
}

/** `text` with its comments blanked: a line that starts one (`//`, `/*`, a block's lines) and a trailing
 *  ` // …`. Enough for this code base's style; a URL in a comment is not a URL the code uses. */
function withoutComments(text) {
  let block = false;
  return text
    .split("\n")
    .map((line) => {
      let rest = line;
      if (block) {
        const end = rest.indexOf("*/");
        if (end < 0) return "";
        block = false;
        rest = rest.slice(end + 2);
      }
      const trimmed = rest.trimStart();
      if (trimmed.startsWith("//")) return "";
      if (trimmed.startsWith("/*")) {
        const end = trimmed.indexOf("*/", 2);
        if (end < 0) {
          block = true;
          return "";
        }
        rest = trimmed.slice(end + 2);
      }
      const trailing = rest.search(/\s\/\/\s/);
      return trailing < 0 ? rest : rest.slice(0, trailing);
    })
    .join("\n");
}

const URL_LITERAL = /["'`](\/v1\/[^"'`]*)["'`]/g;
/** A path as code writes it (`/v1/devices/${encodeURIComponent(id)}`) or openapi.yaml (`/v1/devices/{id}`),
 *  its parameters made alike. */
const shape = (path) => path.replace(/\$\{[^}]*\}/g, "{}").replace(/\{[A-Za-z]+\}/g, "{}");

test("every server module declares its endpoints, each a function named after its operationId", () => {
  assert.ok(loaded.length >= 10, `only ${loaded.length} modules in js/server/`);
  for (const { name, exports } of loaded) {
    assert.ok(Array.isArray(exports.ENDPOINTS) && exports.ENDPOINTS.length, `server/${name} exports no ENDPOINTS`);
    for (const e of exports.ENDPOINTS) {
      assert.equal(typeof exports[e.operationId], "function", `server/${name} has no function ${e.operationId}`);
      assert.match(e.method, /^(GET|POST|PUT|PATCH|DELETE)$/, label(e));
      assert.match(e.path, /^\/v1\//, label(e));
    }
  }
});

test("each endpoint is written once", () => {
  const seen = new Map();
  for (const e of endpoints) {
    const key = `${e.method} ${e.path}`;
    if (seen.has(key)) assert.fail(`${key} is declared twice: ${label(seen.get(key))} and ${label(e)}`);
    seen.set(key, e);
  }
});

test("every method and path exists in openapi.yaml, with the operationId the function is named after", () => {
  for (const e of endpoints) {
    const op = operation(e);
    assert.ok(op, `${label(e)}: openapi.yaml has no such operation`);
    assert.equal(op.operationId, e.operationId, `${label(e)}: openapi.yaml names it ${op.operationId}`);
  }
});

test("each answer named is the schema openapi.yaml gives for the operation's 2xx answers", () => {
  for (const e of endpoints) {
    const op = operation(e);
    const spec2xx = successes(op);
    if (e.upgrade) {
      assert.ok(op.responses?.["101"], `${label(e)}: openapi.yaml has no 101 (WebSocket) answer`);
      assert.equal(e.answer, null, `${label(e)}: a WebSocket has no answer`);
      continue;
    }
    const statuses = Object.keys(spec2xx);
    assert.ok(statuses.length, `${label(e)}: openapi.yaml lists no 2xx answer`);
    assert.ok(e.answer !== undefined, `${label(e)}: no answer declared (null for none)`);
    assert.deepEqual(declaredAnswers(e, statuses), spec2xx, `${label(e)}: the answers differ from openapi.yaml's`);
  }
});

test("every field the client reads of an answer exists in its schema", () => {
  for (const e of endpoints) {
    if (e.upgrade) continue;
    const answers = declaredAnswers(e, Object.keys(successes(operation(e))));
    const withBody = Object.entries(answers).filter(([, name]) => name !== null);
    if (withBody.length) assert.ok(e.reads !== undefined, `${label(e)}: no reads declared ([] for none)`);
    for (const [status, fields] of Object.entries(declaredReads(e, answers))) {
      const name = answers[status];
      assert.ok(name, `${label(e)}: reads a ${status} answer, which has no body`);
      for (const field of fields) {
        // One of several schemas: the field is read of the one that has it.
        const whys = name.split(" | ").map((one) => missingField({ $ref: `#/components/schemas/${one}` }, field));
        const why = whys.includes(null) ? null : whys.join("; ");
        assert.equal(why, null, `${label(e)} reads ${field} of its ${status} answer, but ${name}: ${why}`);
      }
    }
  }
});

test("every field the client sends is in the request's schema, and every required one is sent", () => {
  for (const e of endpoints) {
    const body = resolve(operation(e).requestBody?.content?.["application/json"]?.schema);
    if (!body) {
      assert.ok(!e.sends?.length, `${label(e)} sends ${e.sends}, but openapi.yaml takes no body`);
      continue;
    }
    assert.ok(Array.isArray(e.sends), `${label(e)}: openapi.yaml takes a body, and none is declared`);
    for (const field of e.sends) {
      assert.ok(Object.hasOwn(body.properties ?? {}, field), `${label(e)} sends ${field}, not in the request's schema`);
    }
    for (const field of body.required ?? []) {
      assert.ok(e.sends.includes(field), `${label(e)} does not send ${field}, which openapi.yaml requires`);
    }
  }
});

test("each function calls the one endpoint it declares, and nothing else in js/server/ names a URL", () => {
  for (const { name, exports } of loaded) {
    const code = withoutComments(readFileSync(join(serverDir, name), "utf8"));
    const declared = new Map(exports.ENDPOINTS.map((e) => [e.operationId, e]));
    const found = new Set();
    for (const chunk of code.split(/\n(?=export )/)) {
      const fn = chunk.match(/^export (?:async )?function (\w+)/)?.[1];
      const urls = [...chunk.matchAll(URL_LITERAL)].map((m) => m[1]);
      if (!fn) {
        // ENDPOINTS' own paths are declarations; any other URL here would be used outside a function.
        const other = urls.filter((url) => ![...declared.values()].some((e) => e.path === url));
        assert.deepEqual(other, [], `server/${name} names a URL outside its functions`);
        continue;
      }
      const methods = [...chunk.matchAll(/\bcall\(\s*"([A-Z]+)"/g)].map((m) => m[1]);
      if (!urls.length && !methods.length) continue; // a helper built on the others
      const e = declared.get(fn);
      assert.ok(e, `server/${name}: ${fn} calls the server but is not in ENDPOINTS`);
      found.add(fn);
      assert.ok(urls.length, `server/${name}: ${fn} names no URL`);
      for (const url of urls) {
        assert.equal(shape(url), shape(e.path), `server/${name}: ${fn} calls ${url}, not ${e.path}`);
        assert.ok(!url.includes("?"), `server/${name}: ${fn} writes a query into ${url} (use query())`);
        for (const [parameter] of url.matchAll(/\$\{[^}]*\}/g)) {
          assert.match(parameter, /^\$\{encodeURIComponent\(/, `server/${name}: ${fn} puts ${parameter} in a path raw`);
        }
      }
      if (e.upgrade) {
        assert.deepEqual(methods, [], `server/${name}: ${fn} is a WebSocket`);
        assert.match(chunk, /new WebSocket\(/, `server/${name}: ${fn} opens no WebSocket`);
      } else {
        assert.deepEqual(methods, [e.method], `server/${name}: ${fn} calls ${methods}, not ${e.method}`);
      }
    }
    for (const operationId of declared.keys()) {
      assert.ok(found.has(operationId), `server/${name}: ${operationId} is declared but no function calls it`);
    }
  }
});

test("no web module outside js/server/ names a /v1/ URL", () => {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (path !== serverDir) walk(path);
      } else if (entry.name.endsWith(".js")) {
        files.push(path);
      }
    }
  };
  walk(web);
  assert.ok(files.length > 30, `only ${files.length} modules found`);
  const offending = [];
  for (const file of files) {
    withoutComments(readFileSync(file, "utf8"))
      .split("\n")
      .forEach((line, i) => line.includes("/v1/") && offending.push(`${relative(web, file)}:${i + 1}: ${line.trim()}`));
  }
  assert.deepEqual(offending, [], "call the server layer's functions instead");
});
