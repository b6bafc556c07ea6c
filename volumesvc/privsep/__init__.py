"""volumesvc's own privileged context: the compute's work on files it does not own.

The compute runs as an unprivileged user (``volumesvc``, in the ``libvirt``
group for ``qemu:///system``). What it may still need root for that is not
os-brick's is file access past permissions: reading a guest's console log
(virtlogd's, root's only), reading a volume's LUKS header or size where the
device or file is root's (a block device os-brick connected, a file of
Cinder's), and growing a volume's file of Cinder's when a stopped server's
volume is extended. So this context keeps one capability,
``CAP_DAC_OVERRIDE`` (file permissions do not apply), and no other: no
``exec`` (it runs no program), no mounts, no ownership changes. os-brick's
connections keep their own context (``[privsep_osbrick]``,
``volumesvc/virt/libvirt/volume/brick.py``).

oslo.privsep finds its context by import path in the daemon and reads its
settings from the library's global configuration only; :func:`setup` hands
it the compute's ``[privsep_volumesvc]`` values once at start, as brick.py
does for os-brick. The privileged functions live in
:mod:`volumesvc.privsep.files`; each takes only arguments it validates.
"""

import os
import shlex
import sys

from oslo_config import cfg
from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

#: oslo.privsep's configuration section of this context.
GROUP = "privsep_volumesvc"
#: The most one privileged call may take (seconds): a read of a few KiB,
#: unless the storage under the device hangs; the caller's operation fails
#: then instead of waiting for ever.
CALL_TIMEOUT = 60.0

# NOTE: a module-level object because oslo.privsep requires one: the daemon
# re-imports it by ``pypath`` after sudo. Nothing else in volumesvc is global.
dac_override_pctxt = priv_context.PrivContext(
    "volumesvc",
    cfg_section=GROUP,
    pypath=__name__ + ".dac_override_pctxt",
    capabilities=[caps.CAP_DAC_OVERRIDE],
    logger_name=__name__,
    timeout=CALL_TIMEOUT,
)


def root_helper():
    """The prefix a privsep daemon is started with: none when we are root, else ``sudo``.

    As Nova without rootwrap. A compute that already runs as root needs no
    prefix (hosts of that kind often have no sudo); an unprivileged one
    needs the sudoers rule the install guide writes for each context.
    """
    return "" if os.geteuid() == 0 else "sudo"


def helper_command(conf):
    """How to start a privsep daemon when a context's ``helper_command`` is unset.

    oslo.privsep's own default names its global configuration's files,
    which volumesvc does not use; this one runs the daemon from the
    compute's own Python with the compute's config files, so the sudoers
    rule can name that exact command. oslo.privsep appends
    ``--privsep_context`` and ``--privsep_sock_path``.
    """
    cmd = shlex.split(root_helper()) + [sys.executable, "-m", "oslo_privsep.daemon"]
    for path in conf.config_file or ():
        cmd += ["--config-file", path]
    for path in conf.config_dir or ():
        cmd += ["--config-dir", path]
    return shlex.join(cmd)


def apply_settings(conf, group, opts):
    """Copy ``conf``'s ``group`` options to oslo.config's global object (process-wide).

    An empty ``helper_command`` becomes :func:`helper_command`'s.
    """
    for opt in opts:
        value = conf[group][opt.dest]
        if opt.dest == "helper_command" and not value:
            value = helper_command(conf)
        cfg.CONF.set_override(opt.dest, value, group=group)


def setup(conf):
    """Give this context the compute's ``[privsep_volumesvc]`` settings."""
    from volumesvc.conf import privsep as privsep_conf

    apply_settings(conf, GROUP, privsep_conf.volumesvc_privsep_opts)
