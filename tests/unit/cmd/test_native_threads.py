"""Every volumesvc command runs on oslo.service's threading backend.

Each case runs in a fresh interpreter: the backend is chosen once per
process, and this test process chose it already (tests/conftest.py).
"""

import subprocess
import sys
import textwrap


def _run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_the_commands_get_the_threading_backend():
    """Regression: without cotyledon the choice failed and eventlet was used."""
    result = _run("""
        from oslo_service import backend
        from volumesvc.cmd import common
        common.use_native_threads()
        print(type(backend.get_backend()).__name__)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ThreadingBackend"


def test_a_backend_that_cannot_load_stops_the_command():
    result = _run("""
        import sys
        sys.modules["cotyledon"] = None  # as if it were not installed
        from volumesvc.cmd import common
        common.use_native_threads()
    """)
    assert result.returncode != 0
    assert "RuntimeError: oslo.service's threading backend cannot be loaded" in result.stderr
    assert "cotyledon" in result.stderr


def test_a_backend_an_embedding_process_chose_stays():
    result = _run("""
        from oslo_service import backend
        backend.init_backend(backend.BackendType.EVENTLET)
        from volumesvc.cmd import common
        common.use_native_threads()
        print(type(backend.get_backend()).__name__)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "EventletBackend"
