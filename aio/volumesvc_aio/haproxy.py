"""HAProxy in front of several volumesvc-api nodes (the cluster deployment).

The load balancer asks every node's ``/healthcheck`` each second and takes
a node out after two failed checks, so a killed API node or one drained
with its disable file stops getting requests within about two seconds;
requests already sent to a node that dies fail with the connection (the
client sees a 502/503 or a reset, never a silent loss).
"""

import os
import textwrap


def write_config(path, *, bind, backends, check_interval_ms=1000):
    """``haproxy.cfg`` balancing ``bind`` (host:port) over ``backends`` [(name, host:port)]."""
    servers = "\n".join(
        f"    server {name} {address} check inter {check_interval_ms} fall 2 rise 2"
        for name, address in backends)
    text = textwrap.dedent(f"""\
        global
            maxconn 2000

        defaults
            mode http
            timeout connect 5s
            timeout client 300s
            timeout server 300s
            option forwardfor
            retries 2
            option redispatch

        frontend volumesvc_api
            bind {bind}
            default_backend volumesvc_api_nodes

        backend volumesvc_api_nodes
            balance roundrobin
            option httpchk GET /healthcheck
            http-check expect status 200
        """) + servers + "\n"
    with open(path, "w") as f:
        f.write(text)
    return path


def argv(config_path):
    """HAProxy in the foreground (its process group is what the cluster stops)."""
    return ["haproxy", "-db", "-f", config_path]


def pid_dir(state_dir):
    return os.path.join(state_dir, "haproxy")
