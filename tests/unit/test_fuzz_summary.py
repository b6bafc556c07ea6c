"""The fuzz tier's summary line times the fuzzer, not the rest of the session.

Regression: the whole suite printed "5202 generated cases in 931 s" although
the fuzz tier took a fraction of that: the elapsed time ran from the first
case to the terminal summary, i.e. through the integration tier too.
"""

from tests.fixtures.clock import patch_time
from tests.fuzz import conftest as fuzz


def test_elapsed_is_first_to_last_case(monkeypatch):
    clock = iter([100.0, 101.0, 104.0, 999.0])
    monkeypatch.setattr(fuzz, "STATS", {"cases": 0, "by_status": {}, "started": None,
                                        "last": None, "seed": 11})
    patch_time(monkeypatch, fuzz, monotonic=lambda: next(clock))
    fuzz.record(200)  # started 100, last 101
    fuzz.record(404)  # last 104
    assert fuzz.fuzz_elapsed() == 4.0
    lines = []

    class Reporter:
        def write_line(self, line):
            lines.append(line)

    fuzz.pytest_terminal_summary(Reporter())  # the clock would say 999 now
    assert lines == ["fuzz: 2 generated cases in 4.0 s, seed 11, 0 5xx (200: 1, 404: 1)"]


def test_no_cases_no_elapsed(monkeypatch):
    monkeypatch.setattr(fuzz, "STATS", {"cases": 0, "by_status": {}, "started": None,
                                        "last": None, "seed": None})
    assert fuzz.fuzz_elapsed() == 0.0
