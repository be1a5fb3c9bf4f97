"""`llmbox image build -f Dockerfile --check NAME [CONTEXT]` (the Dockerfile
parser, server/images/dockerfile_parse.c, and build_cli.c): a Dockerfile
of an agent's image is checked against its build context with its ARGs
and --build-args; refusals name Dockerfile:LINE and the instruction; a
COPY source that leaves the context (by "..", or by a symlink) is
refused; `llmbox image build NAME` without -f still goes to the
debootstrap build. Python stdlib only."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from stack import LLMBOX, Reporter  # noqa: E402

TMP = tempfile.mkdtemp(prefix="llmbox-dockerfile-")
CTX = os.path.join(TMP, "ctx")


def build(dockerfile, *extra):
    path = os.path.join(TMP, "Dockerfile")
    with open(path, "w") as f:
        f.write(dockerfile)
    return subprocess.run([LLMBOX, "image", "build", "-f", path] + list(extra), capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, LLMBOX_HOME=TMP), cwd=TMP)


AGENT = """# the shape of LLM-in-Sandbox's own image
ARG PY=3.11
FROM python:${PY}-slim
RUN apt-get update && \\
    apt-get install -y --no-install-recommends git \\
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 LANG=C.UTF-8
COPY requirements.txt /tmp/
RUN pip install -r /tmp/requirements.txt
ARG SRC=src
COPY ${SRC}/ /testbed/
WORKDIR /testbed
"""


def test_an_agents_dockerfile_checks():
    p = build(AGENT, "--check", "agent:1", CTX)
    assert p.returncode == 0, p.stderr
    assert "step 3/9 Dockerfile:4: RUN apt-get update && apt-get install" in p.stderr, p.stderr
    assert "9 steps checked" in p.stderr, p.stderr
    # without --check: checked, then run (test_image_build.py); here the
    # base is neither a local image nor a registry's, so FROM stops it
    p = build(AGENT, "agent:1", CTX)
    assert p.returncode == 1 and "Dockerfile:3: step 2/9 FROM: python:3.11-slim" in p.stderr, p.stderr
    assert "nothing was registered" in p.stderr, p.stderr


def test_build_args_reach_from_and_copy():
    p = build(AGENT, "--check", "--build-arg", "SRC=nothere", "agent:1", CTX)
    assert p.returncode == 1, p.stderr
    assert "Dockerfile:11: COPY's source nothere/ is not in the build context" in p.stderr, p.stderr
    p = build(AGENT, "--check", "--build-arg", "PY=Bad/Name", "agent:1", CTX)
    assert p.returncode == 1 and "Dockerfile:3: FROM python:Bad/Name-slim" in p.stderr, p.stderr


def test_refusals_name_line_and_instruction():
    cases = [
        ("FROM debian\nRUN true\nEXPOSE 8080\n", "Dockerfile:3: EXPOSE is not supported"),
        ("FROM debian\nCMD [\"bash\"]\n", "Dockerfile:2: CMD is not supported"),
        ("FROM debian\nADD https://example.com/a.tgz /opt/\n", "Dockerfile:2: ADD takes files from the build "
                                                                "context only, not from a URL"),
        ("FROM debian\nCOPY ../outside /x\n", "Dockerfile:2: COPY's source ../outside is not a path inside"),
        ("FROM debian\nCOPY escape /x\n", "Dockerfile:2: COPY's source escape is not in the build context"),
        ("FROM b AS a\nFROM a AS b\n", "Dockerfile:1: FROM b names a later stage"),
        ("FROM debian AS a\nCOPY --from=a /x /y\n", "Dockerfile:2: COPY --from=a names its own stage"),
        ("FROM debian\nCOPY --from=nosuch /x /y\n", "Dockerfile:2: COPY --from=nosuch names no stage"),
        ("FROM debian\nBOGUS x\n", "Dockerfile:2: unknown instruction BOGUS"),
    ]
    for text, words in cases:
        p = build(text, "--check", "x", CTX)
        assert p.returncode == 1 and words in p.stderr, (text, p.stderr)


def test_build_without_f_is_still_the_debootstrap_build():
    p = subprocess.run([LLMBOX, "image", "build", "nosuchrecipe"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LLMBOX_HOME=TMP), cwd=TMP)
    assert "Dockerfile" not in p.stderr and "nosuchrecipe" in p.stderr, p.stderr


def main():
    os.makedirs(os.path.join(CTX, "src"))
    open(os.path.join(CTX, "requirements.txt"), "w").write("numpy\n")
    open(os.path.join(CTX, "src", "main.py"), "w").write("print(1)\n")
    os.symlink("/etc/passwd", os.path.join(CTX, "escape"))
    r = Reporter()
    try:
        r.run("an_agents_dockerfile_checks", test_an_agents_dockerfile_checks)
        r.run("build_args_reach_from_and_copy", test_build_args_reach_from_and_copy)
        r.run("refusals_name_line_and_instruction", test_refusals_name_line_and_instruction)
        r.run("build_without_f_is_still_the_debootstrap_build", test_build_without_f_is_still_the_debootstrap_build)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    r.done()


if __name__ == "__main__":
    main()
