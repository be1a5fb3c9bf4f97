#!/usr/bin/env python3
"""Bundle benchmark: a task's .zip and .tar.gz (server/web/bundle.c) against
`zip -r` and `tar czf` of the same files, in one run.

Starts the whole service (tests/lib/stack.py) and runs one task whose bash
command writes --mb MB (default 1000, 10^6 bytes) of mixed outputs into
/testbed/output, as a media-heavy task leaves them:

  60 %  media/clip_NN.mp4    50 MB each, random bytes (incompressible, as
                             encoded video is)
  10 %  media/img_NNN.png    1 MB each, random bytes
  20 %  data/table_NN.csv    20 MB each, numeric CSV (deflates ~2.3x)
  10 %  logs/run_NNN.txt     1 MB each, log lines (deflates ~6x)

(files stay under 64 MiB: the sandbox RPC reads a file in one frame and
the agent skips bigger ones, see bench/RESULTS.md). Then, --rounds times,
alternating:

  llmbox   GET /api/tasks/{id}/bundle.zip (and .tar.gz) through nginx with
           curl, the bundle removed before each round so it is built
           again: build (walk, deflate, fsync, rename) + X-Accel download
  peer     in the task's folder: `zip -r -q` (zip's default level 6) and
           `tar czf` (gzip -6) of output/ and trajectory.json, into a file
           on the same disk, timed by wall clock; and `sync FILE` after it
           (our bundle is fsynced before it is served), shown apart

The figure is the ratio of the mean wall times, peer / llmbox (> 1: llmbox
is faster); target >= 1x. The archive sizes are printed too.

    python3 bench/bundle.py [--mb 1000] [--rounds 2] [--formats zip,tar.gz]
"""
import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack, image_ready  # noqa: E402
import load  # noqa: E402

GEN = r'''
import os, random
MB = 10 ** 6
total = int(os.environ["BUNDLE_MB"]) * MB
out = "/testbed/output"
for d in ("media", "data", "logs"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
rnd = open("/dev/urandom", "rb")

def random_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(rnd.read(n))
            left -= n

def text_file(path, size, line):
    with open(path, "w") as f:
        n, i = 0, 0
        while n < size:
            s = line(i)
            if n + len(s) > size:
                s = s[: size - n]
            f.write(s)
            n += len(s)
            i += 1

random.seed(6)
words = "alpha beta gamma delta request worker cache miss hit user session render frame audio".split()
csv_line = lambda i: "%d,2024-05-%02dT%02d:%02d:%02d,sensor_%03d,%.4f,%.4f,%d\n" % (
    i, 1 + i % 28, i % 24, i % 60, (i * 7) % 60, i % 500, random.gauss(20, 5), random.random() * 100,
    random.randint(0, 9999))
log_line = lambda i: "2024-05-01 12:%02d:%02d.%03d INFO worker-%d %s %s %s took %d ms\n" % (
    (i // 60) % 60, i % 60, i % 1000, i % 8, random.choice(words), random.choice(words),
    random.choice(words), random.randint(1, 500))
def split(share, unit):
    """(count, size): share of the total in files of about unit bytes."""
    n = max(1, round(total * share / unit))
    return n, int(total * share) // n

n, size = split(0.6, 50 * MB)
for i in range(n):
    random_file(os.path.join(out, "media", "clip_%02d.mp4" % i), size)
n, size = split(0.1, MB)
for i in range(n):
    random_file(os.path.join(out, "media", "img_%03d.png" % i), size)
n, size = split(0.2, 20 * MB)
for i in range(n):
    text_file(os.path.join(out, "data", "table_%02d.csv" % i), size, csv_line)
n, size = split(0.1, MB)
for i in range(n):
    text_file(os.path.join(out, "logs", "run_%03d.txt" % i), size, log_line)
'''


def timed(argv, cwd=None):
    t0 = time.monotonic()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def curl_get(url):
    """Wall time and size of a GET read to the end (curl -o /dev/null)."""
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total} %{size_download}",
                          url], check=True, capture_output=True, text=True).stdout.split()
    assert out[0] == "200", "GET %s: HTTP %s" % (url, out[0])
    return float(out[1]), int(out[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--formats", default="zip,tar.gz")
    a = ap.parse_args()
    if os.geteuid() != 0 or not image_ready():
        print("bundle benchmark: needs root and the sandbox image (make image); skipped")
        return 0
    print("bundle benchmark, %s" % time.strftime("%Y-%m-%d %H:%M"))
    print("machine: %s" % load.machine())
    print("command: python3 bench/bundle.py --mb %d --rounds %d --formats %s" % (a.mb, a.rounds, a.formats))
    zipv = subprocess.run(["zip", "-v"], capture_output=True, text=True).stdout.splitlines()
    tarv = subprocess.run(["tar", "--version"], capture_output=True, text=True).stdout.splitlines()
    print("peers: %s; %s; gzip level 6 both" % (
        next((l.strip() for l in zipv if l.startswith("This is Zip")), "zip"), tarv[0] if tarv else "tar"))
    mib = a.mb * 10 ** 6 / (1 << 20)
    env = {
        # room for the outputs in the sandbox (RAM-backed) and in the collection
        "LLMBOX_SANDBOX_DISK_MIB": str(int(mib) + 512),
        "LLMBOX_SANDBOX_MEMORY_MIB": str(int(mib) + 1024),
        "LLMBOX_MAX_OUTPUT_MB": str(int(mib) + 256),
        "LLMBOX_BASH_SOFT_TIMEOUT_S": "900",
        "LLMBOX_CMD_TIMEOUT_S": "900",
    }
    cmd = "BUNDLE_MB=%d python3 - <<'PYEOF'\n%sPYEOF\nfind /testbed/output -type f | wc -l; du -sb /testbed/output" % (
        a.mb, GEN)
    s = Stack(scenario=load.per_conversation(load.bash_steps(1, cmd)), env=env, model_log=False)
    s.start()
    try:
        t0 = time.monotonic()
        st, t = s.create_task("[bundle] write %d MB of mixed outputs" % a.mb)
        assert st == 201, (st, t)
        t = s.wait_task(t["id"], timeout=1800)
        assert t["status"] == "succeeded", t
        tid = t["id"]
        arts = t["artifacts"]
        size = sum(x["size"] for x in arts)
        print("task: %d artifacts, %.0f MB, made and collected in %.1f s" % (len(arts), size / 1e6,
                                                                           time.monotonic() - t0))
        assert size >= a.mb * 10 ** 6 * 0.99, "only %d bytes were collected" % size
        tdir = os.path.join(s.prefix, "artifacts", tid)
        base = "http://127.0.0.1:%d/api/tasks/%s" % (s.port, tid)
        for fmt in a.formats.split(","):
            ours, ours_dl, peer, peer_sync = [], [], [], []
            our_size = peer_size = 0
            peer_file = os.path.join(s.prefix, "peer." + fmt)
            argv = (["zip", "-r", "-q", peer_file, "output", "trajectory.json"] if fmt == "zip"
                    else ["tar", "czf", peer_file, "output", "trajectory.json"])
            for _ in range(a.rounds):
                try:
                    os.unlink(os.path.join(tdir, "bundle." + fmt))
                except FileNotFoundError:
                    pass
                secs, our_size = curl_get(base + "/bundle." + fmt)
                ours.append(secs)
                ours_dl.append(curl_get(base + "/bundle." + fmt)[0])  # built: the download alone
                if os.path.exists(peer_file):
                    os.unlink(peer_file)
                peer.append(timed(argv, cwd=tdir))
                peer_sync.append(timed(["sync", peer_file]))
                peer_size = os.path.getsize(peer_file)
            os.unlink(peer_file)
            m = lambda xs: sum(xs) / len(xs)
            ratio = m(peer) / m(ours)
            print("  .%s of %.0f MB (%d rounds, mean wall time)" % (fmt, size / 1e6, a.rounds))
            print("    llmbox  GET bundle.%-6s %7.2f s  (of which the download %.2f s)  %7.1f MB  rounds %s" % (
                fmt, m(ours), m(ours_dl), our_size / 1e6, " ".join("%.2f" % x for x in ours)))
            print("    peer    %-17s %7.2f s  (+ sync of the file %.2f s)        %7.1f MB  rounds %s" % (
                " ".join(argv[:2]), m(peer), m(peer_sync), peer_size / 1e6, " ".join("%.2f" % x for x in peer)))
            print("    ratio   %.2fx (peer time / llmbox time; with the peer's sync %.2fx)  target >= 1x: %s" % (
                ratio, (m(peer) + m(peer_sync)) / m(ours), "MET" if ratio >= 1 else "NOT MET"))
        print("load at the end: %s" % load.loadavg())
    finally:
        s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
