"""Settings for every test tier."""

import pytest

from volumesvc.cmd import common


def pytest_itemcollected(item):
    """Refuse a test id with ':' (outside gabbi's own ``test_pytest``), naming it.

    The in-process tiers run as one pytest session with gabbi's plugin
    loaded, and that plugin splits every collected test's name at ':' to
    find its suite: a parametrized id holding a time or a URL made the whole
    session stop at collection with a bare KeyError.
    """
    if ":" in item.name and getattr(item, "originalname", "") != "test_pytest":
        raise pytest.UsageError(
            f"{item.nodeid}: a test id may not contain ':' (give the parametrize ids)")


# Same as every volumesvc process: oslo.service on native threads, never eventlet.
common.use_native_threads()


@pytest.fixture(autouse=True, scope="session")
def _prompt_rpc_executor_shutdown():
    """Idle RPC worker threads notice a stop within 0.05 s instead of 1 s.

    futurist's ThreadPoolExecutor (oslo.messaging's threading executor)
    wakes an idle worker only when its 1 s wait on the work queue times out,
    so every RPC server's ``wait()`` in a service stop took a second after its
    last handler finished: 2-3 s per in-process stack teardown, several
    minutes over the functional tier. This changes only that delay; the
    order and bounds of a service stop are the product's own.
    """
    from futurist import _thread

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_thread.ThreadWorker, "MAX_IDLE_FOR", 0.05)
        yield
