#!/usr/bin/env python3
"""Offline check of deploy/k8s (no cluster ran these manifests here; this is what can be checked
without one): every document parses and has its required fields; selectors match their pod
templates; every image is one that deploy/containers builds, at the project's version; container
ports are the ones the image recipes EXPOSE; probes hit /healthz on a declared port; Services,
ServiceMonitors and PodMonitors reach declared ports; every Secret, ConfigMap and key referenced
exists; the workers ask for nvidia.com/gpu and drain in preStop; and the config files in the
ConfigMaps pass `kb-coordinator --check-config` / `kb-worker --check-config`.

usage: k8s_check.py K8S_DIR CONTAINERS_DIR CMAKELISTS KB_COORDINATOR KB_WORKER
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml

errors = []


def check(condition, message):
    if not condition:
        errors.append(message)
    return condition


def load(k8s_dir):
    docs = []
    for path in sorted(glob.glob(os.path.join(k8s_dir, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                where = f"{os.path.basename(path)}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
                for field in ("apiVersion", "kind", "metadata"):
                    check(field in doc, f"{where}: no {field}")
                check("name" in doc.get("metadata", {}), f"{where}: no metadata.name")
                if doc.get("kind") != "Namespace":
                    check(doc["metadata"].get("namespace") == "kbfleet", f"{where}: not in namespace kbfleet")
                docs.append((where, doc))
    return docs


def recipes(containers_dir, cmakelists):
    env = dict(line.strip().split("=", 1) for line in open(os.path.join(containers_dir, "images.env"))
               if "=" in line and not line.startswith("#"))
    version = re.search(r"project\(kbfleet VERSION ([0-9.]+)", open(cmakelists).read()).group(1)
    exposed = {}
    for what in ("coordinator", "worker", "postgres"):
        text = open(os.path.join(containers_dir, f"Containerfile.{what}")).read()
        ports = set()
        for line in re.findall(r"^EXPOSE (.*)$", text, re.M):
            ports |= {int(p) for p in line.split()}
        exposed[env[f"KB_IMAGE_{what.upper()}"]] = ports
    return env, version, exposed


def pod_spec(doc):
    if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet"):
        return doc["spec"]["template"]["spec"]
    return None


def main():
    k8s_dir, containers_dir, cmakelists, coordinator_bin, worker_bin = sys.argv[1:6]
    docs = load(k8s_dir)
    env, version, exposed = recipes(containers_dir, cmakelists)
    by_kind = {}
    for where, doc in docs:
        by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = (where, doc)
    secrets = {n: set(d.get("stringData", {})) | set(d.get("data", {})) for n, (_, d) in by_kind.get("Secret", {}).items()}
    configmaps = {n: d.get("data", {}) for n, (_, d) in by_kind.get("ConfigMap", {}).items()}
    workloads = {}
    for kind in ("Deployment", "StatefulSet", "DaemonSet"):
        for name, (where, doc) in by_kind.get(kind, {}).items():
            labels = doc["spec"]["template"]["metadata"].get("labels", {})
            match = doc["spec"]["selector"]["matchLabels"]
            check(match.items() <= labels.items(), f"{where}: selector does not match the pod labels")
            spec = pod_spec(doc)
            ports = {}
            for c in spec.get("initContainers", []) + spec["containers"]:
                for field in ("name", "image"):
                    check(field in c, f"{where}: a container has no {field}")
                repo, _, tag = c["image"].rpartition("/")[2].partition(":")
                check(repo in exposed, f"{where}: image {c['image']} is not built by deploy/containers")
                check(tag == version, f"{where}: image {c['image']} is not at version {version}")
                for p in c.get("ports", []):
                    ports[p["name"]] = p["containerPort"]
                    check(p["containerPort"] in exposed.get(repo, set()),
                          f"{where}: port {p['containerPort']} is not EXPOSEd by the {repo} recipe")
                for probe in ("livenessProbe", "readinessProbe"):
                    if probe in c and "httpGet" in c[probe]:
                        check(c[probe]["httpGet"]["path"] == "/healthz", f"{where}: {probe} is not on /healthz")
                        check(c[probe]["httpGet"]["port"] in ports, f"{where}: {probe} port is not declared")
                for e in c.get("env", []):
                    ref = e.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        check(ref["key"] in secrets.get(ref["name"], set()), f"{where}: secret {ref['name']}/{ref['key']} missing")
                vols = {v["name"]: v for v in spec.get("volumes", [])}
                for m in c.get("volumeMounts", []):
                    v = vols.get(m["name"])
                    if v is None:
                        check(doc["kind"] == "StatefulSet", f"{where}: volume {m['name']} is not declared")
                        continue
                    if "configMap" in v:
                        cm = v["configMap"]["name"]
                        check(cm in configmaps, f"{where}: ConfigMap {cm} missing")
                        if "subPath" in m:
                            check(m["subPath"] in configmaps.get(cm, {}), f"{where}: ConfigMap {cm} has no {m['subPath']}")
                    if "secret" in v:
                        check(v["secret"]["secretName"] in secrets, f"{where}: Secret {v['secret']['secretName']} missing")
            for c in spec["containers"]:
                check("livenessProbe" in c or "readinessProbe" in c, f"{where}: container {c['name']} has no probe")
            workloads[name] = (labels, ports, doc)
    ds = by_kind.get("DaemonSet", {}).get("kbfleet-worker")
    if check(ds is not None, "no kbfleet-worker DaemonSet"):
        where, doc = ds
        spec = pod_spec(doc)
        worker = spec["containers"][0]
        check("nvidia.com/gpu" in worker.get("resources", {}).get("limits", {}), f"{where}: no nvidia.com/gpu limit")
        check("preStop" in worker.get("lifecycle", {}), f"{where}: no preStop drain")
        check(spec.get("nodeSelector") and spec.get("tolerations"), f"{where}: no nodeSelector/tolerations")
    check("kbfleet-coordinator" in by_kind.get("Deployment", {}), "no kbfleet-coordinator Deployment")
    check("kbfleet-postgres" in by_kind.get("StatefulSet", {}), "no kbfleet-postgres StatefulSet")
    services = by_kind.get("Service", {})
    for name, (where, doc) in services.items():
        targets = [ports for labels, ports, _ in workloads.values() if doc["spec"]["selector"].items() <= labels.items()]
        if check(len(targets) == 1, f"{where}: selector matches {len(targets)} workloads"):
            for p in doc["spec"]["ports"]:
                check(p["targetPort"] in targets[0], f"{where}: targetPort {p['targetPort']} not declared by its pods")
    for kind, port_field in (("ServiceMonitor", "endpoints"), ("PodMonitor", "podMetricsEndpoints")):
        for name, (where, doc) in by_kind.get(kind, {}).items():
            sel = doc["spec"]["selector"]["matchLabels"]
            if kind == "ServiceMonitor":
                hits = [d for _, d in services.values() if sel.items() <= d["metadata"].get("labels", {}).items()]
                names = [{p["name"] for p in d["spec"]["ports"]} for d in hits]
            else:
                names = [set(ports) for labels, ports, _ in workloads.values() if sel.items() <= labels.items()]
            if check(len(names) == 1, f"{where}: selects {len(names)} targets"):
                for ep in doc["spec"][port_field]:
                    check(ep["port"] in names[0], f"{where}: port {ep['port']} not declared")
    # The config files in the ConfigMaps, checked by the programs that read them.
    for cm, key, program in (("kbfleet-coordinator", "coordinator.yaml", coordinator_bin),
                             ("kbfleet-worker", "worker.yaml", worker_bin)):
        text = configmaps.get(cm, {}).get(key)
        if not check(text is not None, f"ConfigMap {cm} has no {key}"):
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(text)
            f.flush()
            run = subprocess.run([program, "--config", f.name, "--check-config"], capture_output=True, text=True)
            check(run.returncode == 0, f"ConfigMap {cm}/{key}: {run.stderr.strip()}")
    for e in errors:
        print("FAIL:", e)
    print(f"k8s: {len(docs)} documents checked, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
