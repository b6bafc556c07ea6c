"""The database servers of the cluster deployment's own.

The machine's PostgreSQL on 5432 and MariaDB on 3306 are shared with other
tests; the cluster's database restart fault must not touch them, so the
cluster runs its own server (a data directory in the state dir) on another
port and on the bridge address only, trusting the deployment's private
subnet. volumesvc's database is PostgreSQL or MariaDB (``--database``);
Cinder's and Glance's stay on a PostgreSQL server.
"""

import glob
import ipaddress
import os
import subprocess
import urllib.parse


def _bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL's server programs are missing "
                           "(apt-get install postgresql)")
    return os.path.dirname(found[-1])


class _Server:
    """Where a server of the deployment keeps its data and listens; ``name`` names its process."""

    NAME = ""

    def __init__(self, state_dir, address, port, subnet, max_connections=400, name=None):
        self.name = name or self.NAME
        self.data_dir = os.path.join(state_dir, self.name)
        self.address = address
        self.port = port
        self.subnet = subnet
        self.max_connections = max_connections


class PostgresServer(_Server):
    """``initdb`` once, then ``postgres`` in the foreground as user postgres.

    ``authority`` (a :class:`volumesvc_aio.tls.Authority`): ``ssl = on``
    with a certificate of that CA, and ``hostssl`` the only TCP entry of
    ``pg_hba.conf``, so a client without TLS is refused; the URLs then ask
    libpq to verify the server (``sslmode=verify-full`` with the CA).
    """

    NAME = "postgresql"

    def __init__(self, *args, authority=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.authority = authority
        self.tls_files = None

    def url(self, database):
        url = f"postgresql+psycopg2://postgres@{self.address}:{self.port}/{database}"
        if self.authority is None:
            return url
        query = urllib.parse.urlencode({"sslmode": "verify-full",
                                        "sslrootcert": self.authority.ca_file})
        return f"{url}?{query}"

    def _as_postgres(self, argv):
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]

    def configure(self):
        if not os.path.exists(os.path.join(self.data_dir, "PG_VERSION")):
            os.makedirs(self.data_dir, exist_ok=True)
            subprocess.run(["chown", "postgres:postgres", self.data_dir], check=True)
            subprocess.run(self._as_postgres([os.path.join(_bindir(), "initdb"), "-D",
                                              self.data_dir, "-U", "postgres", "--auth=trust",
                                              "-E", "UTF8"]),
                           check=True, capture_output=True, timeout=300, cwd="/")
        # Every start: a restarted deployment has a new CA.
        entry = "host"
        if self.authority is not None:
            from volumesvc_aio import tls

            cert, key = self.authority.issue(self.name, ip=self.address)
            self.tls_files = tls.own_copy("postgres", os.path.join(self.data_dir, "tls"),
                                          cert, key)
            entry = "hostssl"
        with open(os.path.join(self.data_dir, "pg_hba.conf"), "w") as f:
            f.write(f"local all all trust\n{entry} all all {self.subnet} trust\n")

    def argv(self):
        ssl = []
        if self.tls_files is not None:
            cert, key = self.tls_files
            ssl = ["-c", "ssl=on", "-c", f"ssl_cert_file={cert}", "-c", f"ssl_key_file={key}"]
        return self._as_postgres([
            os.path.join(_bindir(), "postgres"), "-D", self.data_dir, "-p", str(self.port),
            "-c", f"listen_addresses={self.address}",
            "-c", f"unix_socket_directories={self.data_dir}",
            "-c", f"max_connections={self.max_connections}",
            "-c", "fsync=off", "-c", "synchronous_commit=off", *ssl])

    def create_database(self, name, *, fresh=False):
        import sqlalchemy as sa

        engine = sa.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                if fresh:
                    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                exists = conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"),
                                      {"n": name}).first()
                if not exists:
                    conn.execute(sa.text(f"CREATE DATABASE {name}"))
        finally:
            engine.dispose()
        return self.url(name)


class MariaDBServer(_Server):
    """``mariadb-install-db`` once, then ``mariadbd`` in the foreground as user mysql.

    ``--no-defaults`` everywhere: the machine's ``/etc/mysql`` configures
    its own server (socket, port, datadir), none of which this one may
    share. Clients come over TCP from the subnet as a user of their own
    without a password, the same trust the PostgreSQL server gives.
    """

    NAME = "mariadb"
    USER = "volumesvc"

    @property
    def socket(self):
        return os.path.join(self.data_dir, "mariadbd.sock")

    def url(self, database):
        return (f"mysql+pymysql://{self.USER}@{self.address}:{self.port}/{database}"
                "?charset=utf8mb4")

    def _as_mysql(self, argv):
        return ["setpriv", "--reuid=mysql", "--regid=mysql", "--init-groups", *argv]

    def configure(self):
        if os.path.isdir(os.path.join(self.data_dir, "mysql")):
            return
        os.makedirs(self.data_dir, exist_ok=True)
        subprocess.run(["chown", "mysql:mysql", self.data_dir], check=True)
        # "normal" root authentication: root@localhost over this server's
        # socket without a password (Debian's default is unix_socket, which
        # would tie the bootstrap below to the caller's user name).
        subprocess.run(self._as_mysql(["mariadb-install-db", "--no-defaults",
                                       f"--datadir={self.data_dir}", "--skip-test-db",
                                       "--auth-root-authentication-method=normal"]),
                       check=True, capture_output=True, timeout=300, cwd="/")

    def argv(self):
        return self._as_mysql([
            "/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.data_dir}",
            f"--port={self.port}", f"--bind-address={self.address}",
            f"--socket={self.socket}", f"--pid-file={self.data_dir}/mariadbd.pid",
            f"--max-connections={self.max_connections}", "--skip-name-resolve",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
            # The PostgreSQL server's fsync=off: a test deployment trades
            # durability on a machine crash for speed, not on a restart.
            "--innodb-flush-log-at-trx-commit=2", "--innodb-doublewrite=0",
            "--innodb-buffer-pool-size=128M"])

    def _host_pattern(self):
        net = ipaddress.ip_network(self.subnet)
        return f"{net.network_address}/{net.netmask}"

    def create_database(self, name, *, fresh=False):
        """The database and the subnet's user of it, over the server's own socket."""
        import pymysql

        conn = pymysql.connect(unix_socket=self.socket, user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                if fresh:
                    cur.execute(f"DROP DATABASE IF EXISTS {name}")
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {name} CHARACTER SET utf8mb4")
                host = self._host_pattern()
                cur.execute(f"CREATE USER IF NOT EXISTS '{self.USER}'@'{host}'")
                cur.execute(f"GRANT ALL PRIVILEGES ON {name}.* TO '{self.USER}'@'{host}'")
        finally:
            conn.close()
        return self.url(name)


def server_for(database, state_dir, address, port, subnet):
    """volumesvc's database server of the kind ``--database`` names."""
    if database == "postgresql":
        return PostgresServer(state_dir, address, port, subnet)
    if database == "mariadb":
        return MariaDBServer(state_dir, address, port, subnet)
    raise ValueError(f"unknown database {database!r} (postgresql or mariadb)")
