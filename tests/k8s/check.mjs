// Checks rendered Kubernetes manifests (`kubectl kustomize deploy/k8s/...`)
// against Kubernetes' own schemas and llmbox's rules. Used by
// tests/integration/test_k8s.py; by hand:
//     kubectl kustomize deploy/k8s/overlays/example > /tmp/k.yaml
//     node tests/k8s/check.mjs /tmp/k.yaml
// Several files may be given (one compile of the types for all of them).
// Prints one line per problem, "FILE: doc N (Kind/name): what", and
// "FILE: ok, N objects" for a clean file; exits 1 when any file has a
// problem. --json prints {"FILE": [problems]} instead.
//
// Three layers, each able to fail on its own:
//   1. schema: every object is validated with kubernetes-models' validator
//      for its apiVersion and kind (compiled by ajv from the Kubernetes
//      OpenAPI spec: required fields, types, enums, formats). An object of
//      a kind it does not know is a problem, never skipped.
//   2. fields: the OpenAPI schemas allow unknown fields (the API server
//      drops them silently, so a misspelt `readinesProbe` would just never
//      probe). Every object is written as a TypeScript literal of its
//      model's type and compiled: excess-property checks find any field
//      the type does not have, at any depth (also missing required ones).
//   3. rules: what docs/OPERATIONS.md ("Kubernetes") promises, below.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import ts from "typescript";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");

// The capabilities sandboxd gets: the table in docs/OPERATIONS.md's
// "sandboxd's privileges" (rows "| `CAP_X` | why |"). The rendered
// DaemonSet must add exactly these to the sandboxd container, and these
// plus FSETID and SYS_CHROOT to the image-building init container.
// LLMBOX_K8S_OPERATIONS_MD names another copy (the test's, with a row gone).
function documentedCaps() {
    const doc = fs.readFileSync(process.env.LLMBOX_K8S_OPERATIONS_MD || path.join(ROOT, "docs", "OPERATIONS.md"), "utf8");
    const start = doc.indexOf("### sandboxd's privileges");
    if (start < 0)
        throw new Error("docs/OPERATIONS.md has no section \"### sandboxd's privileges\"");
    const rest = doc.slice(start + 10);
    const end = rest.search(/\n#{2,3} /);
    const caps = [];
    for (const m of (end < 0 ? rest : rest.slice(0, end)).matchAll(/^\| `CAP_([A-Z_]+)` \|/gm))
        caps.push(m[1]);
    if (caps.length === 0)
        throw new Error("docs/OPERATIONS.md's \"sandboxd's privileges\" lists no capability rows");
    return caps.sort();
}

// The settings that are secrets: never in a ConfigMap, never a literal env.
const SECRET_KEYS = ["db_url", "s3_access_key", "s3_secret_key", "sandbox_api_token"];
const SECRET_ENV = ["LLMBOX_DB_URL", "LLMBOX_S3_ACCESS_KEY", "LLMBOX_S3_SECRET_KEY", "LLMBOX_SANDBOX_API_TOKEN"];

// "v1" (the core group) is kubernetes-models/v1, "apps/v1" kubernetes-models/apps/v1
const modulePath = (apiVersion) => `kubernetes-models/${apiVersion}`;

const label = (o) => `${o?.kind ?? "?"}/${o?.metadata?.name ?? "?"}`;

async function schemaProblems(objs) {
    const out = [];
    for (const [i, o] of objs.entries()) {
        if (!o || typeof o !== "object" || typeof o.apiVersion !== "string" || typeof o.kind !== "string") {
            out.push(`doc ${i}: not a Kubernetes object (no apiVersion and kind)`);
            continue;
        }
        let mod;
        try {
            mod = await import(modulePath(o.apiVersion));
        } catch {
            out.push(`doc ${i} (${label(o)}): no schema for apiVersion ${o.apiVersion}`);
            continue;
        }
        const Cls = mod[o.kind];
        if (typeof Cls !== "function") {
            out.push(`doc ${i} (${label(o)}): no schema for kind ${o.kind} in ${o.apiVersion}`);
            continue;
        }
        const copy = structuredClone(o);
        // Secret data as kustomize 5 writes it, folded over lines: the API
        // server's base64 decoder (Go's) skips the newlines, so do the same
        if (o.kind === "Secret" && copy.data && typeof copy.data === "object")
            for (const k of Object.keys(copy.data))
                if (typeof copy.data[k] === "string") copy.data[k] = copy.data[k].replace(/[\r\n]/g, "");
        try {
            new Cls(copy).validate();
        } catch (e) {
            out.push(`doc ${i} (${label(o)}): schema: ${String(e.message ?? e).split("\n").join("; ")}`);
        }
    }
    return out;
}

// Writes every object of every file as a typed literal into one .ts file
// per input, compiles them together, and maps each diagnostic back to its
// file and document.
function fieldProblems(files) {
    const dir = path.join(HERE, ".build");
    fs.mkdirSync(dir, { recursive: true });
    const roots = [], where = new Map(), out = new Map();
    files.forEach(({ name, objs }, fi) => {
        out.set(name, []);
        const lines = [];
        const spans = [];
        objs.forEach((o, i) => {
            if (!o || typeof o.apiVersion !== "string" || typeof o.kind !== "string" || !/^[A-Za-z]+$/.test(o.kind))
                return;
            const from = modulePath(o.apiVersion) + "/" + o.kind;
            const first = lines.length + 1;
            lines.push(`import type { I${o.kind} as T${i} } from ${JSON.stringify(from)};`);
            lines.push(`export const doc${i}: T${i} = ${JSON.stringify(o, null, 1)};`);
            const last = lines.join("\n").split("\n").length;
            spans.push({ i, first, last, label: label(o) });
        });
        const f = path.join(dir, `f${fi}.ts`);
        fs.writeFileSync(f + ".tmp", lines.join("\n") + "\n");
        fs.renameSync(f + ".tmp", f);
        roots.push(f);
        where.set(path.resolve(f), { name, spans });
    });
    const program = ts.createProgram(roots, {
        strict: true, noEmit: true, skipLibCheck: true, types: [],
        module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
    });
    for (const d of ts.getPreEmitDiagnostics(program)) {
        const msg = ts.flattenDiagnosticMessageText(d.messageText, "; ");
        const w = d.file && where.get(path.resolve(d.file.fileName));
        if (!w) {
            // a problem of the setup itself (a type that cannot be found):
            // reported against every file, so nothing passes by accident
            for (const list of out.values())
                list.push(`fields: ${msg}`);
            continue;
        }
        const line = d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1;
        const s = w.spans.find((x) => line >= x.first && line <= x.last);
        const text = d.file.text.split("\n")[line - 1].trim();
        out.get(w.name).push(`doc ${s ? s.i : "?"} (${s ? s.label : "?"}): fields: ${msg} (at ${text.slice(0, 80)})`);
    }
    return out;
}

// ---- llmbox's rules -------------------------------------------------------

const podSpec = (o) => o?.spec?.template?.spec;
const allContainers = (ps) => [...(ps?.initContainers ?? []), ...(ps?.containers ?? [])];
const matches = (sel, labels) =>
    sel && Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels?.[k] === v);

function ruleProblems(objs) {
    const out = [];
    const byKind = (k) => objs.filter((o) => o?.kind === k);
    const web = byKind("Deployment").find((o) => o.metadata?.name?.endsWith("llmbox-web"));
    const node = byKind("DaemonSet").find((o) => o.metadata?.name?.endsWith("llmbox-node"));
    if (!web) out.push("rules: no Deployment llmbox-web");
    if (!node) out.push("rules: no DaemonSet llmbox-node");

    // no secret in a ConfigMap: neither a secret setting in llmbox.conf nor
    // any value of a Secret anywhere in a ConfigMap's data
    const secretValues = [];
    for (const s of byKind("Secret")) {
        for (const v of Object.values(s.data ?? {}))
            secretValues.push(Buffer.from(String(v), "base64").toString("utf8").trim());
        for (const v of Object.values(s.stringData ?? {}))
            secretValues.push(String(v).trim());
    }
    for (const cm of byKind("ConfigMap")) {
        for (const [k, v] of Object.entries(cm.data ?? {})) {
            for (const key of SECRET_KEYS) {
                if (new RegExp(`^\\s*${key}\\s*=`, "m").test(String(v)))
                    out.push(`${label(cm)}: rules: ${k} sets ${key}, a secret: it belongs in the Secret llmbox-secrets`);
            }
            for (const sv of secretValues) {
                if (sv.length >= 8 && String(v).includes(sv))
                    out.push(`${label(cm)}: rules: ${k} holds the value of a Secret`);
            }
        }
    }

    for (const w of [...byKind("Deployment"), ...byKind("DaemonSet")]) {
        const ps = podSpec(w);
        for (const c of allContainers(ps)) {
            for (const e of c.env ?? []) {
                if (SECRET_ENV.includes(e.name) && e.value !== undefined)
                    out.push(`${label(w)}: rules: container ${c.name} sets ${e.name} as a literal: use secretKeyRef`);
                const ref = e.valueFrom?.secretKeyRef;
                if (ref) {
                    const s = byKind("Secret").find((x) => x.metadata?.name === ref.name);
                    if (byKind("Secret").length > 0 && !s)
                        out.push(`${label(w)}: rules: ${c.name}'s ${e.name} names Secret ${ref.name}, which is not rendered`);
                    else if (s && !((s.data ?? {})[ref.key] !== undefined || (s.stringData ?? {})[ref.key] !== undefined))
                        out.push(`${label(w)}: rules: ${c.name}'s ${e.name} names key ${ref.key}, which Secret ${ref.name} lacks`);
                }
            }
            // every container is bounded: requests, and a memory limit
            if (!c.resources?.requests || !c.resources?.limits?.memory)
                out.push(`${label(w)}: rules: container ${c.name} has no resource requests or no memory limit`);
            if (c.securityContext?.privileged === true)
                out.push(`${label(w)}: rules: container ${c.name} is privileged`);
            // what the API server refuses and no schema says
            const add = c.securityContext?.capabilities?.add ?? [];
            if (c.securityContext?.allowPrivilegeEscalation === false &&
                (c.securityContext?.privileged === true || add.includes("SYS_ADMIN") || add.includes("CAP_SYS_ADMIN")))
                out.push(`${label(w)}: rules: container ${c.name}: allowPrivilegeEscalation false with SYS_ADMIN ` +
                         `or privileged is refused by the API server`);
        }
        for (const f of ["hostPID", "hostNetwork", "hostIPC"])
            if (ps?.[f] === true)
                out.push(`${label(w)}: rules: ${f} is set`);
        for (const v of ps?.volumes ?? []) {
            if (v.configMap && !byKind("ConfigMap").some((x) => x.metadata?.name === v.configMap.name))
                out.push(`${label(w)}: rules: volume ${v.name} names ConfigMap ${v.configMap.name}, which is not rendered`);
        }
    }

    const nonRoot = (w, ps, c) => {
        const sc = c.securityContext ?? {}, pc = ps.securityContext ?? {};
        const bad = [];
        if ((sc.runAsNonRoot ?? pc.runAsNonRoot) !== true) bad.push("runAsNonRoot is not true");
        const uid = sc.runAsUser ?? pc.runAsUser;
        if (uid === undefined || uid === 0) bad.push("runAsUser is not a non-zero uid");
        if (sc.allowPrivilegeEscalation !== false) bad.push("allowPrivilegeEscalation is not false");
        if (sc.readOnlyRootFilesystem !== true) bad.push("the root filesystem is not read-only");
        if (!(sc.capabilities?.drop ?? []).includes("ALL")) bad.push("capabilities do not drop ALL");
        if ((sc.capabilities?.add ?? []).length) bad.push(`capabilities add ${sc.capabilities.add.join(",")}`);
        for (const b of bad) out.push(`${label(w)}: rules: container ${c.name}: ${b}`);
    };

    if (web) {
        const ps = podSpec(web);
        for (const c of allContainers(ps)) nonRoot(web, ps, c);
        for (const c of ps?.containers ?? []) {
            if (!c.livenessProbe) out.push(`${label(web)}: rules: container ${c.name} has no livenessProbe`);
        }
        if (!(ps?.containers ?? []).some((c) => c.readinessProbe?.httpGet?.path === "/api/health"))
            out.push(`${label(web)}: rules: no container has a readinessProbe on /api/health`);
        const pdbs = byKind("PodDisruptionBudget");
        const labels = web.spec?.template?.metadata?.labels;
        const pdb = pdbs.find((p) => matches(p.spec?.selector?.matchLabels, labels));
        if (!pdb) out.push(`${label(web)}: rules: no PodDisruptionBudget selects the web pods`);
        const nodeLabels = node?.spec?.template?.metadata?.labels;
        for (const p of pdbs) {
            if (nodeLabels && matches(p.spec?.selector?.matchLabels, nodeLabels))
                out.push(`${label(p)}: rules: the PodDisruptionBudget also selects the node pods`);
        }
        const replicas = web.spec?.replicas ?? 1;
        if (pdb && typeof pdb.spec?.minAvailable === "number" && pdb.spec.minAvailable >= replicas)
            out.push(`${label(pdb)}: rules: minAvailable ${pdb.spec.minAvailable} >= replicas ${replicas}: ` +
                     `a drain could never evict a web`);
    }

    if (node) {
        const ps = podSpec(node);
        const caps = documentedCaps();
        const sd = allContainers(ps).find((c) => c.name === "sandboxd");
        const img = allContainers(ps).find((c) => c.name === "image");
        const got = (c) => [...(c?.securityContext?.capabilities?.add ?? [])].sort();
        const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
        if (!sd) {
            out.push(`${label(node)}: rules: no sandboxd container`);
        } else {
            if (!same(got(sd), caps))
                out.push(`${label(node)}: rules: sandboxd adds capabilities [${got(sd)}], the documented list is [${caps}]`);
            if (!(sd.securityContext?.capabilities?.drop ?? []).includes("ALL"))
                out.push(`${label(node)}: rules: sandboxd does not drop ALL before adding its list`);
            if (!sd.startupProbe || !sd.livenessProbe)
                out.push(`${label(node)}: rules: sandboxd has no startupProbe or livenessProbe`);
        }
        if (img && !same(got(img), [...caps, "FSETID", "SYS_CHROOT"].sort()))
            out.push(`${label(node)}: rules: the image builder adds [${got(img)}], documented: [${caps}] + FSETID, SYS_CHROOT`);
        for (const c of allContainers(ps)) {
            if (c.name !== "sandboxd" && c.name !== "image") nonRoot(node, ps, c);
        }
        for (const c of ps?.containers ?? []) {
            if (!c.livenessProbe) out.push(`${label(node)}: rules: container ${c.name} has no livenessProbe`);
        }
        const nc = (ps?.containers ?? []).find((c) => c.name === "node");
        if (!nc || nc.readinessProbe?.httpGet?.path !== "/healthz" || nc.livenessProbe?.httpGet?.path !== "/healthz")
            out.push(`${label(node)}: rules: the node container has no readiness and liveness probes on /healthz`);
    }
    return out;
}

async function main() {
    const args = process.argv.slice(2);
    const json = args.includes("--json");
    const names = args.filter((a) => a !== "--json");
    if (names.length === 0) {
        console.error("usage: node tests/k8s/check.mjs [--json] RENDERED.yaml...");
        process.exit(2);
    }
    const files = [];
    const result = {};
    for (const name of names) {
        result[name] = [];
        let objs = [];
        try {
            const docs = YAML.parseAllDocuments(fs.readFileSync(name, "utf8"), { maxAliasCount: 100 });
            for (const d of docs) {
                if (d.errors.length) throw new Error(d.errors[0].message);
                const v = d.toJS();
                if (v !== null) objs.push(v);
            }
        } catch (e) {
            result[name].push(`cannot read: ${e.message}`);
            objs = [];
        }
        if (objs.length === 0 && result[name].length === 0) result[name].push("no objects");
        files.push({ name, objs });
    }
    const fields = fieldProblems(files);
    for (const { name, objs } of files) {
        result[name].push(...(await schemaProblems(objs)));
        result[name].push(...(fields.get(name) ?? []));
        try {
            result[name].push(...ruleProblems(objs));
        } catch (e) {
            result[name].push(`rules: ${e.message}`);
        }
    }
    let bad = 0;
    if (json) {
        console.log(JSON.stringify(result));
    }
    for (const { name, objs } of files) {
        if (result[name].length) bad++;
        if (json) continue;
        for (const p of result[name]) console.log(`${name}: ${p}`);
        if (!result[name].length) console.log(`${name}: ok, ${objs.length} objects`);
    }
    process.exit(bad ? 1 : 0);
}

await main();
