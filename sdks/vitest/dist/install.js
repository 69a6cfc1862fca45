/**
 * Where the engine both helpers start comes from: attest-toolkit, installed as the project's README
 * installs it. One line, so the replay and the reporter name the same command.
 */
export const INSTALL = 'pip install "attest-toolkit @ git+https://github.com/attest-toolkit/attest-toolkit"';
/** Why `enginePath` could not be started: not found comes with how to install it. */
export function cannotStart(enginePath, error) {
    if (error.code !== "ENOENT")
        return error.message;
    return `not found; install attest-toolkit (${INSTALL}) or pass enginePath`;
}
//# sourceMappingURL=install.js.map