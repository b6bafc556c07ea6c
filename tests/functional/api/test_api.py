"""Runs every gabbi YAML journey in ``gabbits/`` against the in-process app."""

import os

from gabbi import driver
from gabbi.driver import test_pytest  # noqa: F401 - collected by pytest

from tests.functional.api import fixtures

TESTS_DIR = os.path.join(os.path.dirname(__file__), "gabbits")


def pytest_generate_tests(metafunc):
    driver.py_test_generator(
        TESTS_DIR, intercept=fixtures.setup_app, fixture_module=fixtures,
        test_loader_name=__name__, metafunc=metafunc)
