"""`llmbox image pull` against `skopeo copy docker://... oci:DIR` of the
same image from the same registry (Debian's docker-registry on loopback),
in the same run, alternating, each into a fresh folder. The image is made
by umoci from a root filesystem of random (incompressible) files in
--layers layers of --mib MiB in all and pushed with skopeo. Prints each
tool's median and the ratio llmbox / skopeo. Python stdlib only.

    python3 bench/registry_pull.py [--mib 512] [--layers 4] [--rounds 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from stack import LLMBOX, free_port  # noqa: E402


def sh(cmd, env=None):
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="llmbox-bench-pull-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    reg = "127.0.0.1:%d" % free_port()
    conf = os.path.join(tmp, "registry.yml")
    with open(conf, "w") as f:
        f.write("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "http:\n  addr: %s\n" % (os.path.join(tmp, "storage"), reg))
    proc = subprocess.Popen(["docker-registry", "serve", conf], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen("http://%s/v2/" % reg, timeout=2).read()
                break
            except Exception:
                time.sleep(0.1)
        layout = os.path.join(tmp, "src")
        sh(["umoci", "init", "--layout", layout])
        sh(["umoci", "new", "--image", layout + ":t"])
        per = a.mib // a.layers
        for i in range(a.layers):
            root = os.path.join(tmp, "root%d" % i)
            os.makedirs(os.path.join(root, "data"))
            for j in range(per // 16 or 1):
                with open(os.path.join(root, "data", "l%d-%d" % (i, j)), "wb") as f:
                    f.write(os.urandom(16 << 20))
            sh(["umoci", "insert", "--rootless", "--image", layout + ":t", root, "/"])
            shutil.rmtree(root)
        ref = reg + "/bench/img:1"
        sh(["skopeo", "copy", "--dest-tls-verify=false", "oci:%s:t" % layout, "docker://" + ref])
        shutil.rmtree(layout)
        env = dict(os.environ, LLMBOX_HOME=tmp)
        times = {"llmbox": [], "skopeo": []}
        for r in range(a.rounds):
            for tool in ("llmbox", "skopeo"):
                out = os.path.join(tmp, "out-%s-%d" % (tool, r))
                cmd = ([LLMBOX, "image", "pull", "--quiet", ref, "--oci", out] if tool == "llmbox" else
                       ["skopeo", "copy", "--quiet", "--src-tls-verify=false", "docker://" + ref, "oci:" + out])
                t0 = time.monotonic()
                sh(cmd, env=env)
                times[tool].append(time.monotonic() - t0)
                shutil.rmtree(out)
        ml, ms = statistics.median(times["llmbox"]), statistics.median(times["skopeo"])
        print("machine: %d cores, load %s" % (os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3])))
        print("image: %d MiB in %d layers (random bytes), %d rounds, alternating" % (a.mib, a.layers, a.rounds))
        print("llmbox image pull --oci: median %.2f s  (%s)" % (ml, " ".join("%.2f" % t for t in times["llmbox"])))
        print("skopeo copy docker:// oci: median %.2f s  (%s)" % (ms, " ".join("%.2f" % t for t in times["skopeo"])))
        print("ratio llmbox / skopeo: %.2f" % (ml / ms))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
