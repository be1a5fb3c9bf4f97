#!/usr/bin/env python3
"""The privilege boundary as built: sandboxd is build/llmbox-sandboxd, an
executable of its own that maps no HTTP, archive, MIME, database or crypto
library, and build/llmbox holds none of its root-only code (python3 stdlib
only; the running-daemon checks need root and the image).

    python3 tests/integration/test_sandboxd_binary.py   (from the repo root)

Checks:
  - `ldd build/llmbox-sandboxd` lists only libc, libseccomp, cJSON, libinih
    (and the loader and vdso); none of the libraries of the web and agent;
  - no function defined in server/sandboxd/ is in build/llmbox (its symbol
    table: the objects are built with -g and not stripped);
  - `llmbox sandboxd` still starts the daemon (it execs llmbox-sandboxd, same
    pid), whose /proc/PID/maps shows the same few libraries, and a sandbox
    made through it runs a command;
  - `llmbox image list` runs through llmbox-sandboxd too.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sandbox_rpc import BIN, REPO, Daemon, Reporter, skip_reason  # noqa: E402

BUILD = os.path.join(REPO, os.environ.get("BUILD", "build"))
SD_BIN = os.path.join(os.path.dirname(BIN), "llmbox-sandboxd")
# what the root daemon may load; a sanitizer build adds its runtimes
ALLOWED = ("linux-vdso", "ld-linux", "libc.so", "libseccomp.so", "libcjson.so", "libinih.so",
           "libasan.so", "libubsan.so", "libm.so", "libgcc_s.so", "libstdc++.so", "libclang_rt")
FORBIDDEN = ("libcurl", "libarchive", "libmagic", "libfcgi", "libsqlite3", "libpq", "libcrypto", "libssl")


def lib_names(text):
    return sorted(set(re.findall(r"(?:^|/|\s)((?:lib|ld-|linux-vdso)[\w.+-]*\.so[\w.]*|linux-vdso[\w.]*)",
                                 text, re.M)))


def check_ldd():
    out = subprocess.run(["ldd", SD_BIN], capture_output=True, text=True, check=True).stdout
    libs = lib_names(out)
    bad = [x for x in libs if not x.startswith(ALLOWED)]
    assert libs and not bad, "llmbox-sandboxd links %s (allowed: %s)" % (bad, ALLOWED)
    print("INFO ldd llmbox-sandboxd: %s" % " ".join(libs), flush=True)
    main = lib_names(subprocess.run(["ldd", BIN], capture_output=True, text=True, check=True).stdout)
    assert any(x.startswith("libcurl") for x in main), \
        "build/llmbox should link libcurl (the agent's model client): is %s the right binary?" % BIN
    print("INFO ldd llmbox: %d libraries" % len(main), flush=True)


def defined_symbols(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3 and ln.split()[1] in "TtDdBbRr"}


def check_no_root_code_in_main():
    objs = glob.glob(os.path.join(BUILD, "server", "sandboxd", "*.o"))
    assert objs, "no objects in %s/server/sandboxd (make all)" % BUILD
    root = set()
    for o in objs:
        root |= {s for s in defined_symbols(o) if s.startswith("lbsd_") or s.startswith("lb_")}
    assert root, "no lbsd_/lb_ symbols found in server/sandboxd objects"
    leaked = sorted(root & defined_symbols(BIN))
    assert not leaked, "build/llmbox holds root-only code of server/sandboxd/: %s" % leaked[:10]


def check_running_daemon():
    with Daemon() as d:
        pid = d.proc.pid
        exe = os.readlink("/proc/%d/exe" % pid)
        assert os.path.basename(exe) == "llmbox-sandboxd", \
            "`llmbox sandboxd` runs %s, not llmbox-sandboxd (same pid after the exec)" % exe
        with open("/proc/%d/maps" % pid) as f:
            libs = lib_names(f.read())
        bad = [x for x in libs if not x.startswith(ALLOWED)]
        forbidden = [x for x in libs if x.startswith(FORBIDDEN)]
        assert not bad and not forbidden, "the running sandboxd maps %s" % (bad or forbidden)
        c = d.connect()
        sid = c.create()
        r = c.exec(sid, "echo hello from $(id -u)")
        assert r["state"] == "exited" and r["stdout"].startswith("hello from 0"), r
        c.destroy(sid)
        c.close()


def check_image_list():
    r = subprocess.run([BIN, "image", "list"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 0 and "IMAGE" in r.stdout and "default" in r.stdout, (r.returncode, r.stdout,
                                                                                   r.stderr)


def main():
    p = Reporter("sandboxd_binary/")
    p.run("ldd_only_root_libraries", check_ldd)
    p.run("main_binary_has_no_root_code", check_no_root_code_in_main)
    why = skip_reason()
    if why:
        print("SKIP sandboxd_binary/running_daemon: %s" % why)
        print("SKIP sandboxd_binary/image_list: %s" % why)
    else:
        p.run("running_daemon_maps_few_libraries", check_running_daemon)
        p.run("image_list_through_sandboxd", check_image_list)
    return p.exit_code()


if __name__ == "__main__":
    sys.exit(main())
