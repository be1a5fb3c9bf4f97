"""A row's own image in an evaluation (docs/EVAL.md, "A row's own image"):
an evaluation whose rows run in two images (the default debootstrap one
and a small layered one imported here with `llmbox image import`), each
run's command reading the same file, whose text differs between the two
images, so each answer proves where its row ran, and a script scorer
that scores 1 only in the layered image, so the score proves where the
scorer ran; results.jsonl and the
runs show each row's image; a dataset naming an image this host neither
has nor can pull, or one that is not an image reference, is refused up
front with the row and the name, and nothing runs; the evaluation's own
`image` (a form field) is where rows without one run and are scored.

Against the real stack with the fake model's eval behaviour
(tests/fake_model.py, {"eval": true}: ANSWER-FROM-INPUT[NAME] runs `cat
/testbed/input/NAME > answer`, and NAME may climb to /etc).

Checked against the old code: there the `image` field was kept in the row
but ignored, so the layered row ran in the default image and answered
"12.x" instead of the layered image's text, and the bad rows were not
refused (the evaluation was stored and ran)."""
import json
import os
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import Layout, dir_entries, entry, tar_layer, tiny_rootfs  # noqa: E402
from stack import LLMBOX, REPO, Reporter, Stack, image_ready  # noqa: E402
from test_evals_api import jsonl, model_requests, post_eval, wait_eval  # noqa: E402

STORE = os.path.join(REPO, "var", "images")
NAME = "evalrows/tiny:" + os.urandom(4).hex()
MARK = "tiny-layered-" + os.urandom(4).hex()
PROBLEM = "Which system is this? ANSWER-FROM-INPUT[../../etc/debian_version]"


def llmbox_image(*args):
    r = subprocess.run([LLMBOX, "image"] + list(args), env=dict(os.environ, LLMBOX_IMAGE_STORE=STORE),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def make_layered(tmp):
    """A small layered image whose /etc/debian_version says MARK."""
    root = tiny_rootfs(os.path.join(tmp, "rootfs"))
    for prog in ("chmod", "head", "tail", "rm"):  # what the script scorer's runner uses besides the shell
        if shutil.which(prog):
            shutil.copy2(shutil.which(prog), os.path.join(root, "usr", "bin", prog))
    lay = Layout(os.path.join(tmp, "oci"))
    top = tar_layer([entry("etc", "dir"), entry("etc/debian_version", data=(MARK + "\n").encode())])
    lay.image([tar_layer(dir_entries(root)), top], ref="v1")
    llmbox_image("import", lay.path, NAME)


def default_version():
    with open(os.path.join(STORE, "default", "rootfs", "etc", "debian_version")) as f:
        return f.read().strip()


def row(rid, gt, **extra):
    r = {"id": rid, "domain": "instruct_follow", "scorer": "exact", "ground_truth": gt, "problem_statement": PROBLEM}
    r.update(extra)
    return r


def check_rows_run_in_their_own_images(s):
    deb = default_version()
    # "deb" has no image: the evaluation's (the default); "tiny" names the
    # layered one; "deb2" names the default by its name
    # the scorer's sandbox is the row's image too: this script scores 1 only
    # where /etc/debian_version holds MARK
    script = "#!/bin/sh\ngrep -q %s /etc/debian_version && echo 1 || echo 0\n" % MARK
    rows = [row("deb", deb), row("tiny", MARK, image=NAME), row("deb2", deb, image="default"),
            row("tiny-scored", "x", image=NAME, scorer="script", scorer_script=script),
            row("deb-scored", "x", scorer="script", scorer_script=script)]
    st, o = post_eval(s, jsonl(rows), mode="sandbox", layout="llmbox")
    assert st == 201, (st, o)
    e = wait_eval(s, o["id"])
    assert e["status"] == "succeeded", json.dumps(e)[:2000]
    st, _, body = s.request("GET", "/api/evals/%s/results.jsonl" % o["id"])
    assert st == 200, (st, body[:500])
    res = {x["id"]: x for x in (json.loads(line) for line in body.decode().splitlines() if line.strip())}
    assert res["tiny"]["answer"].strip() == MARK and res["tiny"]["score"] == 1, res["tiny"]
    assert res["deb"]["answer"].strip() == deb and res["deb"]["score"] == 1, res["deb"]
    assert res["deb2"]["answer"].strip() == deb and res["deb2"]["score"] == 1, res["deb2"]
    assert res["tiny-scored"]["score"] == 1 and res["deb-scored"]["score"] == 0, (res["tiny-scored"],
                                                                                  res["deb-scored"])
    assert res["tiny"]["image"] == NAME and res["deb"]["image"] is None and res["deb2"]["image"] == "default", res
    runs = {x["id"]: x for x in e["runs"]}
    assert runs["tiny"]["image"] == NAME and runs["deb"]["image"] is None, runs
    # the task the run made names the image, as a task of the API would
    st, t = s.get_json("/api/tasks/" + res["tiny"]["task_id"])
    assert st == 200 and t["image"] == NAME, (st, t)


def check_the_evaluations_own_image(s):
    """The form's `image`: rows without their own run in it (and are scored
    in it), a row naming the default still runs in the default."""
    deb = default_version()
    script = "#!/bin/sh\ngrep -q %s /etc/debian_version && echo 1 || echo 0\n" % MARK
    rows = [row("plain", MARK), row("own", deb, image="default"),
            row("scored", "x", scorer="script", scorer_script=script)]
    st, o = post_eval(s, jsonl(rows), mode="sandbox", layout="llmbox", image=NAME)
    assert st == 201, (st, o)
    e = wait_eval(s, o["id"])
    assert e["status"] == "succeeded", json.dumps(e)[:2000]
    st, _, body = s.request("GET", "/api/evals/%s/results.jsonl" % o["id"])
    res = {x["id"]: x for x in (json.loads(line) for line in body.decode().splitlines() if line.strip())}
    assert res["plain"]["answer"].strip() == MARK and res["plain"]["image"] == NAME, res["plain"]
    assert res["own"]["answer"].strip() == deb and res["own"]["image"] == "default", res["own"]
    assert res["scored"]["score"] == 1, res["scored"]
    # an evaluation image this host lacks: refused, nothing made
    st, o = post_eval(s, jsonl([row("a", "x")]), mode="sandbox", image="evalrows/nothere:2")
    assert st == 400 and "evalrows/nothere:2" in o["error"]["message"], (st, o)


def check_bad_images_refused_up_front(s):
    st, before = s.get_json("/api/evals")
    assert st == 200, (st, before)
    seen = model_requests(s)  # the requests so far
    good = row("a", "x", image=NAME)
    cases = [
        # an image this host lacks, by a local name: row 2 named
        ([good, row("b", "x", image="evalrows/nothere:1")], ["row 2", "evalrows/nothere:1"]),
        # a registry's reference that cannot be pulled (nothing listens there)
        ([row("b", "x", image="127.0.0.1:9/team/nothere:1"), good], ["row 1", "127.0.0.1:9/team/nothere:1"]),
        # not an image reference at all: the line and the field
        ([good, good | {"id": "c"}, row("d", "x", image="Not An Image!")], ["image", "Not An Image!"]),
    ]
    for rows, words in cases:
        st, o = post_eval(s, jsonl(rows), mode="sandbox")
        assert st == 400 and o["error"]["code"] == "bad_dataset", (st, o)
        msg = o["error"]["message"]
        assert all(w in msg for w in words) and o["field"] == "image", (words, o)
    assert ":3:" in post_eval(s, jsonl(cases[2][0]), mode="sandbox")[1]["error"]["message"]
    st, after = s.get_json("/api/evals")
    assert st == 200 and len(after["evals"]) == len(before["evals"]), (before, after)
    assert model_requests(s) == seen, "a refused dataset reached the model"


def main():
    if not image_ready():
        print("SKIP eval_images: the sandbox image is not built (make image)")
        return
    rep = Reporter()
    tmp = tempfile.mkdtemp(prefix="llmbox-eval-images-")
    try:
        make_layered(tmp)
        with Stack(scenario={"eval": True}, env={"LLMBOX_POOL_SIZE": "0"}) as s:
            rep.run("rows_run_in_their_own_images", check_rows_run_in_their_own_images, s)
            rep.run("bad_images_refused_up_front", check_bad_images_refused_up_front, s)
            rep.run("the_evaluations_own_image", check_the_evaluations_own_image, s)
    finally:
        subprocess.run([LLMBOX, "image", "rm", NAME], env=dict(os.environ, LLMBOX_IMAGE_STORE=STORE),
                       capture_output=True, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)
    rep.done()


if __name__ == "__main__":
    main()
