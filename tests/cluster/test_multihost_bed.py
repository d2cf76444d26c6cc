"""trainexec/testing/netns.py and storage.py on the real kernel: hosts that reach each other
by service name over a private bridge, and nothing else; a partition; each host its own
hostname, pid 1 and mounts; a shared directory each host sees through its own cache, with
no inotify across hosts; nothing left behind, also when a test fails or is killed. Root only
(and bindfs for the shared directory): skipped, saying why, elsewhere."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from processes import sigterm_once_ready
from trainexec.testing import storage
from trainexec.testing.netns import PREFIX, TestBed, remove_leftovers, unavailable
from trainexec.testing.storage import NO_CACHING, NfsCaching, SharedDir

pytestmark = [pytest.mark.any_line, pytest.mark.cluster, pytest.mark.multihost]

WHY_NOT = unavailable()
needs_root = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
NO_VIEW = storage.unavailable()
needs_views = pytest.mark.skipif(NO_VIEW is not None, reason=NO_VIEW or "")

# A tiny server and client, run on the bed's hosts.
SERVE = ("import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
         "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 2222)); s.listen(); print('ready', "
         "flush=True); c,_=s.accept(); c.sendall(b'hello'); c.close()")
CONNECT = ("import socket,sys; s=socket.create_connection((sys.argv[1], 2222), timeout=2); "
           "print(s.recv(5).decode())")


def _leftovers():
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    mine = f"{PREFIX}{os.getpid()}"
    return [n for n in names.split() if n.startswith(mine)]


@needs_root
def test_hosts_reach_each_other_by_service_name_and_nothing_else():
    with TestBed(["demo-chief-0", "demo-worker-0"], domain="default.svc") as bed:
        server = bed.popen("demo-chief-0", [sys.executable, "-c", SERVE],
                           stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout.readline().strip() == "ready"
            # The machine's own namespace has no address on the bridge: the bed is a
            # network of its own (and no traffic is sent to its addresses from outside).
            bridge = subprocess.run(["ip", "-o", "addr", "show", bed.bridge],
                                    capture_output=True, text=True).stdout
            assert "inet " not in bridge and "198.18." not in bridge, bridge  # no IPv4
            reached = bed.run("demo-worker-0", [sys.executable, "-c", CONNECT,
                                                "demo-chief-0.default.svc"])
            assert reached.stdout.strip() == "hello", reached.stderr
            # Nothing beyond the bridge: one route, the bed's own /24.
            routes = bed.run("demo-worker-0", ["ip", "route"]).stdout.strip().splitlines()
            assert routes == [f"198.18.0.0/24 dev eth0 proto kernel scope link src "
                              f"{bed.host('demo-worker-0').address}"]
        finally:
            server.kill()
            server.wait()


@needs_root
def test_a_partition_cuts_a_host_off_until_it_is_mended():
    with TestBed(["a", "b"]) as bed:
        server = bed.popen("a", [sys.executable, "-c", SERVE], stdout=subprocess.PIPE,
                           text=True)
        try:
            assert server.stdout.readline().strip() == "ready"
            with bed.partitioned("b"):
                cut = bed.run("b", [sys.executable, "-c", CONNECT, "a"])
                assert cut.returncode != 0 and "hello" not in cut.stdout, cut.stdout
            # The link is up again; the first connection may still find the
            # neighbour entry the cut left stale (EHOSTUNREACH), so allow a few tries.
            for _ in range(5):
                mended = bed.run("b", [sys.executable, "-c", CONNECT, "a"])
                if mended.stdout.strip() == "hello":
                    break
                time.sleep(1.0)
            assert mended.stdout.strip() == "hello", mended.stderr
        finally:
            server.kill()
            server.wait()


@needs_root
def test_everything_is_removed_even_when_the_test_fails():
    with pytest.raises(RuntimeError, match="a failing test"):
        with TestBed(["x", "y"]) as bed:
            assert len(_leftovers()) == 2
            assert os.path.exists(f"/etc/netns/{bed.host('x').netns}/hosts")
            raise RuntimeError("a failing test")
    assert _leftovers() == []
    assert not os.path.exists(f"/etc/netns/{bed.host('x').netns}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert bed.bridge not in links and bed.host("x").veth not in links


@needs_root
def test_aliases_answer_for_a_host_on_every_host():
    with TestBed(["gcs", "demo-chief-0"], domain="default.svc",
                 aliases={"gcs": ("www.googleapis.com", "storage.googleapis.com")}) as bed:
        server = bed.popen("gcs", [sys.executable, "-c", SERVE], stdout=subprocess.PIPE,
                           text=True)
        try:
            assert server.stdout.readline().strip() == "ready"
            reached = bed.run("demo-chief-0", [sys.executable, "-c", CONNECT,
                                               "storage.googleapis.com"])
            assert reached.stdout.strip() == "hello", reached.stderr
            looked_up = bed.run("gcs", ["getent", "hosts", "www.googleapis.com"])
            assert looked_up.stdout.split()[0] == bed.host("gcs").address, looked_up
        finally:
            server.kill()
            server.wait()


def test_aliases_must_name_hosts_of_the_bed():
    with pytest.raises(ValueError, match=r"aliases name hosts \['gcs'\]"):
        TestBed(["a"], aliases={"gcs": ("storage.googleapis.com",)})
    with pytest.raises(ValueError, match="give a sequence of names"):
        TestBed(["gcs"], aliases={"gcs": "storage.googleapis.com"})


# A program that says who it is on its host: hostname, its pid, the pids its host shows.
WHO = ("import os, socket; print(socket.gethostname(), os.getpid(), "
       "sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")


@needs_root
def test_each_host_has_its_own_hostname_pid_1_and_processes():
    with TestBed(["demo-chief-0", "demo-worker-0"], domain="default.svc") as bed:
        # A long-running program on the chief's host, marked so it can be looked for.
        marked = bed.popen("demo-chief-0", ["sleep", "3600.123"])
        try:
            seen = {}
            for host in bed.hosts:
                name, pid, pids = bed.run(host, [sys.executable, "-c", WHO]
                                          ).stdout.split(maxsplit=2)
                seen[host] = (name, int(pid), eval(pids))
                assert name == host
                assert 1 in seen[host][2] and int(pid) < 100, seen  # its own pid space
                init = bed.run(host, ["cat", "/proc/1/cmdline"]).stdout
                assert "sethostname" in init, init  # pid 1 is the host's holder
            # The chief's program is on the chief's host, and only there.
            look = ["sh", "-c", "grep -l 3600[.]123 /proc/[0-9]*/cmdline || true"]
            assert bed.run("demo-chief-0", look).stdout.strip(), "not on its own host"
            assert bed.run("demo-worker-0", look).stdout.strip() == ""
            assert socket_hostname() != "demo-chief-0"  # this machine keeps its name
        finally:
            os.killpg(marked.pid, signal.SIGKILL)
            marked.wait()


def socket_hostname() -> str:
    import socket
    return socket.gethostname()


# A program ended by a signal, or exiting, reports as it would without the bed.
HANDLES_TERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: "
                "sys.exit(7)); print('ready', flush=True); time.sleep(60)")
SLEEPS = "import time; print('ready', flush=True); time.sleep(60)"


@needs_root
@pytest.mark.parametrize("program, sig, returncode", [
    (SLEEPS, signal.SIGKILL, -9), (SLEEPS, signal.SIGTERM, -15),
    (HANDLES_TERM, signal.SIGTERM, 7), ("import sys; sys.exit(3)", None, 3)])
def test_signals_reach_the_program_and_its_exit_status_is_returned(program, sig,
                                                                   returncode):
    with TestBed(["a"]) as bed:
        proc = bed.popen("a", [sys.executable, "-c", program], stdout=subprocess.PIPE,
                         text=True)
        if sig is not None:
            assert proc.stdout.readline().strip() == "ready"
            os.killpg(proc.pid, signal.SIGSTOP)  # a freeze is a freeze ...
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
            os.killpg(proc.pid, signal.SIGCONT)  # ... and a thaw a thaw
            os.killpg(proc.pid, sig)
        assert proc.wait(timeout=10) == returncode


POLL_UNTIL_THERE = r"""
import os, sys, time
path = sys.argv[1]
print(os.path.exists(path), time.monotonic(), flush=True)   # looked up: absent
sys.stdin.readline()
while not os.path.exists(path):
    time.sleep(0.05)
print(time.monotonic(), flush=True)
"""


def _seen_after(bed, shared, host, writer, name) -> tuple[float, float]:
    """(seconds from `host`'s first look-up until it saw the file `writer` made right
    after that look-up, seconds until the backing directory had it)."""
    path = shared.on_hosts(name)
    proc = bed.popen(host, [sys.executable, "-c", POLL_UNTIL_THERE, path],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        there, looked = proc.stdout.readline().split()
        assert there == "False"
        made = bed.run(writer, ["touch", path])
        assert made.returncode == 0, made.stderr
        on_machine = time.monotonic() - float(looked)
        assert os.path.exists(shared.on_machine(path))
        proc.stdin.write("go\n")
        proc.stdin.flush()
        return float(proc.stdout.readline()) - float(looked), on_machine
    finally:
        proc.kill()
        proc.wait()


@needs_views
@pytest.mark.parametrize("caching", [NfsCaching(attr_secs=1, entry_secs=1, negative_secs=4),
                                     NO_CACHING], ids=["negative-4s", "no-caching"])
def test_a_file_one_host_writes_shows_on_another_when_the_cache_allows(tmp_path, caching):
    shared = SharedDir(str(tmp_path / "backing"), caching=caching)
    with TestBed(["a", "b"], shared_dir=shared) as bed:
        seen, on_machine = _seen_after(bed, shared, "a", "b", "new-on-b")
        assert on_machine < 2.0  # the backing directory has it as soon as b wrote it
        if caching.negative_secs:
            # "a" looked the name up before it existed: absent for negative_secs.
            assert caching.negative_secs - 0.5 <= seen <= caching.negative_secs + 3, seen
        else:
            assert seen < 1.5, seen
        # The writer itself sees its file at once (its own cache was told).
        assert bed.run("b", ["test", "-e", shared.on_hosts("new-on-b")]).returncode == 0


INOTIFY = r"""
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x100 | 0x8) >= 0  # CREATE, CLOSE_WRITE
print("watching", flush=True)
for line in sys.stdin:      # "wait SECS": the names of the files created meanwhile
    ready, _, _ = select.select([fd], [], [], float(line.split()[1]))
    names = []
    if ready:
        data = os.read(fd, 65536)
        while data:
            _, _, _, size = struct.unpack("iIII", data[:16])
            names.append(data[16:16 + size].rstrip(b"\0").decode())
            data = data[16 + size:]
    print(" ".join(sorted(set(names))) or "-", flush=True)
"""


@needs_views
def test_inotify_does_not_cross_hosts(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"), caching=NO_CACHING)
    with TestBed(["a", "b"], shared_dir=shared) as bed:
        watch = bed.popen("a", [sys.executable, "-c", INOTIFY, shared.mount_point],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert watch.stdout.readline().strip() == "watching"

            def events(secs: float = 2.0) -> str:
                watch.stdin.write(f"wait {secs}\n")
                watch.stdin.flush()
                return watch.stdout.readline().strip()

            assert bed.run("b", ["touch", shared.on_hosts("from-b")]).returncode == 0
            with open(os.path.join(shared.backing, "from-machine"), "w") as f:
                f.write("x")
            assert events() == "-"  # neither another host's write nor the backing's
            assert bed.run("a", ["touch", shared.on_hosts("from-a")]).returncode == 0
            assert events() == "from-a"  # the watch works: its own host's write
        finally:
            watch.kill()
            watch.wait()


def _views_of(backing) -> list[str]:
    """The pids of the bindfs processes serving views of `backing`."""
    found = subprocess.run(["pgrep", "-f", f"^bindfs .* {backing} "], capture_output=True,
                           text=True).stdout.split()
    return [p for p in found if _alive(int(p))]


def _program_pid(waiter: subprocess.Popen) -> int:
    """The pid (here) of the program a bed's waiter started."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{waiter.pid}/task/{waiter.pid}/children") as f:
            children = f.read().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("the waiter started no program")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@needs_views
def test_nothing_is_left_after_a_failing_test_with_a_shared_dir(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"))
    with pytest.raises(RuntimeError, match="a failing test"):
        with TestBed(["x", "y"], shared_dir=shared) as bed:
            holders = [bed.holder_pid(h) for h in bed.hosts]
            program = _program_pid(bed.popen("x", ["sleep", "3600"]))
            orphan = bed.run("y", ["sh", "-c", "setsid sleep 3600 >/dev/null 2>&1 & echo"])
            assert orphan.returncode == 0
            assert len(_views_of(shared.backing)) == 2  # a view per host
            raise RuntimeError("a failing test")
    assert _leftovers() == []
    assert [p for p in holders + [program] if _alive(p)] == []
    assert _views_of(shared.backing) == []
    assert not os.path.exists(shared.mount_point)
    sleeping = subprocess.run(["pgrep", "-f", "^sleep 3600$"], capture_output=True,
                              text=True).stdout.split()
    assert [p for p in sleeping if _alive(int(p))] == []  # the orphan on y too


MAKES_A_BED = """
import sys, time
from trainexec.testing.netns import TestBed
from trainexec.testing.storage import SharedDir
with TestBed(["x", "y"], shared_dir=SharedDir(sys.argv[1])) as bed:
    print(*[bed.holder_pid(h) for h in bed.hosts], flush=True)
    time.sleep(3600)
"""


@needs_views
def test_a_killed_test_leaves_no_host_running_and_its_leftovers_are_removed(tmp_path):
    maker = subprocess.Popen([sys.executable, "-c", MAKES_A_BED, str(tmp_path / "backing")],
                             stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    holders = [int(p) for p in maker.stdout.readline().split()]
    assert len(holders) == 2 and all(_alive(p) for p in holders)
    assert len(_views_of(tmp_path / "backing")) == 2
    maker.kill()  # SIGKILL: no `finally` runs
    maker.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in holders) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in holders if _alive(p)] == []  # the hosts ended with their maker
    assert _views_of(tmp_path / "backing") == []
    removed = remove_leftovers()
    mine = f"{PREFIX}{maker.pid}"
    assert {n for n in removed if os.path.basename(n).startswith(mine)}, removed
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert mine not in names
    assert not os.path.exists(f"/tmp/{mine}-shared")


HOLD_LOCK = ("import fcntl, sys, time; f = open(sys.argv[1], 'w'); "
             "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)")
TRY_LOCK = ("import fcntl, sys; f = open(sys.argv[1], 'a'); "
            "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('got it')")


@needs_views
def test_locks_and_listings_as_on_nfs_without_a_shared_lock_manager(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"))  # NFS's default caching
    with TestBed(["a", "b"], shared_dir=shared) as bed:
        path = shared.on_hosts("locked")
        holder = bed.popen("a", [sys.executable, "-c", HOLD_LOCK, path],
                           stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            assert bed.run("a", [sys.executable, "-c", TRY_LOCK, path]).returncode != 0
            # Another host's view does not see the lock.
            assert bed.run("b", [sys.executable, "-c", TRY_LOCK, path]).stdout == "got it\n"
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait()
        # Listings are not cached: a file b makes is listed on a at once (NFS may
        # take up to acdirmax), even while a's cache says the name is absent.
        assert bed.run("a", ["test", "-e", shared.on_hosts("listed")]).returncode != 0
        bed.run("b", ["touch", shared.on_hosts("listed")])
        assert "listed" in bed.run("a", ["ls", shared.mount_point]).stdout.split()
        assert bed.run("a", ["test", "-e", shared.on_hosts("listed")]).returncode != 0


@needs_views
def test_a_program_can_start_in_a_directory_on_the_shared_view(tmp_path):
    shared = SharedDir(str(tmp_path / "backing"), caching=NO_CACHING)
    os.makedirs(os.path.join(shared.backing, "work"))
    with TestBed(["a"], shared_dir=shared) as bed:
        proc = bed.popen("a", ["sh", "-c", "pwd; echo hi > here"], cwd=shared.on_hosts("work"),
                         stdout=subprocess.PIPE, text=True)
        assert proc.communicate(timeout=30)[0].strip() == shared.on_hosts("work")
        assert proc.returncode == 0
        assert os.path.exists(os.path.join(shared.backing, "work", "here"))
        missing = bed.run("a", ["no-such-program-here"])
        assert missing.returncode == 127 and "No such file" in missing.stderr


STOPPED_RUN = """
import sys
import pytest
import sigterm_teardown
sigterm_teardown.install()
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]]))
"""

BED_IN_A_FIXTURE = """
import pathlib, time
import pytest
from trainexec.testing.netns import TestBed
from trainexec.testing.storage import SharedDir

HERE = pathlib.Path(__file__).parent

@pytest.fixture
def bed():
    with TestBed(["x", "y"], shared_dir=SharedDir(str(HERE / "backing"))) as bed:
        yield bed

def test_runs_until_stopped(bed):
    bed.popen("x", ["sleep", "3600"])
    (HERE / "holders").write_text(" ".join(str(bed.holder_pid(h)) for h in bed.hosts))
    time.sleep(3600)
"""


@needs_views
def test_a_test_run_stopped_with_sigterm_removes_its_bed_itself(tmp_path):
    """tests/sigterm_teardown.py: a run stopped by a CI timeout or a `kill` unwinds, and
    the bed its running test made is gone when pytest exits, with nothing left for
    remove_leftovers() (which a later bed would run) to find."""
    (tmp_path / "test_probe.py").write_text(BED_IN_A_FIXTURE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
         os.path.dirname(os.path.dirname(__file__))]))
    run = subprocess.Popen([sys.executable, "-c", STOPPED_RUN, str(tmp_path / "test_probe.py")],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    mine = f"{PREFIX}{run.pid}"
    holders = []

    def the_bed_is_up():
        holders.extend(int(p) for p in (tmp_path / "holders").read_text().split())
        assert len(holders) == 2 and len(_views_of(tmp_path / "backing")) == 2

    output = sigterm_once_ready(run, tmp_path / "holders", "the probe's bed never came up",
                                before=the_bed_is_up)
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert [p for p in holders if _alive(p)] == [], output
    assert _views_of(tmp_path / "backing") == []
    ours = re.compile(rf"^(\d+: )?{mine}[bhv]", re.M)  # te<pid>b, te<pid>h0, te<pid>v0
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not ours.search(names), names
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not ours.search(links), links
    assert not os.path.exists(f"/tmp/{mine}-shared")
