"""A real S3 server for tests: one-node Ceph (one monitor, one OSD on the
in-memory memstore) with radosgw on loopback, in a fresh temporary folder,
on free ports. Debian's ceph-mon, ceph-osd, radosgw (scripts/deps.sh).
Starts in about 15 s here (measured: mon + osd 5 s, radosgw answering 14 s);
stop() kills what it started, by pid, and removes the folder.

    with S3Server() as s3:          # or s3 = S3Server(); s3.start() ... s3.stop()
        env = s3.env(bucket="b")    # LLMBOX_S3_* for llmbox

As a script (as root): `python3 tests/lib/s3_server.py` starts one, prints
its LLMBOX_S3_* lines and waits; Ctrl-C or SIGTERM stops it. Python stdlib
only.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import free_port  # noqa: E402

NEEDS = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph", "ceph-authtool", "monmaptool")
ACCESS_KEY = "llmboxtest"
SECRET_KEY = "llmbox-test-secret-" + "0" * 20


def missing():
    """The programs not installed (empty when the server can start)."""
    return [p for p in NEEDS if not shutil.which(p)]


class S3Server:
    def __init__(self, memstore_mb=512, host="127.0.0.1"):
        # host: where radosgw listens (scripts/cluster.sh: its bridge
        # address, for the nodes' network namespaces); the monitor stays
        # on loopback
        self.host = host
        self.dir = None
        self.memstore_mb = memstore_mb
        self.mon_port = None
        self.port = None
        self.started_s = None
        self.pids = []

    @property
    def endpoint(self):
        return "http://%s:%d" % (self.host, self.port)

    def env(self, bucket="llmbox-test", secret=SECRET_KEY):
        return {"LLMBOX_S3_ENDPOINT": self.endpoint, "LLMBOX_S3_BUCKET": bucket,
                "LLMBOX_S3_ACCESS_KEY": ACCESS_KEY, "LLMBOX_S3_SECRET_KEY": secret,
                "LLMBOX_S3_TIMEOUT_S": "5", "LLMBOX_S3_RETRIES": "2"}

    def _conf(self):
        d = self.dir
        return f"""[global]
fsid = {uuid.uuid4()}
mon host = v2:127.0.0.1:{self.mon_port}
ms bind msgr1 = false
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
pid file = {d}/run/$name.pid
keyring = {d}/keyring
mon data = {d}/$name
osd data = {d}/$name
osd objectstore = memstore
memstore device bytes = {self.memstore_mb << 20}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
[client.rgw]
rgw frontends = beast endpoint={self.host}:{self.port}
rgw data = {d}/rgw
"""

    def _run(self, *argv):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(argv[:3]), r.returncode, r.stderr[-800:]))
        return r.stdout

    def _daemon(self, name, *argv):
        # each daemon forks itself into the background and writes its pid file
        self._run(*argv)
        pidfile = os.path.join(self.dir, "run", name + ".pid")
        for _ in range(100):
            if os.path.exists(pidfile) and open(pidfile).read().strip():
                self.pids.append(int(open(pidfile).read().strip()))
                return
            time.sleep(0.05)
        raise RuntimeError("%s wrote no pid file" % name)

    def start(self, timeout=90):
        if os.geteuid() != 0:
            raise RuntimeError("the Ceph test server runs as root")
        gone = missing()
        if gone:
            raise RuntimeError("not installed: %s (make deps)" % " ".join(gone))
        t0 = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="llmbox-s3-")
        self.mon_port, self.port = free_port(), free_port()
        d = self.dir
        for sub in ("run", "log", "rgw", "osd.0"):
            os.makedirs(os.path.join(d, sub))
        conf = os.path.join(d, "ceph.conf")
        with open(conf, "w") as f:
            f.write(self._conf())
        c = ["-c", conf]
        kr = os.path.join(d, "keyring")
        self._run("ceph-authtool", "-C", kr, "-n", "mon.", "--gen-key", "--cap", "mon", "allow *")
        self._run("ceph-authtool", kr, "-n", "client.admin", "--gen-key", "--cap", "mon", "allow *",
                  "--cap", "osd", "allow *", "--cap", "mgr", "allow *")
        self._run("ceph-authtool", kr, "-n", "osd.0", "--gen-key", "--cap", "mon", "allow profile osd",
                  "--cap", "osd", "allow *")
        self._run("ceph-authtool", kr, "-n", "client.rgw", "--gen-key", "--cap", "mon", "allow rw",
                  "--cap", "osd", "allow rwx")
        monmap = os.path.join(d, "monmap")
        fsid = open(conf).read().split("fsid = ", 1)[1].split("\n", 1)[0]
        self._run("monmaptool", "--create", "--add", "a", "v2:127.0.0.1:%d" % self.mon_port, "--fsid", fsid, monmap)
        self._run("ceph-mon", *c, "-i", "a", "--mkfs", "--monmap", monmap, "--keyring", kr)
        self._daemon("mon.a", "ceph-mon", *c, "-i", "a")
        self._run("ceph", *c, "osd", "create")
        self._run("ceph-osd", *c, "-i", "0", "--mkfs")
        self._run("ceph", *c, "osd", "crush", "add", "osd.0", "1.0", "host=localhost", "root=default")
        self._daemon("osd.0", "ceph-osd", *c, "-i", "0")
        self._daemon("client.rgw", "radosgw", *c, "-n", "client.rgw")
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError("radosgw did not answer within %d s (log: %s/log)" % (timeout, d))
                time.sleep(0.25)
        self._run("radosgw-admin", *c, "user", "create", "--uid=llmbox", "--display-name=llmbox",
                  "--access-key=" + ACCESS_KEY, "--secret-key=" + SECRET_KEY)
        self.started_s = time.monotonic() - t0
        return self

    def stop(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(_alive(p) for p in self.pids):
                time.sleep(0.1)
        self.pids = [p for p in self.pids if _alive(p)]
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def kill_gateway(self):
        """Stops radosgw only (the store down); start_gateway() brings it back."""
        pid = self.pids.pop()
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.05)

    def start_gateway(self):
        conf = os.path.join(self.dir, "ceph.conf")
        os.unlink(os.path.join(self.dir, "run", "client.rgw.pid"))
        self._daemon("client.rgw", "radosgw", "-c", conf, "-n", "client.rgw")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("radosgw did not come back")

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of ours is gone for our purposes
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    # an optional argument: the address radosgw listens on (scripts/cluster.sh)
    s3 = S3Server(host=sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1")
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        s3.start()
        for k, v in s3.env().items():
            print("%s=%s" % (k, v))
        print("# started in %.1f s; Ctrl-C stops it" % s3.started_s, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        s3.stop()
