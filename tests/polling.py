"""Waiting for a condition in tests without a fixed sleep."""

import time


def eventually(predicate, timeout=10.0, interval=0.02):
    """True as soon as ``predicate()`` is truthy, False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
