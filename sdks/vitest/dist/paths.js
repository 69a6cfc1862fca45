/** Paths as report-v2 wants them: relative to the repository, with forward slashes. */
import { existsSync } from "node:fs";
import path from "node:path";
/** The repository `start` is in (the nearest directory with .git), else `start` itself. */
export function repositoryRoot(start) {
    for (let dir = path.resolve(start);; dir = path.dirname(dir)) {
        if (existsSync(path.join(dir, ".git")))
            return dir;
        if (path.dirname(dir) === dir)
            return path.resolve(start);
    }
}
/** `file` relative to `root` with forward slashes; unchanged when it is outside `root`. */
export function repositoryRelative(root, file) {
    const relative = path.relative(root, file);
    return relative.startsWith("..") || path.isAbsolute(relative) ? file : relative.split(path.sep).join("/");
}
//# sourceMappingURL=paths.js.map