"""The S3 client's error paths (server/common/s3.c) against a loopback fake
S3 server: retries on 5xx with backoff, no retry on 4xx, the error codes
and sentences, truncated downloads leaving nothing, caps, pagination of
lists, malformed list answers, ranges. Driven through `llmbox blob`, the
same lb_blob_* calls the service makes. The real server's behaviour is
tests/integration/test_blobstore_s3.py. Python stdlib only."""
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter  # noqa: E402


class Fake(http.server.BaseHTTPRequestHandler):
    """Answers from Fake.script: a list of (status, headers, body) taken in
    order for every request (the last one repeats); records requests."""
    script = []
    seen = []
    objects = {}

    def log_message(self, *a):
        pass

    def _answer(self):
        Fake.seen.append((self.command, self.path, dict(self.headers)))
        n = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(n) if n else b""
        step = Fake.script.pop(0) if len(Fake.script) > 1 else Fake.script[0]
        if callable(step):
            step = step(self, body_in)
        status, headers, body = step
        if status == "drop":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nshort")
            self.close_connection = True
            return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_HEAD = do_DELETE = _answer


def err(code, status):
    return (status, {}, ('<?xml version="1.0"?><Error><Code>%s</Code></Error>' % code).encode())


def listing(keys, token=None):
    items = "".join("<Contents><Key>%s</Key><Size>%d</Size></Contents>" % (k, s) for k, s in keys)
    tail = ("<IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken>" % token
            if token else "<IsTruncated>false</IsTruncated>")
    return (200, {}, ('<ListBucketResult xmlns="x">%s%s</ListBucketResult>' % (items, tail)).encode())


class T:
    def __init__(self, port, tmp):
        self.port, self.tmp = port, tmp

    def blob(self, *args, env=None):
        e = dict(os.environ)
        e.update({"LLMBOX_HOME": self.tmp, "LLMBOX_S3_ENDPOINT": "http://127.0.0.1:%d" % self.port,
                  "LLMBOX_S3_BUCKET": "bkt", "LLMBOX_S3_ACCESS_KEY": "AK", "LLMBOX_S3_SECRET_KEY": "SK",
                  "LLMBOX_S3_RETRIES": "2", "LLMBOX_S3_TIMEOUT_S": "2"})
        e.update(env or {})
        t0 = time.monotonic()
        r = subprocess.run([LLMBOX, "blob", *args], capture_output=True, text=True, env=e, timeout=60)
        r.seconds = time.monotonic() - t0
        return r

    def play(self, *steps):
        Fake.script = list(steps)
        Fake.seen = []

    def test_retry_5xx_then_ok(self):
        self.play(err("SlowDown", 503), err("InternalError", 500), (200, {}, b"hello"))
        dest = os.path.join(self.tmp, "out.txt")
        r = self.blob("get", "t/output/a.txt", dest)
        assert r.returncode == 0, r.stderr
        assert open(dest, "rb").read() == b"hello"
        assert len(Fake.seen) == 3, Fake.seen
        # backoff: 200 ms then 400 ms
        assert r.seconds >= 0.55, r.seconds

    def test_5xx_gives_up(self):
        self.play(err("SlowDown", 503))
        r = self.blob("head", "t/output/a.txt")
        assert r.returncode == 1
        assert "HEAD s3://bkt/t/output/a.txt: the object store answered 503" in r.stderr, r.stderr
        assert "after 3 tries" in r.stderr and "(unavailable)" in r.stderr, r.stderr
        assert len(Fake.seen) == 3

    def test_4xx_not_retried(self):
        self.play(err("SignatureDoesNotMatch", 403))
        r = self.blob("ls", "t")
        assert r.returncode == 1 and len(Fake.seen) == 1, (r.stderr, Fake.seen)
        assert "refused the credentials of access key AK (403 SignatureDoesNotMatch)" in r.stderr, r.stderr
        assert "SK" not in r.stderr
        self.play(err("NoSuchKey", 404))
        r = self.blob("get", "t/output/a.txt", os.path.join(self.tmp, "x"))
        assert "no such object (not found)" in r.stderr, r.stderr
        self.play(err("NoSuchBucket", 404))
        r = self.blob("get", "t/output/a.txt", os.path.join(self.tmp, "x"))
        assert "the bucket does not exist" in r.stderr, r.stderr

    def test_signed_and_addressed(self):
        self.play((200, {}, b""))
        src = os.path.join(self.tmp, "up.bin")
        open(src, "wb").write(b"x" * 1000)
        r = self.blob("put", "t/input/a b+é.txt", src)
        assert r.returncode == 0, r.stderr
        method, path, headers = Fake.seen[0]
        assert method == "PUT" and path == "/bkt/t/input/a%20b%2B%C3%A9.txt", path
        assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AK/"), headers
        assert "/us-east-1/s3/aws4_request" in headers["Authorization"]
        assert headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
        assert headers["Content-Length"] == "1000"

    def test_truncated_download_leaves_nothing(self):
        dest = os.path.join(self.tmp, "keep.txt")
        open(dest, "w").write("old")
        self.play(("drop", {}, b""))
        r = self.blob("get", "t/output/a.txt", dest, env={"LLMBOX_S3_RETRIES": "1"})
        assert r.returncode == 1 and "cannot reach the object store" in r.stderr, r.stderr
        assert len(Fake.seen) == 2  # a broken transfer is retried
        assert open(dest).read() == "old"
        assert [f for f in os.listdir(self.tmp) if ".s3." in f] == []

    def test_download_cap(self):
        self.play((200, {}, b"y" * 5000))
        dest = os.path.join(self.tmp, "cap.txt")
        r = self.blob("get", "t/output/a.txt", dest, env={"LLMBOX_MAX_OUTPUT_MB": "1"})
        assert r.returncode == 0, r.stderr
        # the cap itself (1 MiB) in the store layer
        self.play((200, {}, b"y" * (1 << 20 | 1)))
        r = self.blob("get", "t/output/b.txt", dest + "2", env={"LLMBOX_MAX_OUTPUT_MB": "1"})
        assert r.returncode == 1 and "larger than 1048576 bytes" in r.stderr, r.stderr
        assert not os.path.exists(dest + "2")

    def test_range(self):
        self.play((206, {"Content-Range": "bytes 2-4/10"}, b"234"))
        dest = os.path.join(self.tmp, "r.txt")
        r = self.blob("get", "t/output/a.txt", dest, "--range", "2-4")
        assert r.returncode == 0, r.stderr
        assert Fake.seen[0][2]["Range"] == "bytes=2-4"
        assert open(dest).read() == "234"
        # a server that ignores the range is not taken for a whole answer
        self.play((200, {}, b"0123456789"))
        r = self.blob("get", "t/output/a.txt", dest + "x", "--range", "2-4")
        assert r.returncode == 1 and "unexpected answer 200" in r.stderr, r.stderr
        self.play(err("InvalidRange", 416))
        r = self.blob("get", "t/output/a.txt", dest + "x", "--range", "20-")
        assert r.returncode == 1 and "the range bytes=20- is outside the object" in r.stderr, r.stderr

    def test_list_pages(self):
        self.play(listing([("t/output/a", 1), ("t/output/b&amp;c", 2)], token="tok/+=1"),
                  listing([("t/output/d", 3)]))
        r = self.blob("ls", "t/output")
        assert r.returncode == 0, r.stderr
        assert r.stdout == "1 t/output/a\n2 t/output/b&c\n3 t/output/d\n", r.stdout
        assert Fake.seen[0][1] == "/bkt?list-type=2&prefix=t%2Foutput%2F", Fake.seen[0][1]
        # the token goes back strictly encoded, parameters in canonical order
        assert Fake.seen[1][1] == "/bkt?continuation-token=tok%2F%2B%3D1&list-type=2&prefix=t%2Foutput%2F", \
            Fake.seen[1][1]

    def test_list_malformed(self):
        for body, want in ((b"<html>nope</html>", "not an object list"),
                           (b"<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
                            "has no Key or no Size"),
                           (b"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents>"
                            b"</ListBucketResult>", "unknown or invalid entity"),
                           (b"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents>"
                            b"</ListBucketResult>", "malformed size"),
                           (b"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                            "no continuation token"),
                           (b"<ListBucketResult><Contents><Key>a", "ends inside an entry")):
            self.play((200, {}, body))
            r = self.blob("ls", "t")
            assert r.returncode == 1 and want in r.stderr, (body, r.stderr)

    def test_pull_refuses_hostile_keys(self):
        for key in ("t/input/../../etc/x", "other/input/x", "t/input//x"):
            self.play(listing([(key, 1)]))
            r = self.blob("pull", "t/input", os.path.join(self.tmp, "pulled"))
            assert r.returncode == 1 and "not a clean path under t/input" in r.stderr, (key, r.stderr)
        assert not os.path.exists(os.path.join(self.tmp, "etc"))

    def test_config_errors(self):
        for env, want in (({"LLMBOX_S3_ENDPOINT": "ftp://x"}, "s3_endpoint must be http(s)://host[:port]"),
                          ({"LLMBOX_S3_ENDPOINT": "http://h/path"}, "with no path"),
                          ({"LLMBOX_S3_BUCKET": "Bad_Bucket"}, "s3_bucket must be 3 to 63"),
                          ({"LLMBOX_S3_SECRET_KEY": ""}, "s3_access_key and s3_secret_key must be too"),
                          ({"LLMBOX_S3_REGION": "a:b"}, "s3_region must be"),
                          ({"LLMBOX_S3_ADDRESSING": "dns"}, "s3_addressing must be path or virtual")):
            r = self.blob("where", env=env)
            assert r.returncode == 1 and want in r.stderr, (env, r.stderr)

    def test_unreachable(self):
        r = self.blob("head", "t/x", env={"LLMBOX_S3_ENDPOINT": "http://127.0.0.1:1", "LLMBOX_S3_RETRIES": "1"})
        assert r.returncode == 1, r.stderr
        assert "cannot reach the object store at http://127.0.0.1:1 (Couldn't connect to server) after 2 tries" \
            in r.stderr, r.stderr

    def test_local_default(self):
        Fake.seen = []
        # no s3_bucket: the local folder artifacts_dir, the same keys
        env = {"LLMBOX_S3_BUCKET": ""}
        src = os.path.join(self.tmp, "local.txt")
        open(src, "w").write("0123456789")
        assert self.blob("put", "t9/output/d/x.txt", src, env=env).returncode == 0
        assert open(os.path.join(self.tmp, "artifacts", "t9", "output", "d", "x.txt")).read() == "0123456789"
        r = self.blob("get", "t9/output/d/x.txt", src + ".r", "--range", "3-5", env=env)
        assert r.returncode == 0 and open(src + ".r").read() == "345", r.stderr
        r = self.blob("ls", "t9", env=env)
        assert r.stdout == "10 t9/output/d/x.txt\n", r.stdout
        r = self.blob("put", "../x", src, env=env)
        assert r.returncode == 1 and "is not a clean relative key" in r.stderr, r.stderr
        r = self.blob("get", "t9/output/d/x.txt", src + ".r", "--range", "10-", env=env)
        assert r.returncode == 1 and "outside the object" in r.stderr, r.stderr
        assert Fake.seen == []


def main():
    Fake.script = [(500, {}, b"")]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    rep = Reporter()
    with tempfile.TemporaryDirectory(prefix="llmbox-s3c-") as tmp:
        t = T(srv.server_address[1], tmp)
        for name in sorted(n for n in dir(T) if n.startswith("test_")):
            rep.run(name, getattr(t, name))
    srv.shutdown()
    rep.done()


if __name__ == "__main__":
    main()
