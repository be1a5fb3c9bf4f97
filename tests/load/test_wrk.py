"""The API and a download under wrk, with a plain nginx serving the same
bytes statically as the peer, in the same run.

What an operator relies on: under many clients at once (wrk, 64
connections) GET /api/tasks/{id} and an artifact download (through the
API route with X-Accel-Redirect, and through its signed link) answer
every request with 200 and the right bytes: no error, no 502, no timeout. The throughput and its ratio to the peer are printed (bench/web.py
is the benchmark with targets; here timings are reported, never asserted).

Size: LLMBOX_LOAD_WRK_S seconds per run (default 3, `make load`: 10).
"""
import hashlib
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402
import load  # noqa: E402

SECS = int(os.environ.get("LLMBOX_LOAD_WRK_S", "3"))
CONNS = 64
ART = "report/data.bin"
ART_SIZE = 256 * 1024


def say(fmt, *a):
    print("  " + (fmt % a if a else fmt), flush=True)


def main():
    r = Reporter()
    if os.geteuid() != 0:
        print("SKIP load_wrk: needs root (sandboxd)")
        return r.done()
    if not image_ready():
        print("SKIP load_wrk: the sandbox image is not built (make image)")
        return r.done()
    if not shutil.which("wrk"):
        print("SKIP load_wrk: wrk is not installed (make deps installs it)")
        return r.done()
    load.raise_nofile(65536)
    cmd = "mkdir -p /testbed/output/report && head -c %d /dev/urandom > /testbed/output/%s" % (ART_SIZE, ART)
    s = Stack(scenario=load.per_conversation(load.bash_steps(1, cmd)), model_log=False,
              env={"LLMBOX_WEB_THREADS": str(CONNS + 8)})
    s.start()
    peer = load.PlainNginx()
    st = {}
    try:
        def setup():
            code, t = s.create_task("[wrk] write a file")
            assert code == 201, (code, t)
            t = s.wait_task(t["id"])
            assert t["status"] == "succeeded", t
            st["id"] = t["id"]
            st["sha"] = next(a["sha256"] for a in t["artifacts"] if a["path"] == ART)
            st["link"] = next(a.get("download_url") for a in t["artifacts"] if a["path"] == ART)
            _, _, st["task_json"] = s.request("GET", "/api/tasks/" + t["id"])
            peer.add("task.json", data=st["task_json"])
            peer.add("data.bin", src=os.path.join(s.prefix, "artifacts", t["id"], "output", ART))
            peer.start()
            say("wrk -t2 -c%d -d%ds; llmbox nginx :%d, plain nginx :%d; %s", CONNS, SECS, s.port, peer.port,
                load.machine())

        def pair(name, ours_path, peer_path):
            if "id" not in st:
                raise Skip("no task")
            ours = load.wrk("http://127.0.0.1:%d%s" % (s.port, ours_path), SECS, CONNS)
            theirs = load.wrk(peer.url(peer_path), SECS, CONNS)
            say("%s", name)
            say("  llmbox %s", load.fmt_wrk(ours))
            say("  peer   %s", load.fmt_wrk(theirs))
            say("  ratio  %.2fx the peer's requests/s", ours["rps"] / theirs["rps"])
            assert ours["requests"] > 0, "wrk made no request"
            assert ours["errors"] == 0, "%d errors of %d requests (connect %d, read %d, write %d, " \
                "non-2xx %d, timeout %d)" % (ours["errors"], ours["requests"], ours["connect"], ours["read"],
                                              ours["write"], ours["status"], ours["timeout"])

        def task_get():
            pair("GET /api/tasks/{id} (%d bytes)" % len(st.get("task_json", b"")), "/api/tasks/%s" % st.get("id"),
                 "/task.json")

        def download():
            pair("GET an artifact of %d KiB (X-Accel-Redirect)" % (ART_SIZE // 1024),
                 "/api/tasks/%s/artifacts/%s" % (st.get("id"), ART), "/data.bin")
            # the bytes are still the artifact's after the storm
            code, _, body = s.request("GET", "/api/tasks/%s/artifacts/%s" % (st["id"], ART))
            assert code == 200 and hashlib.sha256(body).hexdigest() == st["sha"], "the download changed"

        def signed_download():
            if not st.get("link"):
                raise AssertionError("the task lists no signed download link")
            pair("GET an artifact of %d KiB (signed link, nginx alone)" % (ART_SIZE // 1024), st["link"], "/data.bin")
            code, _, body = s.request("GET", st["link"])
            assert code == 200 and hashlib.sha256(body).hexdigest() == st["sha"], "the download changed"

        r.run("load_wrk_setup", setup)
        r.run("load_wrk_task_get_no_errors", task_get)
        r.run("load_wrk_download_no_errors", download)
        r.run("load_wrk_signed_download_no_errors", signed_download)
    finally:
        peer.stop()
        s.stop()
    return r.done()


if __name__ == "__main__":
    main()
