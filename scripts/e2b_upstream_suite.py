#!/usr/bin/env python3
"""Runs E2B's own JavaScript SDK test suite against llmbox.

    scripts/e2b_upstream_suite.py /path/to/e2b-checkout [--workdir DIR] [FILE...]

Given a checkout of E2B's repository (a work tree, or a bare git directory
read with `git archive HEAD`), it copies packages/js-sdk (its source and
tests) to a temporary folder, installs what the tests need from the npm
registry (the SDK's own dependencies, vitest, msw, dotenv), starts llmbox
(sandboxd, web, nginx on free loopback ports, as tests/integration do,
with this repository's build/ or $BUILD), points the SDK at it
(E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY; the tests' template is `base`)
and runs the test files that talk to a sandbox with vitest, against the
SDK's source (`../src`, compiled by vitest: the tests mock its modules, so
they need that source, not the npm package). It prints `N passed, N
failed` and each failure with its first lines.

Not part of `make test`: CI has no E2B checkout, and the result depends on
the checkout's tests. Which files run, and which are left out and why, is
FILES and LEFT_OUT below (docs/E2B.md, "E2B's own test suite").
Needs root (sandboxd), the sandbox image, node and npm.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
from stack import Stack, image_ready  # noqa: E402

# the files whose tests make a sandbox and talk to it: E2B's control plane
# and envd, which llmbox answers
FILES = """
api/info api/kill api/list api/snapshot
sandbox/commands/connect sandbox/commands/envVars sandbox/commands/kill
sandbox/commands/list sandbox/commands/run sandbox/commands/sandboxKilledDuringRun
sandbox/commands/sendStdin sandbox/connect sandbox/create
sandbox/files/contentEncoding sandbox/files/exists sandbox/files/info
sandbox/files/list sandbox/files/makeDir sandbox/files/metadata
sandbox/files/read sandbox/files/remove sandbox/files/rename
sandbox/files/signing sandbox/files/watch sandbox/files/write
sandbox/fork sandbox/host sandbox/internetAccess sandbox/kill
sandbox/lifecyclePayload sandbox/metrics sandbox/network
sandbox/pty/kill sandbox/pty/ptyConnect sandbox/pty/ptyCreate
sandbox/pty/resize sandbox/pty/sendInput sandbox/secure
sandbox/snapshot-api sandbox/snapshot sandbox/timeout
""".split()
# git: the SDK's sbx.git over a `git daemon` the test starts in the
# sandbox (no network beyond the sandbox's loopback)
GIT_FILES = """
sandbox/git/add sandbox/git/branches sandbox/git/clone sandbox/git/commit
sandbox/git/config sandbox/git/dangerouslyAuthenticate sandbox/git/init
sandbox/git/remote sandbox/git/reset sandbox/git/restore sandbox/git/status
sandbox/git/sync
""".split()
# Left out, with why (printed with --list):
LEFT_OUT = {
    "tests/template/**": "Template.build of E2B's own images and registry (e2bdev/base, "
                         "fromPythonImage...), tags and background builds: E2B's build cloud",
    "tests/runtimes/**": "a browser (playwright), Cloudflare workers and their deployment",
    "tests/volume/**, tests/secret/**": "E2B's volumes and secrets services (msw mocks of them)",
    "mocked files (client, abortSignal, egressProxy, iam, lifecycleRequest, networkTransform, "
    "rpcHeaders, api/http2, envd/http2)": "msw answers every request: no server is reached",
    "unit files (handleApiError, validateApiKey, connectionConfig, utils, ...)": "no network at all",
}

PACKAGE_DEV = ("vitest", "msw", "dotenv", "error-stack-parser-es")

VITEST_CONFIG = """
import { defineConfig } from 'vitest/config'
export default defineConfig({
  test: {
    include: %s,
    isolate: true,
    globals: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    environment: 'node',
    maxWorkers: %d,
    setupFiles: ['tests/globalFetchFallback.setup.ts'],
    deps: { interopDefault: true },
  },
})
"""


def extract(checkout, dest):
    """packages/js-sdk of the checkout into dest (git archive for a git
    directory, a copy for a plain folder)."""
    src = os.path.join(checkout, "packages", "js-sdk")
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(dest, "packages", "js-sdk"),
                        ignore=shutil.ignore_patterns("node_modules", "dist"))
        return
    arch = subprocess.run(["git", "-C", checkout, "archive", "HEAD", "packages/js-sdk"],
                          check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=arch, check=True)


def install(sdk, node_modules):
    """The SDK's dependencies and the test tools, from the npm registry; or
    node_modules linked from an earlier run."""
    pkg = json.load(open(os.path.join(sdk, "package.json")))
    dev = pkg.get("devDependencies", {})
    mine = {"name": "e2b-upstream-suite", "private": True, "type": "module",
            "dependencies": pkg.get("dependencies", {}),
            "devDependencies": {k: dev[k] for k in PACKAGE_DEV if k in dev}}
    with open(os.path.join(sdk, "package.json"), "w") as f:
        json.dump(mine, f, indent=1)
    if node_modules:
        os.symlink(os.path.abspath(node_modules), os.path.join(sdk, "node_modules"))
        return
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=sdk, check=True,
                   stdout=sys.stderr)


def summarize(report):
    """(passed, failed, skipped, [(name, message)]) from vitest's JSON report."""
    passed = failed = skipped = 0
    fails = []
    for f in report.get("testResults", []):
        rel = os.path.relpath(f["name"]).split("tests/", 1)[-1]
        tests = f.get("assertionResults", [])
        if not tests and f.get("status") == "failed":
            fails.append((rel, (f.get("message") or "the file failed to load").strip()))
            failed += 1
        for t in tests:
            if t["status"] == "passed":
                passed += 1
            elif t["status"] == "failed":
                failed += 1
                msg = " | ".join(" ".join(m.split("\n")[:2]) for m in t.get("failureMessages", []))
                fails.append(("%s > %s" % (rel, t["fullName"]), msg[:400]))
            else:
                skipped += 1
    return passed, failed, skipped, fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", help="E2B's repository: a work tree or a (bare) git directory")
    ap.add_argument("files", nargs="*", help="test files to run (e.g. sandbox/files/read); default: all of FILES")
    ap.add_argument("--git", action="store_true", help="also the sbx.git tests (GIT_FILES)")
    ap.add_argument("--workdir", help="extract here (kept) instead of a temporary folder (removed)")
    ap.add_argument("--node-modules", help="link this node_modules instead of installing")
    ap.add_argument("--workers", type=int, default=2, help="vitest workers (files at once)")
    ap.add_argument("--list", action="store_true", help="print what runs and what is left out, and why")
    ap.add_argument("--host-names", action="store_true",
                    help="reach sandboxes by E2B_DOMAIN host names over TLS (sbx.getHost works) instead of "
                         "E2B_SANDBOX_URL: a throwaway CA and *.e2b.test certificate, as test_e2b.py does")
    ap.add_argument("--ports-public", action="store_true",
                    help="e2b_ports_public = 1: sandboxes' ports without the traffic token unless "
                         "allowPublicTraffic is false, E2B's default (llmbox's is the token)")
    a = ap.parse_intermixed_args()
    files = a.files or FILES + (GIT_FILES if a.git else [])
    if a.list:
        print("runs:", " ".join(files))
        for k, v in LEFT_OUT.items():
            print("left out: %s: %s" % (k, v))
        return 0
    if os.geteuid() != 0 or not image_ready():
        print("e2b_upstream_suite: needs root (sandboxd) and the sandbox image (make image)", file=sys.stderr)
        return 2
    work = a.workdir or tempfile.mkdtemp(prefix="e2b-upstream-")
    os.makedirs(work, exist_ok=True)
    sdk = os.path.join(work, "packages", "js-sdk")
    try:
        if not os.path.isdir(sdk):
            extract(a.checkout, work)
            install(sdk, a.node_modules)
        include = ["tests/%s.test.ts" % f for f in files]
        with open(os.path.join(sdk, "llmbox.vitest.config.mts"), "w") as f:
            f.write(VITEST_CONFIG % (json.dumps(include), a.workers))
        # the SDK checks the key's form itself: "e2b_" and 40 hex digits
        token = "e2b_" + os.urandom(20).hex()
        web_env = {"LLMBOX_SANDBOX_API_TOKEN": token, "LLMBOX_SANDBOX_API_MAX": "64"}
        out = os.path.join(work, "vitest.json")
        tls = None
        if a.host_names:  # docs/E2B.md "E2B_DOMAIN host names", set up as test_e2b.py does
            sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
            from test_e2b import free_loopback_443, make_tls
            ca, crt, key = make_tls(work, "e2b.test")
            addr = free_loopback_443()
            tls = {"listen": addr + ":443", "cert": crt, "key": key, "names": "*.e2b.test"}
            web_env["LLMBOX_E2B_DOMAIN"] = "e2b.test"
        if a.ports_public:
            web_env["LLMBOX_E2B_PORTS_PUBLIC"] = "1"
        with Stack(model=False, web_env=web_env, tls=tls) as st:
            env = dict(os.environ, E2B_API_URL="http://127.0.0.1:%d/e2b" % st.port,
                       E2B_SANDBOX_URL="http://127.0.0.1:%d/e2b/sandbox" % st.port, E2B_API_KEY=token)
            env.pop("E2B_DOMAIN", None)
            env.pop("E2B_DEBUG", None)
            if tls:
                # *.e2b.test resolves to nginx's TLS address in node only (a
                # preload standing in for the wildcard DNS record)
                del env["E2B_SANDBOX_URL"]
                env.update(E2B_DOMAIN="e2b.test", NODE_EXTRA_CA_CERTS=ca, LLMBOX_TEST_RESOLVE="e2b.test=" + addr,
                           NODE_OPTIONS="--import " + os.path.join(REPO, "tests", "e2b", "resolve_test_domain.mjs"))
            # vitest's own lines (progress) to stderr; the summary from its JSON
            p = subprocess.run(["npx", "vitest", "run", "--config", "llmbox.vitest.config.mts",
                                "--reporter=dot", "--reporter=json", "--outputFile.json=" + out], cwd=sdk,
                               env=env, stdout=sys.stderr, stderr=subprocess.STDOUT, text=True)
        if not os.path.exists(out):
            print("vitest wrote no report (rc %d)" % p.returncode, file=sys.stderr)
            return 2
        passed, failed, skipped, fails = summarize(json.load(open(out)))
        for name, msg in fails:
            print("FAIL %s: %s" % (name, msg))
        print("%d passed, %d failed%s" % (passed, failed, ", %d skipped" % skipped if skipped else ""))
        return 1 if failed else 0
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
