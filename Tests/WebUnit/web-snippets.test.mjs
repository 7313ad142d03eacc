// The JavaScript the browser tests run in the page (Tests/Web/js/*.js, loaded by support.page_function and
// support.page_script): each file parses (`node --check`), parses again as the function body support.py makes
// of it, names only functions the Python asks for (or that the file itself uses), and every function the Python
// asks for is there. Nothing here runs them: the browser tests do.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import test from "node:test";
import { promisify } from "node:util";
import vm from "node:vm";

const WEB = fileURLToPath(new URL("../Web/", import.meta.url));
const JS = `${WEB}js/`;
const files = readdirSync(JS).filter((n) => n.endsWith(".js")).sort();
const source = (file) => readFileSync(JS + file, "utf8");

/** Every page_function("file", "name") and page_script("file", "name") in the Python tests. */
const uses = readdirSync(WEB)
  .filter((n) => n.endsWith(".py"))
  .flatMap((py) =>
    [...readFileSync(WEB + py, "utf8").matchAll(/page_(function|script)\("([^"]+)", "([^"]+)"\)/g)].map(
      ([, kind, file, name]) => ({ py, kind, file, name }),
    ),
  );

/** The functions a file declares at its top level (not indented). */
const declared = (text) => [...text.matchAll(/^(?:async )?function (\w+)\(/gm)].map(([, name]) => name);

test("there are page files, and the Python tests use them", () => {
  assert.ok(files.length >= 10, files.join(", "));
  assert.ok(uses.length >= 40, `${uses.length} uses`);
});

test("each page file passes node --check", async () => {
  const check = (file) =>
    promisify(execFile)(process.execPath, ["--check", JS + file]).then(
      () => null,
      (error) => `${file}: ${error.stderr}`,
    );
  assert.deepEqual((await Promise.all(files.map(check))).filter(Boolean), []);
});

test("each page file parses as the function body support.py makes of it", () => {
  for (const file of files) {
    for (const name of declared(source(file))) {
      const asFunction = `(arg) => {\n${source(file)}\nreturn ${name}(arg);\n}`;
      const asScript = `(() => {\n${source(file)}\n${name}();\n})();`;
      assert.doesNotThrow(() => new vm.Script(`(${asFunction})`, { filename: file }), `${file} ${name}`);
      assert.doesNotThrow(() => new vm.Script(asScript, { filename: file }), `${file} ${name}`);
    }
  }
});

test("every function the Python tests name is declared in its file", () => {
  const missing = uses.filter(({ file, name }) => !files.includes(file) || !declared(source(file)).includes(name));
  assert.deepEqual(missing, []);
});

test("every function a page file declares is used, by the Python tests or by the file itself", () => {
  const unused = [];
  for (const file of files) {
    const text = source(file);
    for (const name of declared(text)) {
      const calledHere = text.split(new RegExp(`\\b${name}\\b`)).length > 2;
      if (!calledHere && !uses.some((u) => u.file === file && u.name === name)) unused.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(unused, []);
});

test("page files keep to 120 columns", () => {
  const long = [];
  for (const file of files) {
    source(file)
      .split("\n")
      .forEach((line, i) => line.length > 120 && long.push(`${file}:${i + 1} (${line.length})`));
  }
  assert.deepEqual(long, []);
});
