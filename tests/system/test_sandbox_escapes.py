"""Network off means off: the ways back out a command inside the sandbox might try, tried for real.

Each test is an attack on `attest sandbox --network none` / `attest replay --network none`: entering
the outer network namespace with nsenter (as root, and through passwordless sudo as GitHub's hosted
runners allow), a unix socket in the outer /tmp, and a look-alike of the toolkit in the working
directory. "The outer network" is a TCP server on 127.0.0.1 in the test's own namespace: inside the
sandbox 127.0.0.1 is a different loopback, so reaching that server means the command got out.
Nothing leaves the machine.

The passwordless-sudo user exists only inside a private mount namespace (copies of /etc/passwd,
group, shadow and sudoers bound over the originals), so the machine's own setup is never changed.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attest_toolkit
import pytest
from attest_toolkit.sandbox import SandboxError, choose_strategy, run_isolated
from attest_toolkit.sandbox.confine import Confinement
from attest_toolkit.sandbox.probe import Probe
from attest_toolkit.sandbox.strategy import boot_argv
from conftest import chat_request, chat_response, exchange, run_cli, write_fixture

PY = sys.executable
OUTER_CODE = (
    "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5).close()"
)
# Into the network namespace of the test (the outer one), of PID 1 and of the parent, directly and
# through sudo, each followed by a connection to the outer server; it prints the ones that got there.
ESCAPE = textwrap.dedent(
    """
    import os, shutil, subprocess, sys
    port, outer = sys.argv[1], sys.argv[2]
    connect = [sys.executable, "-c", OUTER_CODE, port]
    prefixes = [[]] + ([["sudo", "-n"]] if shutil.which("sudo") else [])
    reached = []
    for ns in sorted({f"/proc/{pid}/ns/net" for pid in (outer, 1, os.getppid())}):
        for prefix in prefixes:
            argv = [*prefix, "nsenter", f"--net={ns}", "--", *connect]
            if subprocess.run(argv, capture_output=True, timeout=30).returncode == 0:
                reached.append(" ".join(argv[: len(prefix) + 2]))
    sudo = subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode if prefixes[1:] else None
    print("reached", reached, "sudo", sudo)
    """
).replace("OUTER_CODE", repr(OUTER_CODE))
CONFINED = Confinement(
    True, {"CapEff": 0, "CapPrm": 0, "CapAmb": 0, "CapBnd": 0}, (("sudo -n true", "blocked"),)
)


@pytest.fixture
def root_namespace() -> str:
    if os.geteuid() != 0:
        pytest.skip("the attacks as root need root")
    try:
        return choose_strategy("none")
    except SandboxError as exc:
        pytest.skip(f"no network namespace can be made here: {exc}")


@pytest.fixture
def outer_server() -> Iterator[socket.socket]:
    """A TCP server in the test's own network namespace: the outer network."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        yield server


def assert_never_reached(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        server.accept()[0].close()


# --- root: nsenter ----------------------------------------------------------------------------------


def test_root_command_cannot_nsenter_back_to_the_outer_network(
    root_namespace: str, outer_server: socket.socket, tmp_path: Path
) -> None:
    port = str(outer_server.getsockname()[1])
    result = run_isolated([PY, "-c", ESCAPE, port, str(os.getpid())], env=dict(os.environ), cwd=tmp_path)
    assert result.returncode == 0
    assert_never_reached(outer_server)
    assert result.egress["isolation_verified"] is True
    assert "nsenter into the outer network namespace: blocked" in result.egress["probe"]
    assert "no_new_privs: yes; capabilities: none; bounding set: empty" in result.egress["probe"]


def test_replay_with_the_network_off_is_as_closed_as_the_sandbox(
    root_namespace: str, outer_server: socket.socket, tmp_path: Path
) -> None:
    fixture = write_fixture(tmp_path / "fixtures", "t", [exchange(chat_request(), chat_response("hi"))])
    port = str(outer_server.getsockname()[1])
    command = [PY, "-c", ESCAPE, port, str(os.getpid())]
    proc = run_cli(["replay", "--network", "none", "--fixture", str(fixture), "--", *command], cwd=tmp_path)
    assert "reached [] sudo" in proc.stdout, proc.stdout + proc.stderr
    assert_never_reached(outer_server)
    assert "isolation verified" in proc.stderr


def test_a_process_that_keeps_its_privileges_is_never_reported_isolated(
    root_namespace: str, tmp_path: Path
) -> None:
    """The probe itself, run inside a bare `unshare --net` with root's capabilities: it must refuse."""
    marker = tmp_path / "ran"
    with open("/proc/self/ns/net", "rb") as outer:
        argv = [
            *boot_argv(),
            "--confined",
            "--strategy",
            "root-unshare",
            "--outer-net-fd",
            str(outer.fileno()),
        ]
        done = subprocess.run(
            ["unshare", "--net", "--", *argv, "--", "touch", str(marker)],
            pass_fds=(outer.fileno(),),
            capture_output=True,
            text=True,
        )
    assert done.returncode == 3
    assert "isolation could not be verified (escape possible: " in done.stderr
    assert "nsenter into the outer network namespace: ESCAPED" in done.stderr
    assert not marker.exists()


# --- passwordless sudo, as on GitHub's hosted runners ----------------------------------------------


def _free_uid() -> int:
    uid = 4242
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


def _sudo_etc(etc: Path, name: str, uid: int) -> None:
    """Copies of /etc files that add `name` with passwordless sudo for everything."""
    etc.mkdir()
    additions = {
        "passwd": f"{name}:x:{uid}:{uid}::/nonexistent:/bin/sh\n",
        "group": f"{name}:x:{uid}:\n",
        "shadow": f"{name}:*:20000:0:99999:7:::\n",
    }
    for file, line in additions.items():
        (etc / file).write_text(Path("/etc", file).read_text(encoding="utf-8") + line, encoding="utf-8")
    sudoers = etc / "sudoers"
    sudoers.write_text(f"Defaults env_reset\nroot ALL=(ALL) ALL\n{name} ALL=(ALL) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)


def run_as_sudoer(tmp_path: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run argv as a throwaway user with passwordless sudo, inside a private mount namespace."""
    uid = _free_uid()
    etc = tmp_path / "etc"
    _sudo_etc(etc, "attest-sudoer", uid)
    binds = " && ".join(f'mount --bind "$ETC/{f}" /etc/{f}' for f in ("passwd", "group", "shadow", "sudoers"))
    script = f'{binds} && exec setpriv --reuid {uid} --regid {uid} --clear-groups -- "$@"'
    os.chown(cwd, uid, uid)
    env = {"PATH": f"{Path(PY).parent}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(cwd), "ETC": str(etc)}
    if "PYTHONPATH" in os.environ:  # the toolkit the test imports, not another install
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        ["unshare", "--mount", "--", "sh", "-c", script, "sh", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def sudoer_home() -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("sudo") is None:
        pytest.skip("needs root (to make the sudoer) and sudo (.ci/run installs it)")
    home = Path(tempfile.mkdtemp(prefix="attest-sudoer-"))
    yield home
    shutil.rmtree(home)


def test_passwordless_sudo_inside_the_sandbox_cannot_reach_the_outer_network(
    sudoer_home: Path, outer_server: socket.socket, tmp_path: Path
) -> None:
    port = str(outer_server.getsockname()[1])
    attest = [PY, "-c", "from attest_toolkit.cli import main; main()"]
    # The command is the system's Python: the user may not be able to run the one of the test's venv.
    system_python = shutil.which("python3", path="/usr/bin:/bin") or pytest.skip("no /usr/bin/python3")
    argv = [*attest, "sandbox", "--", system_python, "-c", ESCAPE, port, str(os.getpid())]
    done = run_as_sudoer(tmp_path, argv, sudoer_home)
    if "sudo-unshare (" in done.stderr:
        pytest.skip(f"the sudo strategy is not available here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    reached, sudo = done.stdout.split(" sudo ")
    assert reached == "reached []"
    assert sudo.strip() not in ("0", "None"), "sudo -n true worked inside the sandbox"
    assert_never_reached(outer_server)


# --- unix sockets in /tmp, and the working directory's look-alikes ---------------------------------

SOCKET_CLIENT = textwrap.dedent(
    """
    import glob, socket
    target = open("socket-path").read()
    tried = {}
    around = glob.glob("/proc/[0-9]*/root" + target) + glob.glob("/proc/[0-9]*/cwd/../" + target.split("/")[-2])
    for path in [target, *around]:
        with socket.socket(socket.AF_UNIX) as client:
            try:
                client.connect(path)
                tried[path] = "connected"
            except OSError as exc:
                tried[path] = type(exc).__name__
    print(sorted(set(tried.values())), open("named-file").read())
    """
)


def test_a_unix_socket_in_the_outer_tmp_is_out_of_reach(root_namespace: str, tmp_path: Path) -> None:
    outside = Path(tempfile.mkdtemp(prefix="attest-outer-socket-"))
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(outside / "agent.sock"))
            server.listen()
            server.setblocking(False)
            (tmp_path / "socket-path").write_text(str(outside / "agent.sock"))
            named = tmp_path / "named-file"
            named.write_text("named files stay")
            out = tmp_path / "out.txt"
            script = f"{SOCKET_CLIENT}\nopen({str(out)!r}, 'w').write('written')"
            result = run_isolated([PY, "-c", script], cwd=tmp_path)
            assert_never_reached(server)
    finally:
        shutil.rmtree(outside)
    assert result.returncode == 0
    assert out.read_text() == "written"  # a path named on the command line is the real one
    assert "/tmp: private" in result.egress["probe"]


def test_a_look_alike_toolkit_in_the_working_directory_is_never_imported(
    root_namespace: str, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"
    marker = tmp_path / "imported"
    for package in ("attest_toolkit", "attest_toolkit/sandbox", "attest_toolkit/cli"):
        (checkout / package).mkdir(parents=True)
        (checkout / package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('as root')\n")
    (checkout / "attest_toolkit/sandbox/__main__.py").write_text("")
    try:
        result = run_isolated(["true"], cwd=checkout)
    except SandboxError:
        result = None
    assert not marker.exists(), "the pull request's own attest_toolkit ran inside the sandbox set-up"
    assert result is not None and result.returncode == 0


# --- the verdict ------------------------------------------------------------------------------------


def test_isolated_only_when_every_escape_failed() -> None:
    network = ("lo",), (), "ENETUNREACH", "ENETUNREACH", True
    assert Probe(*network, CONFINED).isolated
    unchecked = Probe(*network)
    assert not unchecked.isolated and unchecked.why_not() == "privileges not checked"
    assert unchecked.network_isolated and unchecked.why_not(confinement=False) == ""
    escaped = Confinement(True, CONFINED.capabilities, (("sudo -n true", "ESCAPED"),))
    assert Probe(*network, escaped).why_not() == "escape possible: sudo -n true"
    no_nnp = Confinement(False, CONFINED.capabilities, ())
    assert Probe(*network, no_nnp).why_not() == "no_new_privs is not set"
    held = Confinement(True, {**CONFINED.capabilities, "CapEff": 1 << 21}, ())
    assert Probe(*network, held).why_not() == "capabilities held: CapEff 0x200000"
    unreadable = Confinement(True, {}, ())
    assert not Probe(*network, unreadable).isolated


# --- daemon sockets that start things outside ------------------------------------------------------

# Run inside a private mount namespace whose /run is a fresh tmpfs: listen where a Docker daemon and a
# user's session bus would, then let a sandboxed command try both.
DAEMONS = textwrap.dedent(
    """
    import json, os, socket, sys
    from attest_toolkit.sandbox import run_isolated
    servers = []
    for path in ("/run/docker.sock", "/run/user/0/bus"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen()
        servers.append(server)
    client = (
        "import socket\\nfor path in ('/run/docker.sock', '/var/run/docker.sock', '/run/user/0/bus'):\\n"
        "    with socket.socket(socket.AF_UNIX) as c:\\n"
        "        try:\\n            c.connect(path); print(path, 'connected')\\n"
        "        except OSError as exc:\\n            print(path, type(exc).__name__)\\n"
    )
    result = run_isolated([sys.executable, "-c", client])
    print(json.dumps({"returncode": result.returncode, "probe": result.egress["probe"]}))
    """
)


def test_container_engine_and_session_bus_sockets_are_hidden(root_namespace: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "--",
            "sh",
            "-c",
            'mount -t tmpfs tmpfs /run && exec "$@"',
            "sh",
            PY,
            "-c",
            DAEMONS,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    *lines, summary = done.stdout.splitlines()
    assert not [line for line in lines if line.endswith("connected")], lines
    assert len(lines) == 3
    assert "hidden sockets: /run/docker.sock" in summary


# --- the user's session: tmux, screen, agents, X11, buses, engines -----------------------------------

# Run in private mount and PID namespaces (fresh /tmp, /run and /var/tmp; every daemon ends with them):
# start what a developer's session has running, with the variables a shell in it would have, then let
# a sandboxed command try to connect to each socket and, through tmux, to run a command outside.
SESSION = textwrap.dedent(
    """
    import glob, json, os, re, shutil, socket, subprocess, sys, tempfile, time
    env = dict(os.environ)
    paths = {}  # kind -> the socket a command inside could use to reach it

    def listen(path, abstract=False):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(("\\0" + path) if abstract else path)
        server.listen()
        return server

    def run(*argv):
        # Into a file, not a pipe: a daemon keeps the descriptors it was started with open.
        with tempfile.TemporaryFile("w+") as out:
            subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL, check=True)
            out.seek(0)
            return out.read()

    if shutil.which("tmux"):
        run("tmux", "new-session", "-d", "-s", "work", "sleep 600")
        paths["tmux"] = "/tmp/tmux-0/default"
        env["TMUX"] = "/tmp/tmux-0/default,1,0"
    if shutil.which("screen"):
        os.makedirs("/run/screen", mode=0o777)
        run("screen", "-dmS", "work", "sleep", "600")
        deadline = time.monotonic() + 30  # screen -dm returns before its daemon has made the socket
        while not glob.glob("/run/screen/S-root/*") and time.monotonic() < deadline:
            time.sleep(0.05)
        (name,) = os.listdir("/run/screen/S-root")
        paths["screen"] = "/run/screen/S-root/" + name
        env["STY"] = name
    if shutil.which("ssh-agent"):
        found = re.search("SSH_AUTH_SOCK=([^;]+);", run("ssh-agent", "-s"))
        paths["ssh-agent"] = env["SSH_AUTH_SOCK"] = found.group(1)
    if shutil.which("gpg-agent"):
        os.makedirs("/var/tmp/gnupg", mode=0o700)
        env["GNUPGHOME"] = "/var/tmp/gnupg"
        run("gpg-agent", "--daemon")
        paths["gpg-agent"] = run("gpgconf", "--list-dirs", "agent-socket").strip()
    if shutil.which("dbus-daemon"):
        address = run("dbus-daemon", "--session", "--fork", "--print-address=1").strip()
        paths["dbus session bus"] = re.search("unix:(?:path|abstract)=([^,]+)", address).group(1)
        env["DBUS_SESSION_BUS_ADDRESS"] = address
    # Daemons that need a display or a service manager: their sockets where they would listen.
    servers = [listen("/tmp/.X11-unix/X99"), listen("/tmp/.X11-unix/X99", abstract=True)]
    paths["X11"], env["DISPLAY"] = "/tmp/.X11-unix/X99", ":99"
    for kind, path in (
        ("systemd user bus", "/run/user/0/bus"),
        ("systemd user manager", "/run/user/0/systemd/private"),
        ("rootless podman", "/run/user/0/podman/podman.sock"),
        ("podman", "/run/podman/podman.sock"),
        ("docker", "/run/docker.sock"),
        ("docker at DOCKER_HOST", "/var/tmp/engine/docker.sock"),
        ("a socket in the working directory", "/tmp/work/agent.sock"),
    ):
        servers.append(listen(path))
        paths[kind] = path
    env["XDG_RUNTIME_DIR"], env["DOCKER_HOST"] = "/run/user/0", "unix:///var/tmp/engine/docker.sock"

    client = '''
    import json, os, socket, subprocess, sys
    reached = {}
    for kind, path in json.loads(sys.argv[1]).items():
        for where in (path, "\\\\0" + path):
            with socket.socket(socket.AF_UNIX) as c:
                try:
                    c.connect(where)
                    reached[kind] = "connected"
                except OSError as exc:
                    reached.setdefault(kind, type(exc).__name__)
    if "tmux" in reached:
        subprocess.run(["tmux", "run-shell", "touch /var/tmp/escaped"], capture_output=True, timeout=30)
    print(json.dumps(reached))
    '''
    attest = [sys.executable, "-c", "from attest_toolkit.cli import main; main()"]
    argv = [*attest, "sandbox", "--network", "none", "--", sys.executable, "-c", client, json.dumps(paths)]
    done = subprocess.run(argv, env=env, cwd="/tmp/work", capture_output=True, text=True, timeout=120)
    print(json.dumps({
        "returncode": done.returncode,
        "stderr": done.stderr,
        "reached": json.loads(done.stdout or "{}"),
        "escaped": os.path.exists("/var/tmp/escaped"),
        "outside": {kind: os.path.exists(path) for kind, path in paths.items()},
    }))
    """
)


def fresh_mounts(points: tuple[str, ...]) -> str:
    """Shell that mounts an empty tmpfs on each of `points`, keeping the virtualenv and the package
    where they are when the clone lives under one of them (a clone in `mktemp -d`, say)."""
    keep = [p for p in {sys.prefix, str(Path(attest_toolkit.__file__).parents[1])} if p.startswith(points)]
    holder = "/dev/shm/attest-keep-$$"
    steps = [f"mkdir -p {holder}/{i} && mount --bind '{k}' {holder}/{i}" for i, k in enumerate(keep)]
    steps += [f"mount -t tmpfs tmpfs {point}" for point in points]
    steps += [
        f"mkdir -p '{k}' && mount --bind {holder}/{i} '{k}' && umount {holder}/{i}"
        for i, k in enumerate(keep)
    ]
    return " && ".join([*steps, f"rm -rf {holder}"] if keep else steps)


def test_the_users_session_sockets_are_out_of_reach(root_namespace: str) -> None:
    mounts = fresh_mounts(("/tmp", "/run", "/var/tmp"))
    private = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
    done = subprocess.run(
        [*private, "sh", "-c", f'{mounts} && exec "$@"', "sh", PY, "-c", SESSION],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["returncode"] == 0, outcome["stderr"]
    assert all(outcome["outside"].values()), outcome["outside"]  # every daemon listened outside
    reached = outcome["reached"]
    assert set(reached) == set(outcome["outside"])
    assert [kind for kind, result in reached.items() if result == "connected"] == []
    assert not outcome["escaped"], "a command outside the sandbox ran through tmux"
    # tmux, screen, ssh-agent, gpg-agent and D-Bus are installed where the tests run (.ci/run).
    for kind in ("tmux", "screen", "ssh-agent", "gpg-agent", "dbus session bus"):
        if shutil.which(kind.split()[0].replace("dbus", "dbus-daemon")):
            assert kind in reached
