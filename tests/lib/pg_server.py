"""A real PostgreSQL for tests: Debian's postgresql (scripts/deps.sh), a
fresh cluster made by initdb in a temporary folder, listening only on a
unix socket in that folder (no TCP port), run as an unprivileged user
(`nobody` when the tests run as root: PostgreSQL refuses root). Starts in
about 2 s; stop() stops it (pg_ctl, then by pid) and removes the folder.

    with PgServer() as pg:              # or pg = PgServer(); pg.start() ... pg.stop()
        url = pg.url                    # postgresql://llmbox@/llmbox?host=<socket dir>
        pg.restart()                    # a server restart, the data kept
        pg.sql("SELECT 1")              # psql, as the superuser

The role `llmbox` is the cluster's superuser (trust on the socket: the
folder is the test's alone). As a script: `python3 tests/lib/pg_server.py`
starts one, prints LLMBOX_DB_URL=... and waits; Ctrl-C or SIGTERM stops it.
Python stdlib only.

PgServer(host="10.213.0.1") (as a script: `pg_server.py 10.213.0.1`, for
scripts/cluster.sh) also listens on TCP at that address, on a free port,
with a random password (scram-sha-256) for the role; url is then
postgresql://llmbox:<password>@10.213.0.1:<port>/llmbox, so clients in
other network namespaces reach it over the network, and a cut link cuts
them off. The server drops a peer that stops answering within about 10 s
(TCP keepalives and tcp_user_timeout): a cut-off client's transaction
does not hold its locks for the kernel's two hours.
"""
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = "/usr/lib/postgresql/15/bin"
NEEDS = ("initdb", "postgres", "pg_ctl", "psql")


def _bin(name):
    p = os.path.join(BIN, name)
    return p if os.path.exists(p) else shutil.which(name)


def missing():
    """The programs not installed (empty when the server can start)."""
    return [p for p in NEEDS if not _bin(p)]


class PgServer:
    def __init__(self, db="llmbox", role="llmbox", max_connections=200, host=None):
        # max_connections: several nodes stateless webs at full size (every open
        # event stream holds a web thread and its connection)
        self.max_connections = max_connections
        # host: a TCP address to listen on as well (the socket stays)
        self.host = host
        self.port = None
        self.password = None
        self.dir = None
        self.db = db
        self.role = role
        self.pid = None
        self.started_s = None
        self._user = None

    @property
    def sockdir(self):
        return os.path.join(self.dir, "sock")

    @property
    def url(self):
        if self.host:
            return "postgresql://%s:%s@%s:%d/%s" % (self.role, self.password, self.host, self.port, self.db)
        return "postgresql://%s@/%s?host=%s" % (self.role, self.db, self.sockdir)

    def _demote(self):
        if self._user is not None:
            os.setgid(self._user.pw_gid)
            os.setgroups([])
            os.setuid(self._user.pw_uid)

    def _run(self, *argv, check=True, timeout=60):
        return subprocess.run(list(argv), preexec_fn=self._demote, check=check, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, LC_ALL="C.UTF-8"))

    def start(self, timeout=30):
        t0 = time.time()
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="llmbox-pg-")
            os.chmod(self.dir, 0o755)
            self._user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
            os.makedirs(self.sockdir)
            # the socket folder: anyone may connect (the web's and the agents' user)
            os.chmod(self.sockdir, 0o777)
            if self._user is not None:
                os.chown(self.dir, self._user.pw_uid, self._user.pw_gid)
                os.chown(self.sockdir, self._user.pw_uid, self._user.pw_gid)
            self._run(_bin("initdb"), "-D", os.path.join(self.dir, "data"), "-U", self.role,
                      "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C.UTF-8")
            listen = ""
            if self.host:
                # a free port on that address (bound and released: a race
                # only with another server starting at the same moment)
                with socket.socket() as sk:
                    sk.bind((self.host, 0))
                    self.port = sk.getsockname()[1]
                self.password = secrets.token_hex(16)
                listen = self.host
                with open(os.path.join(self.dir, "data", "pg_hba.conf"), "w") as f:
                    f.write("local all all trust\nhost all all 0.0.0.0/0 scram-sha-256\n")
            with open(os.path.join(self.dir, "data", "postgresql.conf"), "a") as f:
                f.write("listen_addresses = '%s'\nunix_socket_directories = '%s'\n"
                        "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                        "max_connections = %d\nshared_buffers = 32MB\n" % (listen, self.sockdir, self.max_connections))
                if self.host:
                    f.write("port = %d\ntcp_keepalives_idle = 5\ntcp_keepalives_interval = 2\n"
                            "tcp_keepalives_count = 3\ntcp_user_timeout = 10000\n"
                            "password_encryption = 'scram-sha-256'\n" % self.port)
            created = True
        else:
            created = False
        log = os.path.join(self.dir, "postgres.log")
        if self._user is not None and not os.path.exists(log):
            open(log, "w").close()
            os.chown(log, self._user.pw_uid, self._user.pw_gid)
        out = open(log, "a")
        pr = subprocess.Popen([_bin("postgres"), "-D", os.path.join(self.dir, "data")],
                              preexec_fn=self._demote, stdout=out, stderr=subprocess.STDOUT,
                              env=dict(os.environ, LC_ALL="C.UTF-8"))
        out.close()
        self.pid = pr.pid
        self._proc = pr
        deadline = time.time() + timeout
        while True:
            r = self._run(_bin("psql"), "-h", self.sockdir, "-p", str(self.port or 5432), "-U", self.role,
                          "-d", "postgres", "-Atc", "SELECT 1", check=False)
            if r.returncode == 0:
                break
            if pr.poll() is not None or time.time() > deadline:
                raise RuntimeError("PostgreSQL did not start:\n" + open(log).read()[-3000:])
            time.sleep(0.1)
        if created:
            self.sql('CREATE DATABASE "%s"' % self.db, db="postgres")
            if self.password:
                self.sql("ALTER ROLE \"%s\" PASSWORD '%s'" % (self.role, self.password), db="postgres")
        self.started_s = time.time() - t0
        return self

    def sql(self, text, db=None):
        """Runs text with psql as the superuser; its output (unaligned)."""
        r = self._run(_bin("psql"), "-h", self.sockdir, "-p", str(self.port or 5432), "-U", self.role,
                      "-d", db or self.db,
                      "-v", "ON_ERROR_STOP=1", "-Atc", text, check=False)
        if r.returncode != 0:
            raise RuntimeError("psql %r: %s" % (text, r.stdout))
        return r.stdout

    def halt(self):
        """Stops the server (fast shutdown: clients are disconnected), keeping
        the data for start() again."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGINT)  # PostgreSQL's fast shutdown
        except ProcessLookupError:
            pass
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self._proc.wait()
        self.pid = None

    def restart(self):
        self.halt()
        return self.start()

    def stop(self):
        self.halt()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    # an optional argument: a TCP address to listen on too (scripts/cluster.sh)
    pg = PgServer(host=sys.argv[1] if len(sys.argv) > 1 else None).start()
    print("LLMBOX_DB_URL=%s" % pg.url, flush=True)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        signal.pause()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        pg.stop()
