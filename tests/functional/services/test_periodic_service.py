"""An RPC service runs its manager's periodic tasks and stops them on shutdown."""

import threading
import time

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from tests.polling import eventually
from volumesvc import conf as vs_conf
from volumesvc import context as vs_context
from volumesvc import periodic, rpc, service


class _Manager:
    """A manager with one periodic task that can be made to hang."""

    target = messaging.Target(version="1.0")

    def __init__(self):
        self.contexts = []
        self.hang = threading.Event()
        self.release = threading.Event()

    @periodic.periodic_task("periodic_test", "tick_interval")
    def _tick(self, context):
        self.contexts.append(context)
        if self.hang.is_set():
            self.release.wait(30)


@pytest.fixture
def conf():
    conf = vs_conf.get_conf()
    # NOTE: a test-only option; real intervals are declared in volumesvc/conf.
    conf.register_opt(cfg.FloatOpt("tick_interval", default=0), group="periodic_test")
    conf.set_override("transport_url", "fake:/")
    conf.set_override("host", "fn-periodic")
    conf.set_override("report_interval", 60)
    conf.set_override("graceful_shutdown_timeout", 1)
    return conf


def _service(conf, manager):
    return service.RPCService(
        conf, binary="periodic-test", topic="periodic-test", manager=manager,
        transport=rpc.get_transport(conf), heartbeat=lambda ctx, **values: None)


def test_the_service_runs_the_task_with_an_admin_context(conf):
    conf.set_override("tick_interval", 0.1, group="periodic_test")
    manager = _Manager()
    svc = _service(conf, manager)
    svc.start()
    try:
        assert eventually(lambda: len(manager.contexts) >= 2)
    finally:
        svc.stop()
    ctx = manager.contexts[0]
    assert isinstance(ctx, vs_context.RequestContext) and ctx.is_admin
    assert manager.contexts[0] is not manager.contexts[1]
    ran = len(manager.contexts)
    time.sleep(0.3)
    assert len(manager.contexts) == ran  # nothing runs after stop()


def test_an_interval_of_zero_is_off(conf):
    manager = _Manager()
    svc = _service(conf, manager)
    svc.start()
    time.sleep(0.5)
    svc.stop()
    assert manager.contexts == []


def test_stop_is_bounded_by_graceful_shutdown_timeout_with_a_hung_task(conf):
    conf.set_override("tick_interval", 0.1, group="periodic_test")
    manager = _Manager()
    manager.hang.set()
    svc = _service(conf, manager)
    svc.start()
    try:
        assert eventually(lambda: len(manager.contexts) >= 1)
        begin = time.monotonic()
        svc.stop()
        elapsed = time.monotonic() - begin
    finally:
        manager.release.set()
    assert elapsed < conf.graceful_shutdown_timeout + 1.0
    assert len(manager.contexts) == 1  # the hung run was never stacked
