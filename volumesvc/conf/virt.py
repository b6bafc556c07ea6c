"""Options choosing the compute driver and what it may advertise."""

import copy

from oslo_config import cfg, types

CAPABILITIES = ("supports_multiattach", "supports_extend_volume",
                "supports_tagged_attach_volume")

driver_opts = [
    cfg.StrOpt(
        "compute_driver",
        default="libvirt",
        help="""
Hypervisor driver used by volumesvc-compute.

Possible values:

* ``libvirt``: libvirt/QEMU (``volumesvc.virt.libvirt.driver``).
* ``fake``: the libvirt driver on an in-memory, pure-Python libvirt
  (``volumesvc.virt.fake``): no QEMU, for benchmarks and test deployments.
* ``package.module:Class``: a driver class outside volumesvc (a
  ``ComputeDriver`` subclass), importable by the compute through
  ``PYTHONPATH``; e.g. ``tests.fixtures.virt:SlowAttachDriver``.

Related options:

* ``[virt] disabled_capabilities``
* ``[libvirt]`` group
"""),
]

virt_group = cfg.OptGroup(
    "virt", title="Virt driver options",
    help="Options common to every compute driver.")

virt_opts = [
    cfg.ListOpt(
        "disabled_capabilities",
        default=[],
        item_type=types.String(choices=CAPABILITIES),
        help="""
Driver capabilities to turn off on this host. The driver then reports them as
False (service record, traits) and refuses the operation itself, so a host can
behave like a hypervisor without, say, multiattach support.

Possible values:

* ``supports_multiattach``: attaching or booting with a volume whose
  connection_info has ``multiattach: true`` fails with
  MultiattachNotSupportedByVirtDriver.
* ``supports_extend_volume``: extend_volume raises ExtendVolumeNotSupported.
* ``supports_tagged_attach_volume``: only reported (the API refuses tags).

Related options:

* ``[DEFAULT] compute_driver``
"""),
]


fake_opts = [
    cfg.IntOpt(
        "fake_host_memory_mb",
        default=65536,
        min=1,
        help="""
MiB of memory the ``fake`` driver's host reports (what libvirt's host info
gives on a real host); the scheduler places servers by it.
"""),
    cfg.IntOpt(
        "fake_host_vcpus",
        default=32,
        min=1,
        help="""
vCPUs the ``fake`` driver's host reports; the scheduler places servers by it.
"""),
]


def register_opts(conf):
    conf.register_opts(driver_opts)
    # NOTE: a fresh OptGroup per ConfigOpts: register_group only shallow-copies
    # the group, so a shared one would share set_override() between confs.
    conf.register_group(copy.deepcopy(virt_group))
    conf.register_opts(virt_opts, group=virt_group.name)
    conf.register_opts(fake_opts, group=virt_group.name)


def list_opts():
    return [("DEFAULT", driver_opts), (virt_group, virt_opts + fake_opts)]
