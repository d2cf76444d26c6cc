"""trainexec/launch/network.py: the tasks' private network namespace (only `lo`, up), the
words of its warnings and of its fallback, and the options that go with it. The namespace
tests make a real one and start a real child in it (a fraction of a second, no TensorFlow);
they skip, saying why, where this machine cannot make one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainexec.errors import ConfigError
from trainexec.launch import LocalCluster
from trainexec.launch.network import (PrivateNetwork, Unavailable, diagnose, host_warning)
from trainexec.launch.options import FLAGS, KEYWORDS, check_network

pytestmark = pytest.mark.any_line

SHOW_INTERFACES = [sys.executable, "-c",
                   "import json, socket; print(json.dumps([n for _, n in socket.if_nameindex()]))"]


def private_network_or_skip() -> PrivateNetwork:
    try:
        return PrivateNetwork.make()
    except Unavailable as err:
        pytest.skip(f"this machine cannot make a private network namespace: {err}")


def interfaces(preexec=None) -> list[str]:
    done = subprocess.run(SHOW_INTERFACES, preexec_fn=preexec, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_task_in_the_private_network_sees_only_loopback_and_reaches_itself_on_it():
    network = private_network_or_skip()
    try:
        assert interfaces(network.enter) == ["lo"]
        assert len(interfaces()) > 1, "this process, on the host's network, sees more"
        # lo is up: a server on 127.0.0.1 inside is reached from inside.
        loop = subprocess.run([sys.executable, "-c", (
            "import socket\n"
            "s = socket.create_server(('127.0.0.1', 0))\n"
            "socket.create_connection(s.getsockname(), timeout=5).close()\n"
            "print('reached')")], preexec_fn=network.enter, capture_output=True, text=True,
            timeout=30)
        assert loop.stdout.strip() == "reached", loop.stderr
    finally:
        network.close()


def test_after_close_a_task_is_never_started_on_the_hosts_network_instead():
    network = private_network_or_skip()
    network.close()
    network.close()  # idempotent
    with pytest.raises(subprocess.SubprocessError):
        interfaces(network.enter)


def test_the_warnings_say_the_servers_are_exposed_and_the_fallback_says_why():
    asked = host_warning()
    assert asked.startswith("network: host: ")
    assert "listens on every interface of this machine, without authentication" in asked
    assert "--network private" in asked
    fallback = host_warning("unshare(CLONE_NEWNET): Operation not permitted")
    assert fallback.startswith("network: host, as no private network namespace could be "
                               "made: unshare(CLONE_NEWNET): Operation not permitted. ")
    assert "listens on every interface" in fallback


@pytest.mark.parametrize("settings, as_root, words", [
    ({}, False, "unshare(CLONE_NEWUSER|CLONE_NEWNET): Operation not permitted"),
    ({"/proc/sys/kernel/unprivileged_userns_clone": "0"}, False,
     "user namespaces are disabled for users other than root: "
     "kernel.unprivileged_userns_clone = 0; unshare("),
    ({"/proc/sys/user/max_user_namespaces": "0"}, False,
     "user namespaces are disabled: user.max_user_namespaces = 0; unshare("),
    ({"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, False,
     "AppArmor restricts unprivileged user namespaces: "
     "kernel.apparmor_restrict_unprivileged_userns = 1; unshare("),
    ({"/proc/sys/user/max_net_namespaces": "0"}, True,
     "network namespaces are disabled: user.max_net_namespaces = 0; unshare("),
    # root needs no user namespace: that switch is not the reason
    ({"/proc/sys/kernel/unprivileged_userns_clone": "0"}, True, "unshare("),
], ids=["errno-only", "userns-clone", "max-user-ns", "apparmor", "max-net-ns", "root"])
def test_a_failure_names_the_kernel_setting_responsible(settings, as_root, words):
    failure = "unshare(CLONE_NEWUSER|CLONE_NEWNET): Operation not permitted"
    told = diagnose(failure, as_root, read_setting=settings.get)
    assert told.startswith(words) and told.endswith(failure)


@pytest.mark.parametrize("network, host, keywords, flags", [
    ("none", "127.0.0.1",
     "network is 'none': use \"private\" (the default: a network namespace of the tasks' "
     "own) or \"host\"",
     "--network 'none': use private (the default: a network namespace of the tasks' own) "
     "or host"),
    ("private", "10.1.2.3",
     "host is '10.1.2.3', which the tasks cannot reach in their private network (loopback "
     "only): use host=\"127.0.0.1\", or network=\"host\" to run them on this machine's "
     "network",
     "--host 10.1.2.3 cannot be reached by the tasks in their private network (loopback "
     "only): use --host 127.0.0.1, or --network host to run them on this machine's network"),
], ids=["unknown-network", "host-outside-loopback"])
def test_network_problems_are_told_in_the_callers_words(network, host, keywords, flags):
    for spelling, words in ((KEYWORDS, keywords), (FLAGS, flags)):
        with pytest.raises(ConfigError) as raised:
            check_network(network, host, spelling)
        assert str(raised.value) == words


@pytest.mark.parametrize("network, host", [
    ("private", "127.0.0.1"), ("private", "localhost"), ("private", "::1"),
    ("private", "[::1]"), ("private", "127.0.0.2"), ("host", "10.1.2.3"),
    ("host", "my-machine"),
])
def test_loopback_hosts_suit_the_private_network_and_any_host_the_hosts(network, host):
    check_network(network, host)


def test_local_cluster_checks_its_network_option_before_anything_starts():
    with pytest.raises(ConfigError, match="network is 'lan'"):
        LocalCluster(["python", "train.py"], network="lan")
    with pytest.raises(ConfigError, match="host is '192.0.2.7', which the tasks cannot reach"):
        LocalCluster(["python", "train.py"], host="192.0.2.7")
    cluster = LocalCluster(["python", "train.py"], host="192.0.2.7", network="host")
    assert cluster.network == "host" and cluster.network_used is None  # not started
