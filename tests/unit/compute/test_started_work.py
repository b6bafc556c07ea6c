"""A compute does an attach or a detach once, however often a conductor asks (RPC 1.11)."""

import contextlib

import pytest

from volumesvc import context as vs_context
from volumesvc.compute import manager as compute_manager
from volumesvc.compute import started_work
from volumesvc.conf import get_conf

INSTANCE = {"uuid": "srv-1", "host": "cmp"}


def test_the_record_is_bounded_oldest_first():
    record = started_work.StartedWork(size=2)
    keys = [record.key(started_work.ATTACH, f"bdm-{n}") for n in range(3)]
    assert all(record.start(key) for key in keys)
    assert record.start(keys[2]) is False
    assert len(record) == 2 and keys[0] not in record and keys[1] in record


def test_a_detach_is_known_by_its_request_too():
    record = started_work.StartedWork()
    assert record.key(started_work.ATTACH, "b", "req-1") == record.key(
        started_work.ATTACH, "b", "req-2")
    assert record.start(record.key(started_work.DETACH, "b", "req-1"))
    # The user's next DELETE after a failed detach is new work.
    assert record.start(record.key(started_work.DETACH, "b", "req-2"))
    assert not record.start(record.key(started_work.DETACH, "b", "req-1"))


class _Conductor:
    def __init__(self, bdms):
        self.bdms = bdms
        self.reads = 0

    def bdm_list(self, ctxt, *, instance_uuid):
        self.reads += 1
        return list(self.bdms)


class _Attacher:
    def __init__(self):
        self.done = []

    def attach(self, context, driver_instance, bdm, multiattach=None, resume=False,
               event=None):
        self.done.append(("attach", bdm.uuid, resume))

    def detach(self, context, driver_instance, bdm, attachment_id):
        self.done.append(("detach", bdm.uuid, attachment_id))


class _Reporter:
    def notify(self, *args, **kwargs):
        pass

    @contextlib.contextmanager
    def event(self, *args, **kwargs):
        yield None


@pytest.fixture
def compute():
    conf = get_conf(default_config_files=[])
    conf.set_override("host", "cmp")
    manager = compute_manager.ComputeManager(conf, driver=object(), conductor=_Conductor([]),
                                             cinder=object(), notifier=None)
    manager.attacher, manager.reporter = _Attacher(), _Reporter()
    return manager


def _ctx(request_id="req-1"):
    return vs_context.RequestContext(request_id=request_id, overwrite=False)


def _bdm(uuid="bdm-1", **values):
    return {"uuid": uuid, "volume_id": "vol-1", "attachment_id": "att-1",
            "device_name": "/dev/sdb", **values}


def test_a_second_attach_of_the_same_bdm_is_skipped(compute):
    compute.attach_volume(_ctx(), instance=INSTANCE, bdm=_bdm())
    compute.attach_volume(_ctx("req-2"), instance=INSTANCE, bdm=_bdm(), recovered=True)
    compute.attach_volume(_ctx(), instance=INSTANCE, bdm=_bdm())
    assert compute.attacher.done == [("attach", "bdm-1", False)]
    assert compute.conductor.reads == 0  # a known duplicate needs no read


def test_a_recovered_attach_works_on_the_bdm_as_it_is_now(compute):
    compute.conductor.bdms = [_bdm(device_name="/dev/sdc")]
    compute.attach_volume(_ctx(), instance=INSTANCE, bdm=_bdm(), recovered=True)
    assert compute.attacher.done == [("attach", "bdm-1", True)]
    assert compute.conductor.reads == 1


@pytest.mark.parametrize("bdms", [[], [_bdm(connection_info="{}")], [_bdm("other")]],
                         ids=["gone", "attached", "another-bdm"])
def test_a_recovered_attach_with_nothing_to_do_is_skipped(compute, bdms):
    compute.conductor.bdms = bdms
    compute.attach_volume(_ctx(), instance=INSTANCE, bdm=_bdm(), recovered=True)
    assert compute.attacher.done == []


def test_a_duplicate_detach_is_skipped_but_a_new_request_is_not(compute):
    attached = _bdm(connection_info="{}")
    compute.conductor.bdms = [attached]
    compute.detach_volume(_ctx(), instance=INSTANCE, bdm=attached, attachment_id="att-1")
    compute.detach_volume(_ctx(), instance=INSTANCE, bdm=attached, attachment_id="att-1",
                          recovered=True)
    compute.detach_volume(_ctx("req-2"), instance=INSTANCE, bdm=attached,
                          attachment_id="att-1")
    assert compute.attacher.done == [("detach", "bdm-1", "att-1")] * 2


def test_a_recovered_detach_of_a_gone_bdm_is_skipped(compute):
    compute.detach_volume(_ctx(), instance=INSTANCE, bdm=_bdm(), attachment_id="att-1",
                          recovered=True)
    assert compute.attacher.done == []
    compute.conductor.bdms = [_bdm()]
    compute.detach_volume(_ctx(), instance=INSTANCE, bdm=_bdm(), attachment_id="att-1",
                          recovered=True)
    assert compute.attacher.done == [("detach", "bdm-1", "att-1")]


def test_a_detach_whose_bdm_is_gone_is_skipped(compute):
    """A detach cast while the compute was down, which its start-up pass finished first."""
    compute.detach_volume(_ctx(), instance=INSTANCE, bdm=_bdm(connection_info="{}"),
                          attachment_id="att-1")
    assert compute.attacher.done == []
    assert compute.conductor.reads == 1
