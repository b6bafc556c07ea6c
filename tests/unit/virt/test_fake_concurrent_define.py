"""The fake libvirt defines domains from many threads at once, as a compute does.

Regression: with ``max_concurrent_builds`` builds spawning together, one
define iterated the domain table while another added to it and failed with
"dictionary changed size during iteration" (attach storm set-up, 1001
servers). libvirtd checks the name and adds the domain as one step.
"""

import concurrent.futures
import sys
import threading

import pytest

from volumesvc.virt import fake


@pytest.fixture(autouse=True)
def switch_often():
    """Switch threads every microsecond, so an unguarded interleaving shows up at once."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _xml(name, uuid):
    return (f"<domain type='qemu'><name>{name}</name><uuid>{uuid}</uuid>"
            "<memory>1024</memory><devices/></domain>")


def test_concurrent_defines_and_lookups_all_succeed():
    conn = fake.FakeLibvirt().open("qemu:///embed-concurrent")
    for i in range(300):  # a table big enough for iterations to take a while
        conn.defineXML(_xml(f"pre-{i}", f"pre-{i}"))
    start = threading.Barrier(16)

    def define(k):
        start.wait()
        for i in range(40):
            conn.defineXML(_xml(f"d-{k}-{i}", f"u-{k}-{i}"))
            conn.lookupByName(f"pre-{i}")
        return k

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        assert sorted(pool.map(define, range(16))) == list(range(16))
    assert len(conn.listAllDomains()) == 300 + 16 * 40
