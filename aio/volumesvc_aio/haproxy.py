"""HAProxy in front of several volumesvc-api nodes (the cluster deployment).

The load balancer asks every node's ``/healthcheck`` each second and takes
a node out after two failed checks, so a killed API node or one drained
with its disable file stops getting requests within about two seconds;
requests already sent to a node that dies fail with the connection (the
client sees a 502/503 or a reset, never a silent loss).

With ``tls``, HAProxy ends the clients' TLS and opens its own to each node,
verifying the node's certificate against the deployment's CA: the requests
stay HTTP inside HAProxy (its JSON error pages, ``X-Forwarded-For``,
health checks on ``/healthcheck``) and are encrypted on both links.
"""

import os
import textwrap

# HAProxy's own answers, as Nova-style JSON faults so API clients can parse
# them like any other error.
ERRORS = {
    502: ("Bad Gateway", "The API node serving this request went away before it answered; "
          "the request may or may not have been carried out: look before retrying."),
    503: ("Service Unavailable", "No API node is available; retry later."),
    504: ("Gateway Timeout", "The API node did not answer in time; the request may or may "
          "not have been carried out: look before retrying."),
}


def _error_files(directory):
    """One raw HTTP response file per status in ERRORS; returns the ``errorfile`` lines."""
    import json

    os.makedirs(directory, exist_ok=True)
    lines = []
    for code, (reason, message) in ERRORS.items():
        body = json.dumps({"computeFault": {"code": code, "message": message}})
        path = os.path.join(directory, f"{code}.http")
        with open(path, "w") as f:
            f.write(f"HTTP/1.0 {code} {reason}\r\nCache-Control: no-cache\r\n"
                    f"Connection: close\r\nContent-Type: application/json\r\n\r\n{body}\n")
        lines.append(f"    errorfile {code} {path}")
    return "\n".join(lines)


def write_config(path, *, bind, backends, check_interval_ms=1000, tls=None):
    """``haproxy.cfg`` balancing ``bind`` (host:port) over ``backends`` [(name, host:port)].

    ``tls``: (the PEM file with HAProxy's certificate and key, the CA file
    the nodes' certificates are checked against): HTTPS on ``bind`` and to
    every node.
    """
    errors = _error_files(os.path.join(os.path.dirname(path), "haproxy-errors"))
    to_node = listen = ""
    if tls is not None:
        pem, ca_file = tls
        listen = f" ssl crt {pem}"
        to_node = f" ssl verify required ca-file {ca_file}"
    servers = "\n".join(
        f"    server {name} {address}{to_node} check inter {check_interval_ms} fall 2 rise 2"
        for name, address in backends)
    text = textwrap.dedent("""\
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
        """) + errors + textwrap.dedent(f"""

        frontend volumesvc_api
            bind {bind}{listen}
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

