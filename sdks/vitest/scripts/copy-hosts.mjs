// The guard's host list is one file, shared with the Python guard: the build copies it into the
// package beside the compiled guard, which reads it at run time.
import { copyFileSync, mkdirSync } from "node:fs";

const source = new URL("../../../toolkit/attest_toolkit/providers/hosts.json", import.meta.url);
const target = new URL("../dist/guard/hosts.json", import.meta.url);
mkdirSync(new URL(".", target), { recursive: true });
copyFileSync(source, target);
