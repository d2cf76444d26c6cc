"""A stand-in for a training program: behaves per its TF_CONFIG task (no TensorFlow).

Usage: role.py [TASK=BEHAVIOUR ...] where TASK is a task type ("worker") or a
task name ("worker:1", which wins), and BEHAVIOUR is one of:

  ok            print the TF_CONFIG and exit 0 (the default)
  await-ps      connect to every ps (retrying, like a chief), then exit 0
  exit:N        print lines "line 1".."line 30" and exit with code N
  signal:N      kill itself with signal N
  sleep:S       sleep S seconds, then exit 0
  serve         serve forever like a ps; exit 0 on SIGTERM
  spawn         start a grandchild that sleeps forever, then serve
  hang          ignore SIGTERM and sleep forever
  crash-once:N  exit N unless $MARKER_DIR/<task>.marker exists (creates it first);
                with $CRASH_AFTER=<task>, only once that task is ready
  orphan:N      start a grandchild that sleeps forever, then exit N
  orphan-once:N start a grandchild that sleeps forever; on the first run write its
                pid to $MARKER_DIR/<task>.marker and exit N; on the next run say
                whether that first grandchild is "gone" (within 2s) or "alive",
                then exit 0

Every task prints "TF_CONFIG <json>", "pid <pid>" and "env $ROLE_TAG
$PYTHONUNBUFFERED", installs its SIGTERM handler, binds its address if it has
one ("bound <address>"; exit 98 if the port is taken), then prints "ready" (and,
with $MARKER_DIR set, creates $MARKER_DIR/<task>.ready).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time


def ended(pid):
    """True when process `pid` is gone or a zombie."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    try:
        os.kill(pid, 0)  # without /proc a zombie still counts as running here
    except ProcessLookupError:
        return True
    return False


def gone(pid, within):
    """True if process `pid` ends (or has ended) within `within` seconds."""
    deadline = time.monotonic() + within
    while not ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def main(argv):
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    name = f"{task['type']}:{task['index']}"
    rules = dict(arg.split("=", 1) for arg in argv)
    behaviour = rules.get(name, rules.get(task["type"], "ok"))
    print("TF_CONFIG", json.dumps(config, sort_keys=True))
    print("pid", os.getpid())
    print("env", os.environ.get("ROLE_TAG", "-"), os.environ.get("PYTHONUNBUFFERED", "-"))
    kind, _, arg = behaviour.partition(":")
    if kind == "hang":
        signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM"))
    elif kind in ("serve", "spawn"):
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(print("got SIGTERM")))
    server = None
    addresses = config["cluster"].get(task["type"], [])
    if task["index"] < len(addresses):
        host, port = addresses[task["index"]].rsplit(":", 1)
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((host, int(port)))
        except OSError as err:
            print("cannot bind", addresses[task["index"]], err)
            return 98
        server.listen()
        print("bound", addresses[task["index"]])
    if kind in ("spawn", "orphan", "orphan-once"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print("grandchild pid", child.pid)
    print("ready")
    if os.environ.get("MARKER_DIR"):
        open(os.path.join(os.environ["MARKER_DIR"], name + ".ready"), "w").close()
    if kind == "ok":
        return 0
    if kind == "await-ps":
        for address in config["cluster"].get("ps", []):
            host, port = address.rsplit(":", 1)
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection((host, int(port)), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        print("ps unreachable", address)
                        return 97
                    time.sleep(0.02)
        print("ps reachable")
        return 0
    if kind == "exit":
        for i in range(1, 31):
            print("line", i)
        return int(arg)
    if kind == "signal":
        os.kill(os.getpid(), int(arg))
    if kind == "sleep":
        time.sleep(float(arg))
        return 0
    if kind == "orphan":
        return int(arg)
    if kind == "orphan-once":
        marker = os.path.join(os.environ["MARKER_DIR"], name + ".marker")
        if not os.path.exists(marker):
            with open(marker, "w") as out:
                out.write(str(child.pid))
            print("crashing on purpose")
            return int(arg)
        with open(marker) as previous:
            first = int(previous.read())
        print("first grandchild", "gone" if gone(first, within=2.0) else "alive")
        return 0
    if kind == "crash-once":
        marker = os.path.join(os.environ["MARKER_DIR"], name + ".marker")
        if not os.path.exists(marker):
            after = os.environ.get("CRASH_AFTER")  # a task that must be ready first
            deadline = time.monotonic() + 20
            while after and time.monotonic() < deadline and not os.path.exists(
                    os.path.join(os.environ["MARKER_DIR"], after + ".ready")):
                time.sleep(0.02)
            open(marker, "w").close()
            print("crashing on purpose")
            return int(arg)
        print("recovered")
        return 0
    while True:  # serve, spawn, hang
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
