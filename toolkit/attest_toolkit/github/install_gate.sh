#!/usr/bin/env bash
# The action's install step (action.yml, "Install attest-toolkit"), run as a file so that shellcheck and
# tests/integration/test_action_install.py check it: the toolkit for the tests' Python, and the gate's
# own virtualenv with the digest every later step checks it against. It runs in $RUNNER_TEMP, never in
# the checkout, with ACTION_PATH (the action's files) and the runner's GITHUB_OUTPUT and RUNNER_TEMP;
# it writes the outputs dir, digest and gate (the shell code each later step evaluates: `attest`).
set -eo pipefail

# Two copies. The tests' Python gets the pytest plugin, which they need there. The gate (every
# attest the steps after setup run: select, sandbox, policy, report, publish) gets a virtualenv of
# its own, made now, before the pull request's setup can change anything: setup's pip and PATH
# never reach it, and each later step checks its files against the digest taken here, kept in a
# step output that no later step can rewrite.
gate="$RUNNER_TEMP/attest-gate"
rm -rf "$gate" "$RUNNER_TEMP/attest-setup.env" "$RUNNER_TEMP/attest-setup.path"
if [ "${ATTEST_ACTION_SKIP_INSTALL:-}" = 1 ]; then
  echo "attest: ATTEST_ACTION_SKIP_INSTALL=1: using the installed $(attest --version)"
  # The gate copies the installed toolkit; its dependencies stay those of the Python it was installed in.
  python -I -m venv --without-pip "$gate"
  site=$("$gate/bin/python" -I -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python -I -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' >"$site/attest-dependencies.pth"
  cp -R "$(python -I -c 'import attest_toolkit, os; print(os.path.dirname(attest_toolkit.__file__))')" "$site/attest_toolkit"
else
  python -I -m pip install --disable-pip-version-check --quiet "$ACTION_PATH"
  attest --version
  python -I -m venv "$gate"
  "$gate/bin/python" -I -m pip install --disable-pip-version-check --quiet "$ACTION_PATH"
fi
# `attest` and `attest_python` for the later steps: the gate's Python isolated from the environment
# (-I: no PYTHON* variables, no user site, no working directory on the path) and reading no bytecode
# but what it compiles itself, after the check. The coreutils from the system's own PATH.
code=$(cat <<'GATE'
attest_gate_digest() (
  PATH=/usr/bin:/bin
  cd "$ATTEST_GATE_DIR" && { find . -type f -not -path '*/__pycache__/*' -print0; printf '%s\0' "$(readlink -f bin/python)"; } \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
)
attest_python() {
  if [ "$(attest_gate_digest)" != "$ATTEST_GATE_DIGEST" ]; then
    echo "::error title=attest::the toolkit the gate runs changed after it was installed (by setup or the tests): not running it"
    exit 3
  fi
  "$ATTEST_GATE_DIR/bin/python" -I -X "pycache_prefix=$(/usr/bin/mktemp -d)" "$@"
}
attest() { attest_python -m attest_toolkit.cli "$@"; }
GATE
)
export ATTEST_GATE_DIR=$gate
eval "$code"
ATTEST_GATE_DIGEST=$(attest_gate_digest)
attest --version >/dev/null
{ echo "dir=$gate"; echo "digest=$ATTEST_GATE_DIGEST"; echo "gate<<ATTEST_GATE_END"; echo "$code"; echo "ATTEST_GATE_END"; } >>"$GITHUB_OUTPUT"
