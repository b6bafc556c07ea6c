"""Options in [wsgi]: TLS of the API's own listening socket (gunicorn)."""

import copy

from oslo_config import cfg

wsgi_group = cfg.OptGroup(
    "wsgi",
    title="API server TLS",
    help="""
TLS of the socket ``volumesvc-api`` listens on. Leave unset when a proxy in
front of the API ends TLS (doc/source/install/tls.rst).
""")

wsgi_opts = [
    cfg.StrOpt(
        "ssl_cert_file",
        help="""
PEM file with the API's certificate (and the intermediate certificates a
client needs, after it). Set with ``ssl_key_file`` to serve HTTPS; the links
in the API's answers then say ``https``.

Related options:

* ``ssl_key_file``
"""),
    cfg.StrOpt(
        "ssl_key_file",
        help="""
PEM file with the private key of ``ssl_cert_file``. Readable by the API's
user only.
"""),
    cfg.StrOpt(
        "ssl_ca_file",
        help="""
PEM file of the certificate authorities whose client certificates are
accepted. When set, a client must present a certificate signed by one of
them (mutual TLS); unset, any client may connect (and authenticates with
its token as over plain HTTP).
"""),
]


def register_opts(conf):
    group = copy.deepcopy(wsgi_group)
    conf.register_group(group)
    conf.register_opts(wsgi_opts, group=group)


def list_opts():
    return [(wsgi_group, wsgi_opts)]
