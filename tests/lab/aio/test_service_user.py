"""The unprivileged services' setup the all-in-one offers: user, sudoers, libvirtd socket."""

import grp
import pwd
import subprocess
import uuid

import pytest

from volumesvc_aio import libvirtd, system

HELPER = ("/opt/volumesvc/bin/python -m oslo_privsep.daemon "
          "--config-file /etc/volumesvc/volumesvc.conf")


def test_the_sudoers_rules_name_each_context_and_nothing_else(tmp_path):
    text = system.privsep_sudoers("volumesvc", HELPER)
    lines = text.splitlines()
    assert lines == [
        f"volumesvc ALL=(root) NOPASSWD: {HELPER} --privsep_context {context} "
        "--privsep_sock_path *" for context in system.PRIVSEP_CONTEXTS]
    assert system.PRIVSEP_CONTEXTS == ("os_brick.privileged.default",
                                       "volumesvc.privsep.dac_override_pctxt")
    path = tmp_path / "volumesvc"
    system.write_sudoers(str(path), text)
    assert oct(path.stat().st_mode & 0o777) == "0o440"


def test_sudoers_special_characters_are_escaped_so_visudo_accepts_them(tmp_path):
    helper = "/usr/bin/env PYTHONPATH=/src/a:/src/b " + HELPER
    text = system.privsep_sudoers("volumesvc", helper)
    assert r"PYTHONPATH\=/src/a\:/src/b" in text
    system.write_sudoers(str(tmp_path / "volumesvc"), text)


def test_rules_visudo_refuses_are_not_installed(tmp_path):
    with pytest.raises(RuntimeError, match="visudo refuses"):
        system.write_sudoers(str(tmp_path / "volumesvc"), "volumesvc ALL=(root) NOPASSWD: \n")
    assert list(tmp_path.iterdir()) == []


def test_the_service_user_is_made_once_in_its_groups():
    name = f"vs{uuid.uuid4().hex[:8]}"
    group = f"vsg{uuid.uuid4().hex[:8]}"
    try:
        assert system.ensure_service_user(name, groups=(group,), home="/nonexistent") == name
        system.ensure_service_user(name, groups=(group,), home="/nonexistent")  # again: no error
        user = pwd.getpwnam(name)
        assert user.pw_uid != 0 and user.pw_shell == "/usr/sbin/nologin"
        assert grp.getgrgid(user.pw_gid).gr_name == name
        assert name in grp.getgrnam(group).gr_mem
    finally:
        system.remove_service_user(name)
        subprocess.run(["groupdel", group], capture_output=True, check=False)
    with pytest.raises(KeyError):
        pwd.getpwnam(name)


def test_libvirtd_lets_the_libvirt_group_use_its_read_write_socket(tmp_path):
    daemon = libvirtd.LibvirtDaemon(str(tmp_path))
    daemon.configure()
    settings = dict(line.split(" = ", 1) for line in
                    (tmp_path / "libvirtd.conf").read_text().splitlines()
                    if " = " in line)
    assert settings["unix_sock_group"] == f'"{system.LIBVIRT_GROUP}"'
    assert settings["unix_sock_rw_perms"] == '"0770"'
    assert settings["auth_unix_rw"] == '"none"'
