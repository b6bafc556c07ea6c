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

STATS = {"cases": 0, "by_status": {}, "started": None, "last": None, "seed": None}


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
    STATS["last"] = time.monotonic()


def fuzz_elapsed() -> float:
    """Seconds from the first generated case to the last.

    Not to the summary: in the whole suite the integration tier runs after
    the fuzz tier, and its time is not the fuzzer's.
    """
    if STATS["started"] is None:
        return 0.0
    return STATS["last"] - STATS["started"]


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    built = world_mod.build(tmp_path_factory.mktemp("fuzz"))
    yield built
    built.stack.stop()


def pytest_terminal_summary(terminalreporter):
    if not STATS["cases"]:
        return
    elapsed = fuzz_elapsed()
    statuses = ", ".join(f"{code}: {count}" for code, count in sorted(STATS["by_status"].items()))
    five_xx = sum(count for code, count in STATS["by_status"].items() if code >= 500)
    terminalreporter.write_line(
        f"fuzz: {STATS['cases']} generated cases in {elapsed:.1f} s, seed {STATS['seed']}, "
        f"{five_xx} 5xx ({statuses})")
