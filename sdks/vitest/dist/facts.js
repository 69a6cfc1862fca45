/**
 * What a test's replays add to its result, carried in the task's meta: the engine's own summaries of
 * its sessions, as they are. The reporter sends them to `attest-engine report`, which computes the
 * row's facts with the function the pytest helper uses, so both runners report the same facts.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
// A V8 stack frame: "at fn (file:line:col)" or "at file:line:col".
const FRAME = /^\s*at (?:.*? \()?(.+?):(\d+):\d+\)?$/;
/**
 * Where the agent's call was made: the innermost stack frame, in the errors the test failed with,
 * that is in the repository's own code (under `root`, outside node_modules).
 */
export function missLocation(errors, root) {
    for (const error of errors) {
        for (const line of (error.stack ?? "").split("\n")) {
            const match = FRAME.exec(line);
            if (!match)
                continue;
            const file = match[1].startsWith("file://") ? fileURLToPath(match[1]) : match[1];
            const relative = path.relative(root, file);
            if (!path.isAbsolute(file) || relative.startsWith("..") || relative.split(path.sep).includes("node_modules"))
                continue;
            return { file, line: Number(match[2]) };
        }
    }
    return undefined;
}
//# sourceMappingURL=facts.js.map