"""Runs every gabbi YAML journey in ``gabbits/`` against the in-process app."""

import os

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401 - collected by pytest

from tests.functional.api import fixtures
from volumesvc.api import microversions as mv

TESTS_DIR = os.path.join(os.path.dirname(__file__), "gabbits")

# The journeys name the maximum version, and the first one above it, as
# $ENVIRON:str['VOLUMESVC_MAX_VERSION'] / ['VOLUMESVC_ABOVE_MAX_VERSION'], so a new
# microversion changes them with the list (test_microversions.py holds the
# one literal).
os.environ["VOLUMESVC_MAX_VERSION"] = str(mv.MAX_VERSION)
os.environ["VOLUMESVC_ABOVE_MAX_VERSION"] = f"{mv.MAX_VERSION.major}.{mv.MAX_VERSION.minor + 1}"


def pytest_generate_tests(metafunc):
    driver.py_test_generator(
        TESTS_DIR, intercept=fixtures.setup_app, fixture_module=fixtures,
        test_loader_name=__name__, metafunc=metafunc)
