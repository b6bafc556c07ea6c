"""Options in [DEFAULT] shared by every volumesvc process."""

import socket

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import netutils

default_opts = [
    cfg.StrOpt(
        "host",
        default=socket.gethostname(),
        sample_default="<current_hostname>",
        help="""
Name of this node, used as the compute service's RPC server name and as the
host of its service record.

Possible values:

* A string that is unique among the compute hosts of one deployment.

Related options:

* ``[compute] driver``
"""),
    cfg.StrOpt(
        "state_path",
        default="/var/lib/volumesvc",
        help="""
Directory where volumesvc keeps its state: the SQLite database of the
single-machine setup, the embedded libvirt root and lock files.
"""),
    cfg.StrOpt(
        "instances_path",
        help="""
Directory of the servers' files on a compute host (a directory per server:
console log, config drive, an image-backed server's root disk). Unset:
``instances`` under ``state_path``. Each host's own: a live migration
writes the arriving server's files in the destination's.
"""),
    cfg.BoolOpt(
        "force_config_drive",
        default=False,
        help="""
Give every server a config drive, whether or not its boot asked for one.

A server booted with ``config_drive: true``, or from an image whose
``img_config_drive`` property is ``mandatory``, always gets one. With this
on, every server a compute builds gets one too and shows
``config_drive: "True"`` from then on; the choice is made once, at build,
so servers built before the option changed keep what they had. The drive
is an ISO 9660 image labelled ``config-2`` that holds the server's
``openstack/<version>/meta_data.json`` and ``user_data``, attached as a
read-only CD-ROM and written anew each time the domain is defined (start,
hard reboot, unshelve, rebuild). Read by the computes.
"""),
    cfg.StrOpt(
        "my_ip",
        default=netutils.get_my_ipv4(),
        sample_default="<host_ipv4>",
        help="""
IP address of this host, reported to Cinder as ``ip`` in the volume connector
(os-brick's ``get_connector_properties``), which a storage backend uses to
export a volume to this host (an iSCSI or NVMe-oF target's access list, an
NFS export).

The default is the address of the interface of the host's default route, as
with Nova; 127.0.0.1 only if the host has none.

Related options:

* ``[libvirt] volume_use_multipath``
"""),
    cfg.IntOpt(
        "report_interval",
        default=10,
        min=1,
        help="""
Seconds between two heartbeats of a service record.

Related options:

* ``service_down_time`` must be larger than this.
"""),
    cfg.StrOpt(
        "instance_name_template",
        default="instance-%08x",
        help="""
Template of a new server's ``instance_name`` (``OS-EXT-SRV-ATTR:instance_name``),
which is also its libvirt domain name (Nova's option of the same name).

Formatted with the server's database id (``%08x`` of it by default), or, when
the template names keys, with ``id`` and ``uuid`` (e.g. ``%(uuid)s``). The
domain name must be unique on the libvirt daemon: two deployments whose
computes share one daemon (two all-in-ones on one machine) need different
templates, or their first servers' domains collide. Existing servers keep
their name.
"""),
    cfg.StrOpt(
        "default_availability_zone",
        default="nova",
        help="""
Availability zone of this compute host (Nova's option of the same name).

Each compute reports it with its heartbeat, so hosts with different values
form different zones: ``os-availability-zone`` lists them, a boot that asks
for a zone is placed only on hosts of that zone, and a server shows the zone
of its host in ``OS-EXT-AZ:availability_zone``. Services other than
computes are shown in the zone ``internal``, as in Nova.
"""),
    cfg.IntOpt(
        "service_down_time",
        default=60,
        min=1,
        help="""
Maximum seconds since the last heartbeat for a service to be considered up.

Related options:

* ``report_interval``
"""),
    cfg.IntOpt(
        "long_rpc_timeout",
        default=1800,
        min=1,
        help="""
Timeout in seconds for RPC calls that are known to take long (for example the
blocking attach below microversion 2.101). ``rpc_response_timeout`` still
bounds how long a callee may stay silent: the call monitor makes the callee
send heartbeats meanwhile.
"""),
    cfg.IntOpt(
        "graceful_shutdown_timeout",
        default=60,
        min=0,
        help="Seconds a service waits for running RPC handlers when it is stopped."),
    cfg.IntOpt(
        "shelved_offload_time",
        default=0,
        min=-1,
        help="""
Seconds a shelved server keeps its host (domain defined, volumes connected)
before it is offloaded.

Only volume-backed servers can be shelved here, and for them Nova's default,
0, fits: nothing but the domain is left on the host, so it is offloaded at
once and the server goes straight to ``SHELVED_OFFLOADED``.

Possible values:

* -1: never offload by itself (``shelveOffload`` still does).
* 0: offload as part of the shelve.
* A positive number: the conductor offloads servers shelved for longer
  (checked every ``shelved_poll_interval`` seconds).

Related options:

* ``shelved_poll_interval``
"""),
    cfg.IntOpt(
        "shelved_poll_interval",
        default=3600,
        min=0,
        help="""
Seconds between two runs of the conductor task that offloads servers shelved
for longer than ``shelved_offload_time``; 0 turns the task off.

Related options:

* ``shelved_offload_time`` (the task offloads nothing unless it is positive)
"""),
    cfg.BoolOpt(
        "allow_resize_to_same_host",
        default=False,
        help="""
Whether a resize may choose the server's own host as its destination.

As Nova: off by default, so a resize always moves the server; turn it on
for a deployment with a single compute. A cold migration (``migrate``)
never stays on its host.
"""),
    cfg.IntOpt(
        "resize_confirm_window",
        default=0,
        min=0,
        help="""
Seconds after which a resized or cold-migrated server that nobody
confirmed or reverted is confirmed by itself (0: never).

The conductor looks for such servers every ``resize_confirm_poll_interval``
seconds. Until the confirm the server holds room on both hosts.

Related options:

* ``resize_confirm_poll_interval``
"""),
    cfg.IntOpt(
        "resize_confirm_poll_interval",
        default=60,
        min=0,
        help="""
Seconds between two runs of the conductor task that confirms the resizes
older than ``resize_confirm_window``; 0 turns the task off.
"""),
    cfg.StrOpt(
        "running_deleted_instance_action",
        default="reap",
        choices=[
            ("noop", "do nothing"),
            ("log", "log a warning for each such domain"),
            ("shutdown", "power the domain off and keep its definition"),
            ("reap", "destroy and undefine the domain and release what it held"),
        ],
        help="""
What a compute does with a domain still running on its host for a server
the database says is deleted (Nova's option of the same name).

That happens when the conductor deleted a server locally because its
compute looked down (no heartbeat for ``service_down_time``) while the
compute was in fact alive, only starved or cut off: the record and the
Cinder attachments went, the QEMU domain kept running and keeps its volumes
open. ``reap`` stops and undefines the domain, drops the host side of the
server's volume connections that no other server of this host uses,
deletes its delete-on-termination volumes that are ``available`` and
removes its instance directory. A domain whose server the database does
not know, or says lives on another host, is never touched.

Related options:

* ``running_deleted_instance_poll_interval``
* ``running_deleted_instance_timeout``
"""),
    cfg.IntOpt(
        "running_deleted_instance_poll_interval",
        default=1800,
        min=0,
        help="""
Seconds between two runs of the compute's check for domains of deleted
servers (Nova's option of the same name); 0 turns the check off. The first
run comes one interval after the compute started.

Related options:

* ``running_deleted_instance_action``
"""),
    cfg.IntOpt(
        "running_deleted_instance_timeout",
        default=0,
        min=0,
        help="""
Seconds a server must have been deleted before its still running domain is
acted on (Nova's option of the same name). 0 acts on it at the first check.

Related options:

* ``running_deleted_instance_action``
"""),
    cfg.IntOpt(
        "malloc_arena_max",
        default=2,
        min=0,
        help="""
Most malloc arenas (glibc ``M_ARENA_MAX``) a volumesvc process may use, set
at start before any thread runs.

glibc gives threads that allocate at the same time arenas of their own, up
to 8 per core, and each keeps memory it has freed. Our processes run many
threads that mostly wait on RabbitMQ, Cinder or the database, so the extra
arenas cost memory and buy nothing: with 2 the compute of the attach storm
benchmark used 68 MB instead of 85 (benchmarks/README.md).

Possible values:

* 0: leave glibc's default (or the ``MALLOC_ARENA_MAX`` environment variable).
* A positive number of arenas.
"""),
]


def register_opts(conf):
    conf.register_opts(default_opts)
    logging.register_options(conf)


def list_opts():
    return [("DEFAULT", default_opts)]
