"""A sandbox image with node and @modelcontextprotocol/server-everything,
made with llmbox's own builder, for test_mcp_client.py's stdio check of a
real MCP server inside a sandbox.

The default image has no node, and a debootstrap image cannot be a build's
FROM (docs/IMAGES.md), so the base is a tiny root of the host's programs
(tests/lib/oci_images.py) plus the libraries the host's node links, made an
OCI layout with umoci and imported. The build context holds the host's
/usr/bin/node and tests/mcp/node_modules (server-everything and what it
needs, hoisted by npm); the Dockerfile COPYs them. Everything lives in one
temporary image store, built once per suite run.

    store, image = build_node_image(tmp)   # LLMBOX_IMAGE_STORE=store, a task's image=image
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oci_images import tiny_rootfs, umoci_image  # noqa: E402
from stack import LLMBOX, REPO  # noqa: E402

BASE = "mcp/base:1"
IMAGE = "mcp/node:1"
# where the image has server-everything's entry point ("bin" in its package.json)
ENTRY = "/opt/se/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
DOCKERFILE = """\
FROM %s
COPY node /usr/local/bin/node
COPY node_modules /opt/se/node_modules
""" % BASE


def _copy_libs(binary, root):
    """The libraries ldd names for binary, at their usr-merged place in root."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    for w in out.split():
        if not w.startswith("/"):
            continue
        rel = w.lstrip("/")
        if rel.startswith(("lib/", "lib64/")):
            rel = "usr/" + rel
        dst = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.realpath(w), dst)


def build_node_image(tmp):
    """Makes the image in a new store under tmp; returns (store, image name).
    Raises with the builder's output when a step fails."""
    store = os.path.join(tmp, "store")
    os.makedirs(store)
    env = dict(os.environ, LLMBOX_IMAGE_STORE=store, LLMBOX_POOL_IMAGES="default")
    root = tiny_rootfs(os.path.join(tmp, "rootfs"))
    _copy_libs("/usr/bin/node", root)
    lay = umoci_image(tmp, root, env=["PATH=/usr/local/bin:/usr/bin:/bin"])
    subprocess.run([LLMBOX, "image", "import", lay, BASE], env=env, check=True, capture_output=True,
                   timeout=300)
    shutil.rmtree(lay)
    shutil.rmtree(root)
    ctx = os.path.join(tmp, "ctx")
    os.makedirs(ctx)
    shutil.copy2("/usr/bin/node", os.path.join(ctx, "node"))
    shutil.copytree(os.path.join(HERE, "node_modules"), os.path.join(ctx, "node_modules"), symlinks=True)
    df = os.path.join(tmp, "Dockerfile")
    with open(df, "w") as f:
        f.write(DOCKERFILE)
    p = subprocess.run([LLMBOX, "image", "build", "-f", df, IMAGE, ctx], env=env, capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("image build failed: %s%s" % (p.stdout, p.stderr))
    shutil.rmtree(ctx)
    # tasks of the default image still work with this store
    os.symlink(os.path.join(REPO, "var", "images", "default"), os.path.join(store, "default"))
    return store, IMAGE
