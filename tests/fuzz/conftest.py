"""The fuzz tier: one deployment per run, a case counter, and the summary line.

``VOLUMESVC_FUZZ_SEED`` fixes hypothesis's seed (default 11, what CI runs;
``random`` for a new one each run, printed in the summary so a failure can
be replayed); ``VOLUMESVC_FUZZ_CASES`` is the number of generated requests
to aim for over all routes (default 5200).
"""

import os
import random
import time

import pytest

from tests.fuzz import world as world_mod

STATS = {"cases": 0, "by_status": {}, "started": None, "seed": None}


def fuzz_seed() -> int:
    value = os.environ.get("VOLUMESVC_FUZZ_SEED", "11")
    if STATS["seed"] is None:
        STATS["seed"] = random.randrange(2 ** 32) if value == "random" else int(value)
    return STATS["seed"]


def fuzz_cases() -> int:
    return int(os.environ.get("VOLUMESVC_FUZZ_CASES", "5200"))


def record(status: int) -> None:
    if STATS["started"] is None:
        STATS["started"] = time.monotonic()
    STATS["cases"] += 1
    STATS["by_status"][status] = STATS["by_status"].get(status, 0) + 1


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    built = world_mod.build(tmp_path_factory.mktemp("fuzz"))
    yield built
    built.stack.stop()


def pytest_terminal_summary(terminalreporter):
    if not STATS["cases"]:
        return
    elapsed = time.monotonic() - STATS["started"]
    statuses = ", ".join(f"{code}: {count}" for code, count in sorted(STATS["by_status"].items()))
    five_xx = sum(count for code, count in STATS["by_status"].items() if code >= 500)
    terminalreporter.write_line(
        f"fuzz: {STATS['cases']} generated cases in {elapsed:.1f} s, seed {STATS['seed']}, "
        f"{five_xx} 5xx ({statuses})")
