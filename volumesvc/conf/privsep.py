"""Options of the compute's privsep contexts and of os-brick (``[os_brick]``).

os-brick runs its privileged work (iscsiadm, mount, nvme, reading the
initiator name) in an oslo.privsep daemon. oslo.privsep and os-brick read
these groups from the library's global configuration only, so they are
declared here for the operator's file and the sample, and the libvirt
driver hands their values to the libraries when the compute starts
(``volumesvc/virt/libvirt/volume/brick.py``). No rootwrap is involved.

``[privsep_volumesvc]`` is the same for volumesvc's own context
(``volumesvc/privsep/``): the compute's few reads of files it may not own,
with ``CAP_DAC_OVERRIDE`` only.
"""

import copy

from os_brick import opts as os_brick_opts
from oslo_config import cfg
from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

GROUP = "privsep_osbrick"
VOLUMESVC_GROUP = "privsep_volumesvc"
BRICK_GROUP = "os_brick"

privsep_group = cfg.OptGroup(
    GROUP,
    title="os-brick's privsep daemon",
    help="""
The oslo.privsep daemon os-brick runs its privileged commands in (connecting
iSCSI, Fibre Channel, NVMe-oF and NFS volumes). When ``helper_command`` is
unset the compute starts ``privsep-helper`` with its own Python and config
files, through ``sudo`` unless it already runs as root.
""")


def _privsep_opts(capabilities, logger_name):
    opts = copy.deepcopy(priv_context.OPTS)
    for opt in opts:
        if opt.dest == "capabilities":
            # What the context asks for; its daemon keeps no other.
            opt.default = capabilities
        elif opt.dest == "logger_name":
            opt.default = logger_name
    return opts


privsep_opts = _privsep_opts([caps.CAP_SYS_ADMIN, caps.CAP_DAC_READ_SEARCH],
                             "os_brick.privileged")

volumesvc_privsep_group = cfg.OptGroup(
    VOLUMESVC_GROUP,
    title="volumesvc's privsep daemon",
    help="""
The oslo.privsep daemon the compute reaches files it may not own through:
a guest's console log written by virtlogd, the LUKS header and size of a
volume's file or block device, a volume's file grown for an extend. It
keeps ``CAP_DAC_OVERRIDE`` only and is started on the first such access
the compute's own user is refused. When
``helper_command`` is unset the compute starts ``python -m
oslo_privsep.daemon`` with its own Python and config files, through
``sudo`` unless it already runs as root (the install guide's sudoers rule
names that command).
""")
volumesvc_privsep_opts = _privsep_opts([caps.CAP_DAC_OVERRIDE], "volumesvc.privsep")

brick_group = cfg.OptGroup(
    BRICK_GROUP, title="os-brick",
    help="Options of the os-brick library the libvirt driver connects volumes with.")



def _brick_opts():
    opts = copy.deepcopy(os_brick_opts.list_opts()[0][1])
    for opt in opts:
        if opt.dest == "lock_path":
            # os_brick.setup() would copy [oslo_concurrency] lock_path, which
            # volumesvc does not use: the locks go under the state directory.
            opt.default = "$state_path/lock"
    return opts


brick_opts = _brick_opts()


def register_opts(conf):
    # NOTE: fresh OptGroups per ConfigOpts (register_group shallow-copies).
    conf.register_group(copy.deepcopy(privsep_group))
    conf.register_opts(privsep_opts, group=GROUP)
    conf.register_group(copy.deepcopy(volumesvc_privsep_group))
    conf.register_opts(volumesvc_privsep_opts, group=VOLUMESVC_GROUP)
    conf.register_group(copy.deepcopy(brick_group))
    conf.register_opts(brick_opts, group=BRICK_GROUP)


def list_opts():
    return [(privsep_group, privsep_opts),
            (volumesvc_privsep_group, volumesvc_privsep_opts),
            (brick_group, brick_opts)]
