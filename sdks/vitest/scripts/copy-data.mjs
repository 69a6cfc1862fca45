// The data files shared with the toolkit, copied into the package at build beside the compiled modules
// that read them at run time: the guard's host list, and the replay modes' vocabulary.
import { copyFileSync, mkdirSync } from "node:fs";

const TOOLKIT = new URL("../../../toolkit/attest_toolkit/", import.meta.url);
for (const [source, target] of [
  ["providers/hosts.json", "../dist/guard/hosts.json"],
  ["replay/modes.json", "../dist/modes.json"],
]) {
  const to = new URL(target, import.meta.url);
  mkdirSync(new URL(".", to), { recursive: true });
  copyFileSync(new URL(source, TOOLKIT), to);
}
