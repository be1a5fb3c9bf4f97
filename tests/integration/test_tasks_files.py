#!/usr/bin/env python3
"""Integration tests of what the page relies on beyond the basics, through
the real nginx.conf and `llmbox web` (the harness of test_web.py: no sandbox
daemon, no model; finished tasks are simulated in the database):

  - archives uploaded with a task are unpacked into its input, and every
    unsafe archive is refused with a clear 4xx sentence;
  - task options: network (only when the operator allows nat), image,
    GET /api/info;
  - "Run again" (POST /api/tasks/{id}/rerun) copies prompt, options, inputs;
  - delete removes the task, its files and its cached bundles;
  - bundles are built once and served with validators (304), folder
    bundles too (kept in fbundle-* files), symlinks left out, caps answered 413;
  - history paging walks tasks made in the same millisecond;
  - limit_req on task starts answers 429 as JSON.

Prints PASS/FAIL lines. Python stdlib only.
"""
import io
import json
import os
import sys
import tarfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_web  # noqa: E402
from test_web import Env, expect_error, multipart  # noqa: E402


UNPACK_MB = 6   # LLMBOX_MAX_UNPACK_MB: above a 40 KiB bomb's ratio cap (about 5 MB)
UPLOAD_MB = 8   # LLMBOX_MAX_UPLOAD_MB (nginx lets 3 MiB through, as in test_web)


def zip_bytes(entries):
    """entries: [(name, bytes)] or [(ZipInfo, bytes)]"""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


def tar_bytes(members, gz=True):
    """members: [(TarInfo, bytes or None)]"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as t:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                t.addfile(info)
    return buf.getvalue()


def tinfo(name, type_=tarfile.REGTYPE, linkname=""):
    i = tarfile.TarInfo(name)
    i.type = type_
    i.linkname = linkname
    i.mode = 0o644
    return i


def create(E, prompt="task", files=(), fields=()):
    ctype, body = multipart([("prompt", prompt)] + list(fields), [("files", n, d) for n, d in files])
    return E.json("POST", "/api/tasks", body, {"Content-Type": ctype})


def task_dirs(E):
    d = os.path.join(E.prefix, "artifacts")
    return set(os.listdir(d))


def inputs_on_disk(E, tid):
    root = os.path.join(E.task_dir(tid), "input")
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


# ---------------------------------------------------------------- archives

def t_archive_unpacked(E):
    z = zip_bytes([("a.txt", b"alpha"), ("sub/b.csv", b"x,y\n1,2\n"), ("__MACOSX/._a.txt", b"junk")])
    tg = tar_bytes([(tinfo("./"), None), (tinfo("./t/one.txt"), b"one")])
    st, _, t = create(E, "unpack", [("data/pack.zip", z), ("more.tar.gz", tg), ("notes.txt", b"n")])
    assert st == 201, (st, t)
    paths = sorted(i["path"] for i in t["inputs"])
    assert paths == ["data/a.txt", "data/sub/b.csv", "notes.txt", "t/one.txt"], paths
    frm = {i["path"]: i.get("from") for i in t["inputs"]}
    assert frm["data/sub/b.csv"] == "data/pack.zip" and frm["t/one.txt"] == "more.tar.gz" and frm["notes.txt"] is None, frm
    disk = inputs_on_disk(E, t["id"])
    assert disk == {"data/a.txt": b"alpha", "data/sub/b.csv": b"x,y\n1,2\n", "notes.txt": b"n",
                    "t/one.txt": b"one"}, sorted(disk)
    # unpack=0 keeps the archive as it came
    st, _, t = create(E, "keep", [("pack.zip", z)], [("unpack", "0")])
    assert st == 201 and [i["path"] for i in t["inputs"]] == ["pack.zip"], (st, t)
    assert inputs_on_disk(E, t["id"]) == {"pack.zip": z}
    # a folder in the archive named like the archive itself is fine
    z2 = zip_bytes([("pack.zip/inner.txt", b"i")])
    st, _, t = create(E, "same name", [("pack.zip", z2)])
    assert st == 201 and [i["path"] for i in t["inputs"]] == ["pack.zip/inner.txt"], (st, t)


def refused(E, files, status, needle, fields=()):
    before = task_dirs(E)
    st, _, b = create(E, "refused", files, fields)
    expect_error(st, b, status)
    assert needle in b["error"]["message"], b
    assert task_dirs(E) == before, "a refused upload left a task folder behind"
    return b["error"]["message"]


def t_archive_guards(E):
    refused(E, [("evil.zip", zip_bytes([("ok.txt", b"ok"), ("../evil.txt", b"evil")]))], 400, "climbs out")
    refused(E, [("evil.zip", zip_bytes([("/etc/evil.txt", b"evil")]))], 400, "absolute path")
    refused(E, [("evil.tar.gz", tar_bytes([(tinfo("a/../../../evil"), b"e")]))], 400, "climbs out")
    refused(E, [("evil.tar.gz", tar_bytes([(tinfo("/tmp/evil"), b"e")]))], 400, "absolute path")
    # a symlink in a zip: Unix mode bits in the external attributes
    zi = zipfile.ZipInfo("passwd")
    zi.create_system = 3
    zi.external_attr = (0o120777 << 16)
    refused(E, [("link.zip", zip_bytes([(zi, b"/etc/passwd")]))], 400, "symbolic link")
    refused(E, [("link.tgz", tar_bytes([(tinfo("up", tarfile.SYMTYPE, ".."), None),
                                        (tinfo("up/evil.txt"), b"e")]))], 400, "symbolic link")
    refused(E, [("hard.tar", tar_bytes([(tinfo("a.txt"), b"a"), (tinfo("b.txt", tarfile.LNKTYPE, "a.txt"), None)],
                                       gz=False))], 400, "hard link")
    dev = tinfo("null", tarfile.CHRTYPE)
    dev.devmajor, dev.devminor = 1, 3
    refused(E, [("dev.tar.gz", tar_bytes([(dev, None)]))], 400, "device")
    refused(E, [("fifo.tar.gz", tar_bytes([(tinfo("p", tarfile.FIFOTYPE), None)]))], 400, "device")
    # an entry that clashes with another upload
    refused(E, [("x.zip", zip_bytes([("notes.txt", b"from zip")])), ("notes.txt", b"uploaded")], 400, "clashes")
    # a damaged archive
    refused(E, [("broken.zip", b"PK\x03\x04 this is not really a zip")], 400, "broken.zip")
    # an archive bomb: 40 MiB of zeros deflate to about 40 KiB
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("zeros.bin", "w") as f:
            chunk = bytes(1 << 20)
            for _ in range(40):
                f.write(chunk)
    assert len(buf.getvalue()) < 200000
    refused(E, [("bomb.zip", buf.getvalue())], 413, "archive bomb")
    # more than LLMBOX_MAX_UNPACK_MB in all, at an honest ratio
    text = b"".join(b"%09d some words that repeat less than zeros do\n" % (i * 7919 % 1000003) for i in range(140000))
    z = zip_bytes([("big.txt", text)])
    assert len(z) < (3 << 20) and len(text) > (UNPACK_MB << 20), (len(z), len(text))
    refused(E, [("big.zip", z)], 413, "%d MiB" % UNPACK_MB)
    st, _, b = create(E, "bad flag", [], [("unpack", "maybe")])
    expect_error(st, b, 400)


# ---------------------------------------------------------------- options

def t_info_and_options(E):
    st, h, info = E.json("GET", "/api/info")
    assert st == 200, (st, info)
    lim = info["limits"]
    assert lim["upload_bytes"] == UPLOAD_MB << 20 and lim["upload_files"] == 1000, lim
    assert lim["max_turns_limit"] == 1000 and lim["unpack_bytes"] == UNPACK_MB << 20, lim
    assert info["network"] == {"modes": ["none"], "default": "none"}, info["network"]
    assert "zip" in info["archives"] and "tar.gz" in info["archives"], info
    assert isinstance(info["images"], list), info
    st, _, b = create(E, "net", [], [("network", "nat")])
    expect_error(st, b, 403, "forbidden")
    assert "LLMBOX_NETWORK_ALLOW" in b["error"]["message"], b
    st, _, b = create(E, "net", [], [("network", "internet")])
    expect_error(st, b, 400)
    for bad in ("../../etc", "Default", "no-such-image"):
        st, _, b = create(E, "img", [], [("image", bad)])
        expect_error(st, b, 400)
    st, _, t = create(E, "defaults", [], [("network", "none")])
    assert st == 201 and t["network"] == "none" and t["image"] is None and t["rerun_of"] is None, t


def t_nat_when_allowed(_unused):
    E2 = Env()
    E2.extra_env = {"LLMBOX_NETWORK_ALLOW": "none,nat"}
    E2.start()
    try:
        st, _, info = E2.json("GET", "/api/info")
        assert info["network"]["modes"] == ["none", "nat"], info
        st, _, t = create(E2, "net", [], [("network", "nat")])
        assert st == 201 and t["network"] == "nat", (st, t)
    finally:
        E2.stop()


# ---------------------------------------------------------------- rerun / delete

def t_rerun(E):
    st, _, src = create(E, "plot it\nplease", [("data/a.csv", b"x,y\n1,2\n"), ("pack.zip", zip_bytes([("z.txt", b"z")]))],
                        [("max_turns", "7"), ("model", "default"), ("token_budget", "5000"), ("timeout_s", "900"), ("network", "none")])
    assert st == 201, src
    st, h, t = E.json("POST", "/api/tasks/%s/rerun" % src["id"], b"")
    assert st == 201, (st, t)
    assert h.get("location") == "/api/tasks/" + t["id"], h
    assert t["id"] != src["id"] and t["rerun_of"] == src["id"], t
    for k in ("prompt", "model", "max_turns", "token_budget", "timeout_s", "network", "image", "inputs"):
        assert t[k] == src[k], (k, t[k], src[k])
    assert inputs_on_disk(E, t["id"]) == inputs_on_disk(E, src["id"]) == {"data/a.csv": b"x,y\n1,2\n", "z.txt": b"z"}
    # the copy stands alone: deleting the source keeps the new task's inputs
    st, _, _ = E.json("DELETE", "/api/tasks/" + src["id"])
    assert st == 200
    assert inputs_on_disk(E, t["id"]) == {"data/a.csv": b"x,y\n1,2\n", "z.txt": b"z"}
    st, _, b = E.json("POST", "/api/tasks/%s/rerun" % src["id"], b"")
    expect_error(st, b, 404)
    st, _, b = E.json("GET", "/api/tasks/%s/rerun" % t["id"])
    expect_error(st, b, 405)
    # inputs that are gone: a clear 409
    os.unlink(os.path.join(E.task_dir(t["id"]), "input", "z.txt"))
    st, _, b = E.json("POST", "/api/tasks/%s/rerun" % t["id"], b"")
    expect_error(st, b, 409)
    assert "z.txt" in b["error"]["message"], b
    # a task that used nat cannot run again once nat is no longer allowed
    tid = E.insert_task("succeeded")
    E.db.execute("UPDATE tasks SET network='nat', model='default' WHERE id=?", (tid,))
    st, _, b = E.json("POST", "/api/tasks/%s/rerun" % tid, b"")
    expect_error(st, b, 409)
    assert "LLMBOX_NETWORK_ALLOW" in b["error"]["message"], b
    # nor one whose model is no longer configured
    tid = E.insert_task("succeeded")
    E.db.execute("UPDATE tasks SET model='gone-model' WHERE id=?", (tid,))
    st, _, b = E.json("POST", "/api/tasks/%s/rerun" % tid, b"")
    expect_error(st, b, 409)
    assert '"gone-model" is no longer configured' in b["error"]["message"], b


def finished_task_with_outputs(E, files, answer="the answer"):
    tid = E.insert_task("succeeded", answer=answer)
    out = os.path.join(E.task_dir(tid), "output")
    rows = []
    for name, data in files.items():
        p = os.path.join(out, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        rows.append((tid, name, len(data), "application/octet-stream", "0" * 64))
    E.db.executemany("INSERT INTO artifacts(task_id, path, size, mime, sha256) VALUES(?,?,?,?,?)", rows)
    with open(os.path.join(E.task_dir(tid), "trajectory.json"), "w") as f:
        f.write('{"turns":[]}')
    return tid, out


def t_delete_removes_everything(E):
    tid, _ = finished_task_with_outputs(E, {"a.txt": b"a", "d/b.txt": b"b"})
    E.add_event(tid, 1, "done", {"status": "succeeded"})
    for q in ("bundle.zip", "bundle.tar.gz", "bundle.zip?path=d"):
        st, _, _ = E.req("GET", "/api/tasks/%s/%s" % (tid, q))
        assert st == 200, (q, st)
    assert os.path.exists(os.path.join(E.task_dir(tid), "bundle.zip"))
    st, _, b = E.json("DELETE", "/api/tasks/" + tid)
    assert st == 200 and b == {"id": tid, "deleted": True}, b
    assert not os.path.exists(E.task_dir(tid)), "the task folder (and its cached bundles) must go"
    n = E.db.execute("SELECT COUNT(*) FROM events WHERE task_id=?", (tid,)).fetchone()[0]
    assert n == 0, n
    for q in ("", "/bundle.zip", "/artifacts/a.txt", "/events"):
        st, _, b = E.json("GET", "/api/tasks/%s%s" % (tid, q))
        expect_error(st, b, 404)
    st, _, lst = E.json("GET", "/api/tasks?limit=200")
    assert tid not in [t["id"] for t in lst["tasks"]]
    st, _, b = E.json("DELETE", "/api/tasks/" + tid)
    expect_error(st, b, 404)


# ---------------------------------------------------------------- bundles

def t_bundle_cached_with_validators(E):
    tid, _ = finished_task_with_outputs(E, {"a.txt": b"a" * 1000, "pic.png": b"\x89PNG" + os.urandom(300)})
    st, h1, b1 = E.req("GET", "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200, st
    path = os.path.join(E.task_dir(tid), "bundle.zip")
    ino = os.stat(path).st_ino
    assert h1.get("etag") and h1.get("last-modified"), h1
    assert h1.get("cache-control") == "private, no-cache", h1
    time.sleep(1.1)
    st, h2, b2 = E.req("GET", "/api/tasks/%s/bundle.zip" % tid)
    assert st == 200 and b2 == b1 and h2["etag"] == h1["etag"], (st, h1.get("etag"), h2.get("etag"))
    assert os.stat(path).st_ino == ino, "the bundle was built again"
    st, h3, b3 = E.req("GET", "/api/tasks/%s/bundle.zip" % tid, headers={"If-None-Match": h1["etag"]})
    assert st == 304 and b3 == b"", (st, b3[:50])
    st, h4, b4 = E.req("GET", "/api/tasks/%s/bundle.zip" % tid, headers={"Range": "bytes=0-1"})
    assert st == 206 and b4 == b"PK", (st, b4)
    built = open(os.path.join(E.prefix, "var", "log", "web.out"), errors="replace").read().count(
        "task %s: built bundle.zip" % tid)
    assert built == 1, "built %d times" % built
    # artifacts: the same validators and a 304
    st, h, _ = E.req("GET", "/api/tasks/%s/artifacts/a.txt" % tid)
    assert st == 200 and h.get("etag") and h.get("cache-control") == "private, no-cache", h
    st, _, body = E.req("GET", "/api/tasks/%s/artifacts/a.txt" % tid, headers={"If-None-Match": h["etag"]})
    assert st == 304, st
    # no gzip on artifacts, even when the client asks for it (ranges stay file ranges)
    st, h, _ = E.req("GET", "/api/tasks/%s/artifacts/a.txt" % tid, headers={"Accept-Encoding": "gzip"})
    assert st == 200 and "content-encoding" not in h, h


def t_folder_bundle(E):
    tid, out = finished_task_with_outputs(E, {"plots/2024/a.png": b"\x89PNGa", "plots/b.txt": b"b", "top.txt": b"t"})
    os.symlink("/etc", os.path.join(out, "plots", "etc"))
    os.symlink("/etc/passwd", os.path.join(out, "plots", "passwd"))
    st, h, body = E.req("GET", "/api/tasks/%s/bundle.zip?path=plots" % tid)
    assert st == 200, (st, body[:300])
    assert "llmbox-%s-plots.zip" % tid[:8] in h["content-disposition"], h
    names = sorted(zipfile.ZipFile(io.BytesIO(body)).namelist())
    assert names == ["plots/2024/a.png", "plots/b.txt"], names
    st, h, body = E.req("GET", "/api/tasks/%s/bundle.tar.gz?path=plots/2024" % tid)
    assert st == 200, st
    names = sorted(tarfile.open(fileobj=io.BytesIO(body)).getnames())
    assert names == ["2024/a.png"], names
    # built once into a kept file that nginx serves; an old version's
    # bundles/ folder goes away
    assert not os.path.exists(os.path.join(E.task_dir(tid), "bundles"))
    assert h.get("content-length") == str(len(body)) and "private" in h.get("cache-control", ""), h
    assert len([n for n in os.listdir(E.task_dir(tid)) if n.startswith("fbundle-")]) == 2
    os.mkdir(os.path.join(E.task_dir(tid), "bundles"))
    with open(os.path.join(E.task_dir(tid), "bundles", "0" * 32 + ".zip"), "wb") as f:
        f.write(b"kept by an older version")
    st, _, _ = E.req("GET", "/api/tasks/%s/bundle.zip?path=plots" % tid)
    assert st == 200 and not os.path.exists(os.path.join(E.task_dir(tid), "bundles"))
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip?path=nope" % tid)
    expect_error(st, b, 404)
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip?path=top.txt" % tid)
    expect_error(st, b, 404)
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip?path=plots/etc" % tid)
    expect_error(st, b, 404)
    for bad in ("../x", "%2fetc", "a%5cb"):
        st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip?path=%s" % (tid, bad))
        expect_error(st, b, 400)
    # the whole bundle leaves the symlinks out too
    st, _, body = E.req("GET", "/api/tasks/%s/bundle.zip" % tid)
    names = sorted(zipfile.ZipFile(io.BytesIO(body)).namelist())
    assert names == ["answer.txt", "output/plots/2024/a.png", "output/plots/b.txt", "output/top.txt",
                     "trajectory.json"], names


def t_bundle_entry_cap_413(E):
    tid, out = finished_task_with_outputs(E, {"one.txt": b"1"})
    for i in range(10005):
        with open(os.path.join(out, "f%05d" % i), "wb") as f:
            f.write(b"x")
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.zip" % tid)
    expect_error(st, b, 413, "too_large")
    assert "one by one" in b["error"]["message"], b
    assert not os.path.exists(os.path.join(E.task_dir(tid), "bundle.zip"))
    assert not [n for n in os.listdir(E.task_dir(tid)) if ".tmp." in n], "a half-built bundle was left"
    # a folder bundle over the caps: 413, nothing kept
    tid, out = finished_task_with_outputs(E, {"d/one.txt": b"1"})
    for i in range(10001):
        with open(os.path.join(out, "d", "f%05d" % i), "wb") as f:
            f.write(b"x")
    st, _, b = E.json("GET", "/api/tasks/%s/bundle.tar.gz?path=d" % tid)
    expect_error(st, b, 413, "too_large")
    assert not [n for n in os.listdir(E.task_dir(tid)) if n.startswith("fbundle-")], "a refused bundle was kept"


# ---------------------------------------------------------------- history

def t_history_paging_same_millisecond(E):
    ids = [E.insert_task("succeeded", prompt="same ms %d" % i) for i in range(7)]
    E.db.execute("UPDATE tasks SET created_ms = 1000 WHERE id IN (%s)" % ",".join("?" * 7), ids)
    seen, url = [], "/api/tasks?limit=3&before=1001"
    for _ in range(10):
        st, _, page = E.json("GET", url)
        assert st == 200, page
        seen += [t["id"] for t in page["tasks"]]
        if page["next_before"] is None:
            break
        url = "/api/tasks?limit=3&before=%d&before_id=%s" % (page["next_before"], page["next_before_id"])
    assert sorted(seen) == sorted(ids) and len(seen) == 7, (len(seen), seen)
    st, _, b = E.json("GET", "/api/tasks?before=5&before_id=xyz")
    expect_error(st, b, 400)


# ---------------------------------------------------------------- rate limit

def t_rate_limit_429(_unused):
    E3 = Env()
    E3.conf_subst = (("rate=30r/m", "rate=1r/m"), ("burst=20", "burst=2"))
    E3.start()
    try:
        codes = []
        for _ in range(5):
            st, h, b = E3.req("POST", "/api/tasks", b"x", {"Content-Type": "text/plain"})
            codes.append(st)
            if st == 429:
                body = json.loads(b)
                assert body["error"]["code"] == "rate_limited" and body["error"]["message"], body
                assert h.get("retry-after") == "10" and h["content-type"].startswith("application/json"), h
        assert codes[:3] == [415, 415, 415] and codes[3:] == [429, 429], codes
        # the same budget covers "Run again"
        st, _, b = E3.json("POST", "/api/tasks/%s/rerun" % ("0" * 32), b"")
        expect_error(st, b, 429, "rate_limited")
        # reading is never limited
        for _ in range(10):
            st, _, _ = E3.req("GET", "/api/tasks")
            assert st == 200, st
    finally:
        E3.stop()


def main():
    if not os.access(test_web.BIN, os.X_OK):
        print("FAIL setup: %s is not built" % test_web.BIN)
        return 1
    E = Env()
    E.extra_env = {"LLMBOX_MAX_UNPACK_MB": str(UNPACK_MB), "LLMBOX_MAX_UPLOAD_MB": str(UPLOAD_MB)}
    # this suite starts more tasks a minute than nginx.conf lets one address
    # start; t_rate_limit_429 checks the limit on its own stack
    E.conf_subst = (("burst=20", "burst=500"),)
    tests = [(t_archive_unpacked, E), (t_archive_guards, E), (t_info_and_options, E), (t_nat_when_allowed, None),
             (t_rerun, E), (t_delete_removes_everything, E), (t_bundle_cached_with_validators, E),
             (t_folder_bundle, E), (t_bundle_entry_cap_413, E), (t_history_paging_same_millisecond, E),
             (t_rate_limit_429, None)]
    return test_web.run_on_env(E, tests)


if __name__ == "__main__":
    sys.exit(main())
