"""The agent loop through `llmbox run` with a fake model and a fake sandbox
daemon (no root needed): runs tests/integration/agent_run.sh, which prints
the PASS/FAIL lines tests/run.sh counts."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))
binary = os.environ.get("LLMBOX") or os.path.join(repo, os.environ.get("BUILD", "build"), "llmbox")
rc = subprocess.call(["bash", os.path.join(here, "agent_run.sh"), binary])
sys.exit(rc)
