"""The storm stack: the product's CPU priorities and [api] options, and its children's path.

``attach_storm --no-cpu-priority`` / ``--api-max-requests 0`` must turn
one lever off and leave the rest as the product ships them; volumesvc's
processes must run the snapshot of the commit measured and find the slow
driver the config names.
"""

import configparser
import os
import subprocess
import sys

import pytest

from benchmarks import attach_storm
from benchmarks.lib import storm_stack
from benchmarks.lib.allinone import priority
from tests.fixtures import virt as virt_fixtures
from volumesvc import binaries


class _Recorder:
    def __init__(self, name, argv, log_path, env=None, cwd=None, nice=0):
        self.name, self.nice = name, nice

    def start(self):
        return self

    def stop(self, timeout=None):
        pass


@pytest.fixture
def stack_of():
    made = []

    def make(**kwargs):
        made.append(storm_stack.Stack(**{"delay": 0, "api_workers": 1, **kwargs}))
        return made[-1]

    yield make
    for stack in made:
        stack.stop()


@pytest.mark.parametrize("argv, lowered", [([], True), (["--no-cpu-priority"], False)])
def test_the_stack_lowers_what_the_all_in_one_lowers(stack_of, monkeypatch, argv, lowered):
    monkeypatch.setattr(storm_stack, "ProcessGroup", _Recorder)
    args = attach_storm.parse_args(argv)
    stack = stack_of(cpu_priority=args.cpu_priority)
    stack.env = {}
    got = {name: stack._spawn(name, ["x"]).nice
           for name in (binaries.API, binaries.CONDUCTOR, binaries.COMPUTE)}
    low = priority.BACKGROUND_NICE if lowered else 0
    assert got == {binaries.API: 0, binaries.CONDUCTOR: low, binaries.COMPUTE: low}


def test_api_options_reach_the_config_and_default_to_the_products(stack_of):
    assert attach_storm._api_options(attach_storm.parse_args([])) == {}
    options = attach_storm._api_options(attach_storm.parse_args(
        ["--api-max-requests", "0", "--api-max-requests-jitter", "3",
         "--api-private-memory-max", "48"]))
    stack = stack_of(api_workers=2, api_threads=32, api_options=options)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(stack.write_config("fake://", "sqlite://", "http://c", "http://g"))
    assert parser["api"]["max_requests"] == "0"
    assert parser["api"]["max_requests_jitter"] == "3"
    assert parser["api"]["worker_private_memory_max"] == "48"
    assert parser["api"]["threads"] == "32"


def test_children_run_the_snapshot_and_load_the_configured_slow_driver(stack_of, tmp_path):
    """A child started with the stack's environment, from another directory, imports
    volumesvc from the snapshot of the commit (not the working tree) and loads the
    ``compute_driver`` the stack's config names, with the run's delay."""
    stack = stack_of(delay=1.5)
    stack._snapshot("HEAD")
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(stack.write_config("fake://", "sqlite://", "http://c", "http://g"))
    driver = parser["DEFAULT"]["compute_driver"]
    code = ("import os, sys, volumesvc; from volumesvc import virt; "
            f"cls = virt.driver_class({driver!r}); "
            "print(volumesvc.__file__); print(cls.__module__, cls.__name__); "
            f"print(os.environ[{virt_fixtures.RESERVE_DELAY_ENV!r}])")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=stack.env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    where, cls, delay = result.stdout.splitlines()
    assert where == os.path.join(stack.state_dir, "src", "volumesvc", "__init__.py")
    assert cls == "tests.fixtures.virt SlowReserveDriver"
    assert delay == "1.5"
