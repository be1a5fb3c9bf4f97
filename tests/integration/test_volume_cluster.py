"""E2B's volumes in a cluster of two nodes, through a real HAProxy.

Two stacks on this machine as two sandbox hosts (each its own nginx,
`llmbox web` and sandboxd), node_name n1 and n2, sharing one PostgreSQL
store, behind HAProxy with deploy/haproxy/llmbox.cfg (started as
test_node_ids.py does). n1's web has cluster_url (the balancer's URL), n2's
has none. E2B's REST calls, as the e2b SDK makes them with E2B_API_URL and
E2B_VOLUME_API_URL at the balancer's /e2b. Asserted:

1. Volume.create through the balancer lands on a sandbox node and its id
   names it (<node>.<32 hex>); alice's volumes on both nodes are listed
   by each node's web and by the balancer, bob's list shows none of them.
2. The content API through the balancer reaches the holder (write, read
   back); getInfo through the balancer too; another node's web answers 421
   naming the holder (X-Llmbox-Node) for getInfo and content.
3. Sandbox.create mounting n2's volume: through the balancer (twice:
   round robin puts one on each node; n1 forwards), and sent to n1's web
   directly (forwarded to n2 through the balancer): the sandbox is n2's
   and reads the file written through the content API.
4. n1's volume mounted by a create sent to n2's web (no cluster_url): 421
   naming n1 and saying to set cluster_url; a create that carries
   X-Llmbox-Node already is never forwarded again (421); volumes of both
   nodes in one create: 400; bob cannot mount alice's volume by its name.
5. A name is one per key across the cluster: a second create of a name
   alice has on the other node is 409 (sent to either node's web and
   through the balancer); bob may use the same name.
6. A row of n1's whose volume n1's sandboxd does not have (written behind
   the webs' backs) is dropped when n1's web lists, and does not keep its
   name taken at a create on n1; destroy through the
   balancer removes a volume from every node's list.
7. The e2b SDK itself (tests/e2b/sdk_volume_cluster.mjs), pointed at the
   balancer: a volume made on n2, written and read, listed, mounted by two
   Sandbox.create (one reaches each node's web) and read inside, destroyed.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import stack  # noqa: E402
from stack import Reporter, Skip, Stack, image_ready  # noqa: E402
import pg_server  # noqa: E402
import test_stateless_webs  # noqa: E402
from test_stateless_webs import LB, run_tests  # noqa: E402
from test_node_ids import USERS, USERS_CONF, TOKEN  # noqa: E402

TAG = os.urandom(3).hex()
E2B_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2b")


def call(target, method, path, body=None, key=None, headers=None, timeout=120):
    h = {"X-API-KEY": key or TOKEN}
    h.update(headers or {})
    return stack.json_call(target, method, path, body, h, timeout)


def ids(o):
    return {v["volumeID"]: v["name"] for v in o} if isinstance(o, list) else o


class T:
    def __init__(self, lb, s1, s2, pg, db):
        self.lb, self.s1, self.s2, self.pg, self.db = lb, s1, s2, pg, db
        self.web = {"n1": s1, "n2": s2}
        self.vol = {}  # node: (id, name, token) of alice's

    def other(self, node):
        return self.s2 if node == "n1" else self.s1

    def test_1_create_and_list_across_nodes(self):
        alice = USERS["alice"]
        made = []
        for i in range(6):
            st, h, o = call(self.lb, "POST", "/e2b/volumes", {"name": "vol-%s-%d" % (TAG, i)}, alice)
            assert st == 201, (st, o)
            node = o["volumeID"].split(".")[0]
            assert node in ("n1", "n2") and len(o["volumeID"]) == 3 + 32, o
            assert h.get("x-llmbox-web") == node, ("made by its node's web", o, h.get("x-llmbox-web"))
            made.append(o)
            if node not in self.vol:
                self.vol[node] = (o["volumeID"], o["name"], o["token"])
            if len(self.vol) == 2:
                break
        assert len(self.vol) == 2, ("volumes on both nodes", made)
        for o in made:  # the extras go
            if o["volumeID"] not in [v[0] for v in self.vol.values()]:
                st, _, _ = call(self.lb, "DELETE", "/e2b/volumes/" + o["volumeID"], key=alice)
                assert st == 204, st
        want = {v[0]: v[1] for v in self.vol.values()}
        for name, target in (("n1's web", self.s1), ("n2's web", self.s2), ("the balancer", self.lb)):
            st, _, o = call(target, "GET", "/e2b/volumes", key=alice)
            assert st == 200 and ids(o) == want, (name, st, o, want)
            st, _, o = call(target, "GET", "/e2b/volumes", key=USERS["bob"])
            assert st == 200 and not set(want) & set(ids(o)), ("bob sees none of alice's", name, o)
            st, _, o = call(target, "GET", "/e2b/volumes")  # the shared token: every one
            assert st == 200 and set(want) <= set(ids(o)), (name, o)

    def test_2_content_and_info_reach_the_holder(self):
        alice = USERS["alice"]
        assert len(self.vol) == 2, ("test 1's volumes, one on each node", self.vol)
        for node, (vid, name, tok) in sorted(self.vol.items()):
            data = ("hello from %s\n" % node).encode()
            bearer = {"Authorization": "Bearer " + tok}
            st, h, o = self.lb.request("PUT", "/e2b/volumecontent/%s/file?path=/hello.txt" % vid, data, bearer)
            assert st == 200 and h.get("x-llmbox-web") == node, ("write through the balancer", node, st, o)
            st, h, back = self.lb.request("GET", "/e2b/volumecontent/%s/file?path=/hello.txt" % vid, None, bearer)
            assert st == 200 and back == data and h.get("x-llmbox-web") == node, (node, st, back)
            st, h, o = call(self.lb, "GET", "/e2b/volumes/" + vid, key=alice)
            assert st == 200 and o["volumeID"] == vid and o["token"] == tok and h.get("x-llmbox-web") == node, o
            # another node's web: 421 naming the holder
            st, h, o = call(self.other(node), "GET", "/e2b/volumes/" + vid, key=alice)
            assert st == 421 and h.get("x-llmbox-node") == node and o["node"] == node, (st, h, o)
            assert "held by node %s" % node in o["message"], o
            st, h, o = self.other(node).request("GET", "/e2b/volumecontent/%s/file?path=/hello.txt" % vid, None,
                                                bearer)
            assert st == 421 and h.get("x-llmbox-node") == node, ("content on the other node", st, h, o)
            # bob's key does not reach it, through the balancer either
            st, _, o = call(self.lb, "GET", "/e2b/volumes/" + vid, key=USERS["bob"])
            assert st == 404, (st, o)

    def sandbox_reads(self, sid, want):
        st, _, o = call(self.lb, "POST", "/api/sandboxes/%s/exec" % sid, {"command": "cat /mnt/v/hello.txt"},
                        headers={"Authorization": "Bearer " + TOKEN})
        assert st == 200 and o["stdout"] == want, ("the sandbox reads the volume's file", sid, st, o)

    def kill(self, sid):
        st, _, o = call(self.lb, "DELETE", "/e2b/sandboxes/" + sid, key=USERS["alice"])
        assert st in (200, 204), (sid, st, o)

    def test_3_mount_another_nodes_volume(self):
        alice = USERS["alice"]
        vid, name, _ = self.vol["n2"]
        body = {"templateID": "base", "timeout": 120, "volumeMounts": [{"name": name, "path": "/mnt/v"}]}
        landed = set()
        # through the balancer: round robin sends one create to each node's web
        for _ in range(2):
            st, h, o = call(self.lb, "POST", "/e2b/sandboxes", body, alice)
            assert st == 201 and o["sandboxID"].startswith("n2."), ("made on the volume's node", st, o)
            landed.add(h.get("x-llmbox-web"))
            try:
                self.sandbox_reads(o["sandboxID"], "hello from n2\n")
            finally:
                self.kill(o["sandboxID"])
        print("# volume_cluster/3: creates through the balancer landed on %s" % sorted(landed), file=sys.stderr)
        # n1's web directly, which forwards to n2 through the balancer
        st, h, o = call(self.s1, "POST", "/e2b/sandboxes", body, alice)
        assert st == 201 and o["sandboxID"].startswith("n2."), ("forwarded to the holder", st, o)
        try:
            self.sandbox_reads(o["sandboxID"], "hello from n2\n")
            st, _, info = call(self.lb, "GET", "/e2b/sandboxes/" + o["sandboxID"], key=alice)
            assert st == 200 and info["volumeMounts"] == [{"name": name, "path": "/mnt/v"}], info
        finally:
            self.kill(o["sandboxID"])

    def test_4_no_forward_without_cluster_url_twice_or_across_nodes(self):
        alice = USERS["alice"]
        n1name, n2name = self.vol["n1"][1], self.vol["n2"][1]
        one = {"templateID": "base", "volumeMounts": [{"name": n1name, "path": "/mnt/v"}]}
        st, h, o = call(self.s2, "POST", "/e2b/sandboxes", one, alice)
        assert st == 421 and h.get("x-llmbox-node") == "n1" and "cluster_url" in o["message"], (st, h, o)
        two = {"templateID": "base", "volumeMounts": [{"name": n2name, "path": "/mnt/v"}]}
        st, h, o = call(self.s1, "POST", "/e2b/sandboxes", two, alice, {"X-Llmbox-Node": "n1"})
        assert st == 421 and "not forwarded again" in o["message"], (st, o)
        both = {"templateID": "base", "volumeMounts": [{"name": n1name, "path": "/mnt/a"},
                                                       {"name": n2name, "path": "/mnt/b"}]}
        for target in (self.s1, self.s2, self.lb):
            st, _, o = call(target, "POST", "/e2b/sandboxes", both, alice)
            assert st == 400 and "different nodes" in o["message"], (st, o)
        st, _, o = call(self.lb, "POST", "/e2b/sandboxes", two, USERS["bob"])
        assert st == 400 and "no volume named" in o["message"], ("bob mounts alice's by name", st, o)

    def test_5_names_are_one_per_key_across_nodes(self):
        alice, bob = USERS["alice"], USERS["bob"]
        for node, (vid, name, _) in sorted(self.vol.items()):
            for target in (self.other(node), self.web[node], self.lb):
                st, _, o = call(target, "POST", "/e2b/volumes", {"name": name}, alice)
                assert st == 409 and "already" in o["message"], (node, st, o)
        st, _, o = call(self.lb, "POST", "/e2b/volumes", {"name": self.vol["n1"][1]}, bob)
        assert st == 201, ("another key may use the name", st, o)
        st, _, _ = call(self.lb, "DELETE", "/e2b/volumes/" + o["volumeID"], key=bob)
        assert st == 204, st

    def test_6_stale_rows_dropped_destroy_everywhere(self):
        alice = USERS["alice"]
        ghost = "n1." + os.urandom(16).hex()
        self.pg.sql("INSERT INTO e2b_volumes(id, owner, name, node, created_ms) VALUES('%s', 'alice', 'ghost-%s',"
                    " 'n1', 1)" % (ghost, TAG), db=self.db)
        st, _, o = call(self.s1, "GET", "/e2b/volumes", key=alice)
        assert st == 200 and ghost not in ids(o), ("n1's sandboxd has no such volume", o)
        st, _, o = call(self.s2, "GET", "/e2b/volumes", key=alice)
        assert st == 200 and ghost not in ids(o), ("its row was dropped by n1's list", o)
        # a stale row of n1's does not keep its name taken on n1
        ghost = "n1." + os.urandom(16).hex()
        self.pg.sql("INSERT INTO e2b_volumes(id, owner, name, node, created_ms) VALUES('%s', 'alice', 'ghost2-%s',"
                    " 'n1', 1)" % (ghost, TAG), db=self.db)
        st, _, o = call(self.s1, "POST", "/e2b/volumes", {"name": "ghost2-" + TAG}, alice)
        assert st == 201 and o["volumeID"] != ghost, ("a name only a stale row held", st, o)
        st, _, _ = call(self.lb, "DELETE", "/e2b/volumes/" + o["volumeID"], key=alice)
        assert st == 204, st
        for node, (vid, _, _) in sorted(self.vol.items()):
            st, h, _ = call(self.lb, "DELETE", "/e2b/volumes/" + vid, key=alice)
            assert st == 204 and h.get("x-llmbox-web") == node, (st, h)
        for target in (self.s1, self.s2, self.lb):
            st, _, o = call(target, "GET", "/e2b/volumes", key=alice)
            assert st == 200 and not ids(o), ("none left", o)
        for node, (vid, _, _) in sorted(self.vol.items()):
            st, _, o = call(self.lb, "GET", "/e2b/volumes/" + vid, key=alice)
            assert st == 404, (st, o)

    def test_7_e2b_sdk_through_the_balancer(self):
        if not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "e2b")):
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=E2B_DIR, check=True,
                           timeout=600)
        base = "http://127.0.0.1:%d/e2b" % self.lb.port
        env = dict(os.environ, E2B_API_URL=base, E2B_VOLUME_API_URL=base, E2B_SANDBOX_URL=base + "/sandbox",
                   E2B_API_KEY=USERS["alice"], LLMBOX_VOLUME_NODE="n2")
        p = subprocess.run(["node", "sdk_volume_cluster.mjs"], cwd=E2B_DIR, env=env, capture_output=True, text=True,
                           timeout=300)
        sys.stderr.write(p.stdout)
        assert p.returncode == 0 and "FAIL" not in p.stdout, (p.stdout[-3000:], p.stderr[-2000:])


def main():
    rep = Reporter()
    if not image_ready():
        print("SKIP volume_cluster: the sandbox image is not built (make image)")
        return rep.done()
    if os.geteuid() != 0 or not shutil.which("haproxy") or pg_server.missing():
        print("SKIP volume_cluster: needs root (sandboxd), haproxy and PostgreSQL (make deps)")
        return rep.done()
    lb_port = stack.free_port()

    def web_env(n, fwd):
        e = {"LLMBOX_SANDBOX_API_TOKEN": TOKEN, "LLMBOX_NODE_NAME": n, "LLMBOX_SANDBOX_API_MAX": "16",
             "LLMBOX_E2B_DOMAIN": "e2b.test"}
        if fwd:
            e["LLMBOX_CLUSTER_URL"] = "http://127.0.0.1:%d" % lb_port
        return e

    with pg_server.PgServer() as pg:
        db = "volcluster"
        pg.sql('CREATE DATABASE "%s"' % db)
        url = pg.url.replace("/%s?" % pg.db, "/%s?" % db)
        with Stack(model=False, web_env=web_env("n1", True), db_url=url, conf=USERS_CONF) as s1, \
                Stack(model=False, web_env=web_env("n2", False), db_url=url, conf=USERS_CONF) as s2:
            # HAProxy on the port n1's cluster_url names
            free = stack.free_port
            stack.free_port = lambda: lb_port
            try:
                lbp, port, lbdir = test_stateless_webs.haproxy_start(s1, s2)
            finally:
                stack.free_port = free
            try:
                run_tests(rep, T(LB(port, TOKEN), s1, s2, pg, db))
            finally:
                lbp.terminate()
                lbp.wait(10)
                shutil.rmtree(lbdir, ignore_errors=True)
    return rep.done()


if __name__ == "__main__":
    main()
