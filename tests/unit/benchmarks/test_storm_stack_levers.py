"""The storm stack mirrors the product's CPU priorities and [api] options, each with a switch.

``attach_storm.py --no-cpu-priority`` / ``--api-max-requests 0`` must turn
one lever off and leave the rest as the product ships them.
"""

import configparser
import pathlib
import sys

import pytest

from volumesvc import binaries
from volumesvc_aio import priority

BENCHMARKS = pathlib.Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture
def storm(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import attach_storm
    import storm_stack

    yield attach_storm, storm_stack
    for name in ("attach_storm", "storm_stack", "storm_metrics", "storm_report"):
        sys.modules.pop(name, None)


class _Recorder:
    def __init__(self, name, argv, log_path, env=None, cwd=None, nice=0):
        self.name, self.nice = name, nice

    def start(self):
        return self

    def stop(self, timeout=None):
        pass


@pytest.mark.parametrize("argv, lowered", [([], True), (["--no-cpu-priority"], False)])
def test_the_stack_lowers_what_the_all_in_one_lowers(storm, monkeypatch, argv, lowered):
    attach_storm, storm_stack = storm
    monkeypatch.setattr(storm_stack, "ProcessGroup", _Recorder)
    args = attach_storm.parse_args(argv)
    stack = storm_stack.Stack(delay=0, api_workers=1, cpu_priority=args.cpu_priority)
    try:
        stack.env = {}
        got = {name: stack._spawn(name, ["x"]).nice
               for name in (binaries.API, binaries.CONDUCTOR, binaries.COMPUTE)}
    finally:
        stack.stop()
    low = priority.BACKGROUND_NICE if lowered else 0
    assert got == {binaries.API: 0, binaries.CONDUCTOR: low, binaries.COMPUTE: low}


def test_api_options_reach_the_config_and_default_to_the_products(storm, tmp_path):
    attach_storm, storm_stack = storm
    assert attach_storm._api_options(attach_storm.parse_args([])) == {}
    options = attach_storm._api_options(attach_storm.parse_args(
        ["--api-max-requests", "0", "--api-max-requests-jitter", "3",
         "--api-private-memory-max", "48"]))
    stack = storm_stack.Stack(delay=0, api_workers=2, api_threads=32, api_options=options)
    try:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(stack.write_config("fake://", "sqlite://", "http://c", "http://g"))
    finally:
        stack.stop()
    assert parser["api"]["max_requests"] == "0"
    assert parser["api"]["max_requests_jitter"] == "3"
    assert parser["api"]["worker_private_memory_max"] == "48"
    assert parser["api"]["threads"] == "32"
