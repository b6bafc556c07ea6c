"""Connection data and host-call doubles for the volume drivers at os-brick's boundary.

Shared by the os-brick and encryption unit tests; the ``host_calls`` fixture
that installs the doubles is in this package's conftest.
"""

import copy

from os_brick.initiator.connectors import fibre_channel, iscsi, nvmeof

VOL = "5f0a7e3c-8a4e-4d53-9d1e-0c6f3b1c2a11"
GiB = 1 << 30

CONNECTIONS = {
    "iscsi": (iscsi.ISCSIConnector, {
        "target_portal": "192.0.2.20:3260", "target_lun": 1, "target_discovered": False,
        "target_iqn": "iqn.2010-10.org.openstack:volume-" + VOL, "auth_method": "CHAP",
        "auth_username": "u", "auth_password": "p"}),
    "fibre_channel": (fibre_channel.FibreChannelConnector, {
        "target_wwn": ["500a098280feeba5"], "target_lun": 2, "target_discovered": False}),
    "nvmeof": (nvmeof.NVMeOFConnector, {
        "target_nqn": "nqn.2014-08.org.example:" + VOL, "vol_uuid": VOL,
        "portals": [["192.0.2.21", 4420, "tcp"]]}),
}


class Recorder:
    """Stands in for one host-touching connector method and records its calls."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def install(self, monkeypatch, cls, name):
        recorder = self

        def method(connector, *args, **kwargs):
            # A copy: the caller adds device_path to the dict it passed afterwards.
            recorder.calls.append((connector, copy.deepcopy(args), kwargs))
            return recorder.result

        monkeypatch.setattr(cls, name, method)
        return self


def connection_info(kind, data):
    """Cinder's connection info of ``kind`` for volume ``VOL``."""
    return {"driver_volume_type": kind, "serial": VOL, "data": dict(data)}
