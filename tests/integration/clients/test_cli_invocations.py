"""The command lines an operator types against the all-in-one (README material)."""

import os
import shlex
import subprocess

import pytest

from tests.integration.clients.helpers import osc_argv, osc_env
from tests.integration.conftest import bin_path


def _printed_invocations(aio):
    """The ``openstack``/``nova`` lines volumesvc-aio prints after its ready line.

    Returns {client: (env assignments, argv)}: a line may start with
    ``NAME=value`` words, as a shell reads them.
    """
    with open(aio.out_path) as f:
        text = f.read().replace("\\\n", " ")
    commands = {}
    for line in text.splitlines():
        words = shlex.split(line.strip()) if line.startswith("  ") else []
        assignments = {}
        while words and "=" in words[0] and not words[0].startswith("-"):
            name, value = words.pop(0).split("=", 1)
            assignments[name] = value
        if words and words[0] in ("openstack", "nova"):
            commands[words[0]] = (assignments, words)
    assert set(commands) == {"openstack", "nova"}, text
    return commands


def _run(argv, env=None):
    exe = bin_path(argv[0])
    result = subprocess.run([exe if os.path.exists(exe) else argv[0], *argv[1:]],
                            env=env, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def test_osc_and_nova_cli_with_an_endpoint_and_a_static_token(aio):
    """What works unmodified (see the conftest docstring for why each extra is needed)."""
    rc, out = _run([*osc_argv(aio), "server", "list", "-f", "json"], env=osc_env(aio))
    assert rc == 0, out
    rc, out = _run([*osc_argv(aio), "flavor", "list", "-f", "value", "-c", "ID", "-c", "Name"],
                   env=osc_env(aio))
    assert rc == 0 and "42 m1.nano" in out.splitlines(), out

    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    # novaclient's shell wants a project and an auth URL even for admin_token, and only
    # takes them from the environment when --os-auth-type admin_token is given.
    env.update(OS_PROJECT_ID="admin", OS_AUTH_URL=aio.compute_url)
    nova = ["nova", "--os-auth-type", "admin_token", "--os-endpoint", aio.compute_url,
            "--os-token", "admin:admin", "--os-compute-api-version", "2.96"]
    rc, out = _run([*nova, "flavor-show", "42"], env=env)
    assert rc == 0 and "m1.nano" in out, out
    rc, out = _run([*nova, "list"], env=env)
    assert rc == 0, out


@pytest.mark.parametrize("client", ["openstack", "nova"])
def test_the_invocations_volumesvc_aio_prints_work_as_printed(aio, client):
    """Regression: the printed lines failed (OSC wanted identity v3, nova a project)."""
    assignments, argv = _printed_invocations(aio)[client]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(assignments)
    rc, out = _run(argv, env=env)
    assert rc == 0, f"{shlex.join(argv)}\n{out}"


def test_osc_flavor_show(aio):
    """Regression: GET /flavors/{id}/os-extra_specs was missing, so this failed (404)."""
    rc, out = _run([*osc_argv(aio), "flavor", "show", "42", "-f", "value", "-c", "name"],
                   env=osc_env(aio))
    assert (rc, out.strip()) == (0, "m1.nano"), out
