// A second, independent implementation of ordinal-path-bytes-sha256/1 (SPEC F-6) in
// JavaScript, written for the tests and for `scripts/bench_digest --reference`. JavaScript
// compares strings by UTF-16 code units natively, which is exactly the recipe's order, so
// this cross-checks factory's ordinal key against the language the recipe came from.
// Usage: node tests/support/inventory_ref.mjs [--root DIR]
import { createHash } from "node:crypto";
import { closeSync, openSync, readdirSync, readSync } from "node:fs";
import { join, resolve } from "node:path";

const argv = process.argv.slice(2);
let root = ".";
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--root" && i + 1 < argv.length) root = argv[++i];
  else {
    process.stderr.write(`usage: inventory_ref.mjs [--root DIR] (got ${argv[i]})\n`);
    process.exit(2);
  }
}

const buffer = Buffer.allocUnsafe(1 << 20);
const rows = [];
let total = 0;

function hashFile(path) {
  const fd = openSync(path, "r");
  const h = createHash("sha256");
  let size = 0;
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      h.update(buffer.subarray(0, n));
      size += n;
    }
  } finally {
    closeSync(fd);
  }
  return [size, h.digest("hex")];
}

function walk(dir, prefix) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix + entry.name;
    if (entry.isDirectory()) {
      if (entry.name !== ".git" && entry.name !== "node_modules") walk(join(dir, entry.name), rel + "/");
    } else if (entry.isFile()) {
      const [size, hex] = hashFile(join(dir, entry.name));
      total += size;
      rows.push([rel, `${rel}|${size}|${hex}`]);
    } else {
      process.stderr.write(`REFUSED: ${rel} is not a regular file or folder\n`);
      process.exit(2);
    }
  }
}

walk(root, "");
rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const doc = rows.map((r) => r[1]).join("\n");
const digest = createHash("sha256").update(doc, "utf8").digest("hex");
process.stdout.write(
  [
    "format=inventory-digest/1",
    `root=${resolve(root)}`,
    `count=${rows.length}`,
    `bytes=${total}`,
    `digest=ordinal-path-bytes-sha256/1 ${digest}`,
  ].join("\n") + "\n",
);
