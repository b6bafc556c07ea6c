"""Settings for every test tier."""

import pytest

from volumesvc.cmd import common

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
