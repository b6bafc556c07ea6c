"""The unmodified openstack CLI on the server update, metadata, tag, lock and reset-state routes.

Issue 24's "done when" for this part, against the all-in-one (noauth2): ``server
set --name/--property/--tag/--description/--hostname``, ``server show`` with them, ``server
list --tags``, ``server lock --reason``/``unlock`` (a member of the project is
refused a reboot while it is locked), and ``server set --state error`` as an admin.
"""

import subprocess

from tests.integration.clients.helpers import (
    osc_argv,
    osc_env,
    unique,
    volume_backed_server,
    wait_server,
)

MEMBER_TOKEN = "demo:admin"  # a member (not admin) of the all-in-one's admin project


def _osc_as(aio, token, *args):
    return subprocess.run([*osc_argv(aio, token=token), *args], env=osc_env(aio),
                          capture_output=True, text=True, timeout=120)


def _properties(shown):
    """OSC prints properties as a dict (newer) or as ``k='v'`` text (older)."""
    value = shown.get("properties")
    return value if isinstance(value, dict) else str(value)


def test_server_set_show_lock_and_reset_state(aio, nova, osc):
    with volume_backed_server(aio, nova, "set") as server:
        new_name = unique("renamed")
        fqdn = "db-1." + "example." * 10 + "org"   # longer than 63: a 2.94 FQDN
        osc("server", "set", "--name", new_name, "--property", "role=db", "--tag", "blue",
            "--description", "database", "--hostname", fqdn, server.id, json_out=False)
        shown = osc("server", "show", server.id)
        assert shown["name"] == new_name
        assert "role" in _properties(shown) and "db" in str(_properties(shown))
        assert shown["tags"] == ["blue"]
        assert shown["description"] == "database"
        assert nova.servers.get(server.id)._info["OS-EXT-SRV-ATTR:hostname"] == fqdn
        listed = osc("server", "list", "--tags", "blue")
        assert [s["ID"] for s in listed] == [server.id]
        assert server.id not in [s["ID"] for s in osc("server", "list", "--not-tags", "blue")]

        osc("server", "lock", "--reason", "maintenance", server.id, json_out=False)
        shown = osc("server", "show", server.id)
        assert shown["locked"] is True
        assert shown["locked_reason"] == "maintenance"
        refused = _osc_as(aio, MEMBER_TOKEN, "server", "reboot", server.id)
        assert refused.returncode != 0
        assert "locked" in refused.stderr.lower(), refused.stderr
        osc("server", "unlock", server.id, json_out=False)
        assert osc("server", "show", server.id)["locked"] is False
        allowed = _osc_as(aio, MEMBER_TOKEN, "server", "set", "--property", "by=member",
                          server.id)
        assert allowed.returncode == 0, allowed.stderr

        osc("server", "set", "--state", "error", "--auto-approve", server.id, json_out=False)
        assert osc("server", "show", server.id)["status"] == "ERROR"
        osc("server", "set", "--state", "active", "--auto-approve", server.id,
            json_out=False)
        wait_server(nova, server.id, aio=aio)
        osc("server", "unset", "--property", "role", "--tag", "blue", server.id,
            json_out=False)
        shown = osc("server", "show", server.id)
        assert "role" not in str(_properties(shown)) and shown["tags"] == []
