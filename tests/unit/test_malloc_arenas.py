"""[DEFAULT] malloc_arena_max: threads that allocate at once share the capped arenas."""

import subprocess
import sys
import textwrap

# 16 threads compress without the GIL (zlib releases it), so their mallocs
# contend and glibc hands out arenas; malloc_stats() lists them on stderr.
PROBE = textwrap.dedent("""
    import ctypes, sys, threading, zlib
    from types import SimpleNamespace
    from volumesvc.cmd import common

    common.limit_malloc_arenas(SimpleNamespace(malloc_arena_max=int(sys.argv[1])))
    data = bytes(range(256)) * 4096

    def work():
        for _ in range(30):
            zlib.compress(data, 6)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctypes.CDLL("libc.so.6").malloc_stats()
""")


def _arenas(limit):
    out = subprocess.run([sys.executable, "-c", PROBE, str(limit)], capture_output=True,
                         text=True, timeout=120, check=True)
    return sum(1 for line in out.stderr.splitlines() if line.startswith("Arena "))


def test_the_cap_holds_where_glibc_would_make_more():
    assert _arenas(0) > 2
    assert _arenas(2) <= 2
