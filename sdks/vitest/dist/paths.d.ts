/** Paths as report-v2 wants them: relative to the repository, with forward slashes. */
/** The repository `start` is in (the nearest directory with .git), else `start` itself. */
export declare function repositoryRoot(start: string): string;
/** `file` relative to `root` with forward slashes; unchanged when it is outside `root`. */
export declare function repositoryRelative(root: string, file: string): string;
