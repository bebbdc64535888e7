#!/usr/bin/env python3
"""Offline check of the farm's deployment files: deploy/farm/compose.yaml and deploy/k8s/*.yaml.

No cluster or Docker is needed: each file must parse as YAML, and a schema-light check asks what
a deployment needs to work: every object has apiVersion, kind and a DNS-1123 name; a
Deployment's selector matches its pod labels, its containers have names and images, coopd has
readiness and liveness probes, and the ConfigMaps and ports it names exist; a Service selects
some Deployment's pods and targets a port they declare; COOPD_REMOTE_CACHE points at a Redis
Service (or compose service) by a redis:// or redis-cluster:// URL; Redis evicts allkeys-lru; the
compose file runs at least two coopd replicas listening on TCP.

  validate-manifests.py              check the files; exit 1 naming each problem
  validate-manifests.py --self-test  also check that broken copies of them are refused
"""
import copy
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.abspath(__file__))
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
URL = re.compile(r"^redis(-cluster)?://([^@/]*@)?([^/?]+)(/[^?]*)?(\?.*)?$")


def remote_hosts(url, problems, where):
    m = URL.match(url or "")
    if not m:
        problems.append(f"{where}: COOPD_REMOTE_CACHE {url!r} is not redis://HOST[:PORT][/DB] "
                        "or redis-cluster://HOST:PORT,...")
        return []
    hosts = []
    for hp in m.group(3).split(","):
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit():
            problems.append(f"{where}: {hp!r} in COOPD_REMOTE_CACHE must be HOST:PORT")
        hosts.append(host)
    return hosts


def check_compose(doc, problems, where="compose.yaml"):
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        problems.append(f"{where}: no services")
        return
    for name, svc in services.items():
        if not isinstance(svc, dict) or not (svc.get("image") or svc.get("build")):
            problems.append(f"{where}: service {name} has neither image nor build")
    redis = services.get("redis", {})
    if "allkeys-lru" not in " ".join(map(str, redis.get("command", []))):
        problems.append(f"{where}: redis must run with --maxmemory-policy allkeys-lru")
    coopd = services.get("coopd")
    if not isinstance(coopd, dict):
        problems.append(f"{where}: no coopd service")
        return
    replicas = (coopd.get("deploy") or {}).get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 2:
        problems.append(f"{where}: coopd needs deploy.replicas >= 2 for a farm, got {replicas!r}")
    if "--listen" not in coopd.get("command", []):
        problems.append(f"{where}: coopd must --listen on TCP so clients reach every replica")
    env = coopd.get("environment") or {}
    for host in remote_hosts(env.get("COOPD_REMOTE_CACHE"), problems, where):
        if host not in services:
            problems.append(f"{where}: COOPD_REMOTE_CACHE names host {host!r}, not a service")
    test = (coopd.get("healthcheck") or {}).get("test")
    if not isinstance(test, list) or not test:
        problems.append(f"{where}: coopd has no healthcheck test")


def check_k8s(docs, problems):
    by_kind = {}
    for where, d in docs:
        if not isinstance(d, dict):
            problems.append(f"{where}: not a mapping")
            continue
        for field in ("apiVersion", "kind", "metadata"):
            if field not in d:
                problems.append(f"{where}: missing {field}")
        name = (d.get("metadata") or {}).get("name", "")
        if not DNS1123.match(str(name)):
            problems.append(f"{where}: metadata.name {name!r} is not a DNS-1123 label")
        by_kind.setdefault(d.get("kind"), []).append((where, d))
    configmaps = {d["metadata"]["name"]: d for _, d in by_kind.get("ConfigMap", [])}
    services = {d["metadata"]["name"] for _, d in by_kind.get("Service", [])}
    deployments = by_kind.get("Deployment", [])
    for where, cm in configmaps.items():
        for k, v in (cm.get("data") or {}).items():
            if not isinstance(v, str):
                problems.append(f"ConfigMap {where}: data.{k} must be a string")
        if "COOPD_REMOTE_CACHE" in (cm.get("data") or {}):
            for host in remote_hosts(cm["data"]["COOPD_REMOTE_CACHE"], problems, f"ConfigMap {where}"):
                if host.split(".")[0] not in services:
                    problems.append(f"ConfigMap {where}: COOPD_REMOTE_CACHE host {host!r} is no Service")
    pods = []  # (labels, container ports by name and number)
    for where, dep in deployments:
        if dep.get("apiVersion") != "apps/v1":
            problems.append(f"{where}: a Deployment is apps/v1")
        spec = dep.get("spec") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        tmpl = spec.get("template") or {}
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        if not match or any(labels.get(k) != v for k, v in match.items()):
            problems.append(f"{where}: selector.matchLabels {match} does not match the pod labels")
        pod = tmpl.get("spec") or {}
        containers = pod.get("containers") or []
        if not containers:
            problems.append(f"{where}: no containers")
        ports = set()
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for c in containers:
            if not c.get("name") or not c.get("image"):
                problems.append(f"{where}: a container needs a name and an image")
            for p in c.get("ports") or []:
                ports.update({p.get("name"), p.get("containerPort")})
            for ref in c.get("envFrom") or []:
                cm = (ref.get("configMapRef") or {}).get("name")
                if cm is not None and cm not in configmaps:
                    problems.append(f"{where}: envFrom names ConfigMap {cm!r}, which is not defined")
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes:
                    problems.append(f"{where}: volumeMount {m.get('name')!r} has no volume")
            if c.get("name") == "coopd":
                for probe in ("readinessProbe", "livenessProbe"):
                    if not c.get(probe):
                        problems.append(f"{where}: container coopd has no {probe}")
        for v in volumes.values():
            cm = (v.get("configMap") or {}).get("name")
            if cm is not None and cm not in configmaps:
                problems.append(f"{where}: volume {v.get('name')} names ConfigMap {cm!r}, not defined")
        pods.append((labels, ports))
    for where, svc in by_kind.get("Service", []):
        spec = svc.get("spec") or {}
        sel = spec.get("selector") or {}
        matching = [p for labels, p in pods if sel and all(labels.get(k) == v for k, v in sel.items())]
        if not matching:
            problems.append(f"{where}: selector {sel} selects no Deployment's pods")
            continue
        for p in spec.get("ports") or []:
            if "port" not in p:
                problems.append(f"{where}: a port needs port")
            target = p.get("targetPort", p.get("port"))
            if not any(target in ports for ports in matching):
                problems.append(f"{where}: targetPort {target!r} is no container port of its pods")


def load():
    with open(os.path.join(ROOT, "farm", "compose.yaml")) as f:
        compose = yaml.safe_load(f)
    k8s = []
    kdir = os.path.join(ROOT, "k8s")
    for name in sorted(os.listdir(kdir)):
        if name.endswith(".yaml"):
            with open(os.path.join(kdir, name)) as f:
                for i, d in enumerate(yaml.safe_load_all(f)):
                    if d is not None:
                        kind = d.get("kind", "?") if isinstance(d, dict) else "?"
                        k8s.append((f"k8s/{name}[{i}] {kind}", d))
    return compose, k8s


def problems_of(compose, k8s):
    problems = []
    check_compose(compose, problems)
    check_k8s(k8s, problems)
    return problems


def self_test(compose, k8s):
    """Each broken copy must be refused, else the check above checks nothing."""
    def k8s_with(kind, name, edit):
        docs = copy.deepcopy(k8s)
        for _, d in docs:
            if d.get("kind") == kind and d["metadata"]["name"] == name:
                edit(d)
        return docs

    def coopd_container(d):
        return d["spec"]["template"]["spec"]["containers"][0]

    cases = {
        "no readiness probe": (compose, k8s_with("Deployment", "coopd",
                                                 lambda d: coopd_container(d).pop("readinessProbe"))),
        "service selects nothing": (compose, k8s_with("Service", "coopd",
                                                      lambda d: d["spec"].update(selector={"x": "y"}))),
        "unknown configmap": (compose, k8s_with("Deployment", "coopd", lambda d: coopd_container(d)[
            "envFrom"][0]["configMapRef"].update(name="nope"))),
        "bad remote url": (compose, k8s_with("ConfigMap", "coopd-config", lambda d: d["data"].update(
            COOPD_REMOTE_CACHE="redis:/coopd-redis"))),
        "one replica": (dict(compose, services=dict(compose["services"], coopd=dict(
            compose["services"]["coopd"], deploy={"replicas": 1}))), k8s),
        "no eviction policy": (dict(compose, services=dict(compose["services"], redis=dict(
            compose["services"]["redis"], command=["redis-server"]))), k8s),
    }
    failed = []
    for what, (c, k) in cases.items():
        if not problems_of(c, k):
            failed.append(what)
    return failed


def main():
    compose, k8s = load()
    problems = problems_of(compose, k8s)
    for p in problems:
        print(f"validate-manifests: {p}", file=sys.stderr)
    if "--self-test" in sys.argv[1:]:
        for what in self_test(compose, k8s):
            problems.append(what)
            print(f"validate-manifests: self-test: a copy with {what} was not refused", file=sys.stderr)
    if problems:
        return 1
    print(f"validate-manifests: ok (compose: {len(compose['services'])} services; k8s: {len(k8s)} objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
