#!/usr/bin/env python3
"""Footprint of coopd's processes (issue 17, item 3): start-up and memory.

  bench/footprint.sh [--build DIR] [--quick] [--json FILE] [--rounds N] [--starts N]
                     [--before-coopctl PATH] [--before-coopd PATH]

Whole process (every command run N times, interleaved in a shuffled order each round, stdout to
/dev/null; median wall time, its 10th-90th percentile spread and the median CPU time the child
used): /bin/true (the floor), `coopctl --help`, `coopctl specialize ... --json` (a memory hit
against a coopd this script started) and a ccache direct hit of the same wrapper
(bench/ccache_baseline.py: default configuration, and with its inode cache). coopctl's loading:
the shared objects it maps and the dynamic loader's relocation counts (LD_DEBUG=statistics).

The daemon (`--workers 1 --prewarm none`, a temporary socket; ready is systemd's READY=1 on a
NOTIFY_SOCKET this script listens on; with --before-coopd the two binaries take turns): start to
ready with a fresh cache directory and again with its header manifest, the daemon's RSS and PSS at ready (/proc/PID/smaps_rollup), the worker's
idle RSS (once stable) and its RSS after one compile (a warm PCH).

--before-coopctl/--before-coopd time older binaries in the same run (the same rounds, the same
daemon for both coopctls' hits; the new coopctl's hits against the older daemon too), for
before/after figures. --quick: 5 rounds, 1 start, no warm
compile check beyond the one the hit needs; it checks the harness, not the numbers. --json FILE
writes every figure (ms, MiB, counts and ratios) as one object. Exit status 1 if a command
failed or a hit was not a hit.
"""
import argparse
import json
import os
import platform
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ccache_baseline  # noqa: E402


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def summary(values):
    return {"median": statistics.median(values), "p10": percentile(values, 0.1),
            "p90": percentile(values, 0.9), "n": len(values)}


def run_once(argv, env, cwd):
    """Runs argv (stdout and stderr to /dev/null); returns (wall ms, CPU ms, exit status)."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    if cwd:
        old = os.getcwd()
        os.chdir(cwd)
    t0 = time.perf_counter_ns()
    try:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    finally:
        if cwd:
            os.chdir(old)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3, os.waitstatus_to_exitcode(status)


def which(path):
    if os.path.sep in path:
        return path
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.access(os.path.join(d, path), os.X_OK):
            return os.path.join(d, path)
    raise SystemExit(f"footprint: {path} is not on PATH")


def time_commands(commands, rounds):
    """commands: name -> (argv, env, cwd). Interleaved, shuffled per round."""
    walls = {n: [] for n in commands}
    cpus = {n: [] for n in commands}
    names = list(commands)
    rng = random.Random(17)
    for name in names:  # one warm-up each (page cache, ccache's manifest)
        argv, env, cwd = commands[name]
        run_once(argv, env, cwd)
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            argv, env, cwd = commands[name]
            wall, cpu, rc = run_once(argv, env, cwd)
            if rc != 0:
                raise SystemExit(f"footprint: {name} exited {rc}: {' '.join(argv)}")
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {n: dict(summary(walls[n]), cpu_median=statistics.median(cpus[n]))
            for n in commands}


def loading(coopctl):
    env = dict(os.environ, LD_TRACE_LOADED_OBJECTS="1")
    objects = subprocess.run([coopctl], env=env, capture_output=True, text=True).stdout
    shared = [l for l in objects.splitlines() if l.strip() and "linux-vdso" not in l]
    env = dict(os.environ, LD_DEBUG="statistics")
    err = subprocess.run([coopctl, "--help"], env=env, capture_output=True, text=True).stderr

    def number(label):
        m = re.findall(r"\b" + label + r":\s+(\d+)", err)
        return int(m[0]) if m else 0

    return {"shared_objects": len(shared), "relocations": number("number of relocations"),
            "relative_relocations": number("number of relative relocations")}


def smaps_rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                out[parts[0][:-1]] = int(parts[1]) / 1024.0  # MiB
    return out


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def stable_rss(pid, timeout=10.0):
    """RSS (MiB) once two readings 300 ms apart differ by less than 1%."""
    last = None
    deadline = time.time() + timeout
    while time.time() < deadline:
        rss = smaps_rollup(pid)["Rss"]
        if last is not None and abs(rss - last) < 0.01 * rss:
            return rss
        last = rss
        time.sleep(0.3)
    return last


class Daemon:
    """A coopd on a temporary socket; start() returns when it has sent READY=1."""

    def __init__(self, coopd, work, cache_dir):
        self.coopd, self.work, self.cache_dir = coopd, work, cache_dir
        self.socket = os.path.join(work, "coopd.sock")
        self.proc = None

    def start(self):
        notify_path = os.path.join(self.work, "notify")
        if os.path.exists(notify_path):
            os.unlink(notify_path)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path, COOPD_NO_AUTOSTART="1",
                   TMPDIR=self.work)
        argv = [self.coopd, "--socket", self.socket, "--cache-dir", self.cache_dir,
                "--workers", "1", "--prewarm", "none"]
        self.log = open(os.path.join(self.work, "coopd.log"), "ab")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=self.log)
        notify.settimeout(60)
        while True:
            try:
                msg = notify.recv(4096).decode()
            except socket.timeout:
                self.stop()
                raise SystemExit(f"footprint: {self.coopd} sent no READY=1 in 60 s "
                                 f"(log: {self.log.name})")
            if "READY=1" in msg:
                break
        self.ready_ms = (time.perf_counter() - t0) * 1e3
        self.rss_at_ready = smaps_rollup(self.proc.pid)
        notify.close()
        return self

    def worker(self):
        deadline = time.time() + 10
        while time.time() < deadline:
            kids = children(self.proc.pid)
            if kids:
                return kids[0]
            time.sleep(0.05)
        raise SystemExit("footprint: the daemon started no worker")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        self.log.close()


def coopctl_hit_argv(coopctl, sock):
    return [coopctl, "--socket", sock, "specialize", *ccache_baseline.SPEC_FLAGS, "--json"]


def daemon_figures(binaries, work, starts, warm):
    """binaries: label -> coopd. Start to ready (a fresh cache directory, then again with its
    header manifest) and RSS; the binaries take turns, in a shuffled order each round."""
    figures = {label: {k: [] for k in ("fresh", "manifest", "rss_fresh", "rss", "pss", "anon",
                                       "idle")} for label in binaries}
    warm_rss = {label: None for label in binaries}
    labels = list(binaries)
    rng = random.Random(3)
    for i in range(starts):
        rng.shuffle(labels)
        for label in labels:
            f = figures[label]
            d = os.path.join(work, f"{label}-start{i}")
            os.makedirs(d)
            cache = os.path.join(d, "cache")
            daemon = Daemon(binaries[label], d, cache).start()
            f["fresh"].append(daemon.ready_ms)
            f["rss_fresh"].append(daemon.rss_at_ready["Rss"])
            f["idle"].append(stable_rss(daemon.worker()))
            if warm and i == 0:
                env = dict(os.environ, COOPD_NO_AUTOSTART="1")
                subprocess.run(coopctl_hit_argv(warm, daemon.socket), env=env, check=True,
                               stdout=subprocess.DEVNULL)
                warm_rss[label] = stable_rss(daemon.worker())
            daemon.stop()
            daemon = Daemon(binaries[label], d, cache).start()
            f["manifest"].append(daemon.ready_ms)
            r = daemon.rss_at_ready
            f["rss"].append(r["Rss"])
            f["pss"].append(r["Pss"])
            f["anon"].append(r.get("Anonymous", 0.0))
            daemon.stop()
    return {label: {
        "start_to_ready_fresh_ms": summary(f["fresh"]),
        "start_to_ready_manifest_ms": summary(f["manifest"]),
        "rss_at_ready_mib": summary(f["rss"]),  # with the manifest, as a daemon usually starts
        "rss_at_ready_fresh_mib": summary(f["rss_fresh"]),
        "pss_at_ready_mib": summary(f["pss"]),
        "anonymous_at_ready_mib": summary(f["anon"]),
        "worker_idle_rss_mib": summary(f["idle"]),
        "worker_warm_rss_mib": warm_rss[label],
    } for label, f in figures.items()}


def versions():
    def first_line(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "absent"

    return {"ccache": first_line(["ccache", "--version"]),
            "clang": first_line(["clang++-22", "--version"]),
            "kernel": platform.release(), "cpus": os.cpu_count(),
            "load_average": os.getloadavg()}


def main():
    p = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    p.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--rounds", type=int)
    p.add_argument("--starts", type=int)
    p.add_argument("--before-coopctl")
    p.add_argument("--before-coopd")
    a = p.parse_args()
    rounds = a.rounds or (5 if a.quick else 200)
    starts = a.starts or (1 if a.quick else 5)
    coopctl = os.path.join(a.build, "client", "coopctl")
    coopd = os.path.join(a.build, "server", "coopd")
    for b in (coopctl, coopd, a.before_coopctl, a.before_coopd):
        if b and not os.access(b, os.X_OK):
            raise SystemExit(f"footprint: {b} is not an executable (build first, or --build DIR)")
    result = {"machine": versions(), "rounds": rounds, "starts": starts}
    with tempfile.TemporaryDirectory(prefix="coopd-footprint-") as work:
        binaries = {"daemon": coopd}
        if a.before_coopd:
            binaries["before_daemon"] = a.before_coopd
        result.update(daemon_figures(binaries, work, starts, coopctl))
        # The hit: a daemon with the artifact in memory.
        hit_dir = os.path.join(work, "hit")
        os.makedirs(hit_dir)
        daemon = Daemon(coopd, hit_dir, os.path.join(hit_dir, "cache")).start()
        before_daemon = None
        try:
            source = ccache_baseline.fetch_source(daemon.socket)
            env = dict(os.environ, COOPD_NO_AUTOSTART="1")
            commands = {"/bin/true": (["/bin/true"], env, None),
                        "coopctl --help": ([coopctl, "--help"], env, None),
                        "coopctl hit": (coopctl_hit_argv(coopctl, daemon.socket), env, None)}
            if a.before_coopd:  # the same client against the older daemon: hits not slower
                before_dir = os.path.join(work, "hit-before")
                os.makedirs(before_dir)
                before_daemon = Daemon(a.before_coopd, before_dir,
                                       os.path.join(before_dir, "cache")).start()
                ccache_baseline.fetch_source(before_daemon.socket)
                commands["coopctl hit, before daemon"] = (
                    coopctl_hit_argv(coopctl, before_daemon.socket), env, None)
            if a.before_coopctl:
                commands["before: coopctl --help"] = ([a.before_coopctl, "--help"], env, None)
                commands["before: coopctl hit"] = (
                    coopctl_hit_argv(a.before_coopctl, daemon.socket), env, None)
            baselines = {}
            for name, inode in (("ccache direct hit", False),
                                ("ccache direct hit (inode_cache)", True)):
                b = ccache_baseline.prepare(os.path.join(work, "ccache-" + str(inode)), source,
                                            inode_cache=inode)
                baselines[name] = b["description"]
                commands[name] = ([which(b["argv"][0])] + b["argv"][1:],
                                  dict(os.environ, **b["env"]), b["cwd"])
            out = subprocess.run(commands["coopctl hit"][0], env=env, capture_output=True,
                                 text=True, check=True).stdout
            if json.loads(out).get("origin") != "memory":
                raise SystemExit(f"footprint: coopctl's request was not a memory hit: {out}")
            result["whole_process_ms"] = time_commands(commands, rounds)
            result["baselines"] = baselines
        finally:
            daemon.stop()
            if before_daemon:
                before_daemon.stop()
    result["coopctl_loading"] = loading(coopctl)
    if a.before_coopctl:
        result["before_coopctl_loading"] = loading(a.before_coopctl)
    w = result["whole_process_ms"]
    med = {n: v["median"] for n, v in w.items()}
    ratios = {f"{n} / /bin/true": med[n] / med["/bin/true"] for n in med if n != "/bin/true"}
    for base in baselines:
        ratios[f"coopctl hit / {base}"] = med["coopctl hit"] / med[base]
        if a.before_coopctl:
            ratios[f"before: coopctl hit / {base}"] = med["before: coopctl hit"] / med[base]
    if a.before_coopctl:
        ratios["coopctl --help, after / before"] = (med["coopctl --help"] /
                                                    med["before: coopctl --help"])
        ratios["coopctl hit, after / before"] = med["coopctl hit"] / med["before: coopctl hit"]
    if a.before_coopd:
        ratios["coopctl hit, daemon after / before"] = (med["coopctl hit"] /
                                                        med["coopctl hit, before daemon"])
        for k in ("rss_at_ready_mib", "start_to_ready_fresh_ms", "start_to_ready_manifest_ms",
                  "worker_idle_rss_mib"):
            ratios[f"daemon {k}, after / before"] = (result["daemon"][k]["median"] /
                                                      result["before_daemon"][k]["median"])
    result["ratios"] = ratios
    report(result)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


def report(r):
    print(f"footprint: {r['rounds']} interleaved rounds, {r['starts']} daemon starts; "
          f"{r['machine']['cpus']} CPUs, load {r['machine']['load_average'][0]:.1f}; "
          f"{r['machine']['ccache']}; {r['machine']['clang']}")
    print("whole process (ms)               median    p10-p90     CPU")
    for n, v in r["whole_process_ms"].items():
        print(f"  {n:32s} {v['median']:7.2f}  {v['p10']:6.2f}-{v['p90']:<6.2f} "
              f"{v['cpu_median']:6.2f}")
    for key in ("coopctl_loading", "before_coopctl_loading"):
        if key in r:
            l = r[key]
            print(f"{key.replace('_', ' ')}: {l['shared_objects']} shared objects, "
                  f"{l['relocations']} relocations, {l['relative_relocations']} relative")
    for key in ("daemon", "before_daemon"):
        if key not in r:
            continue
        d = r[key]
        warm = d["worker_warm_rss_mib"]
        print(f"{key.replace('_', ' ')}: start to ready {d['start_to_ready_fresh_ms']['median']:.0f}"
              f" ms fresh, {d['start_to_ready_manifest_ms']['median']:.0f} ms with the manifest; "
              f"RSS at ready {d['rss_at_ready_mib']['median']:.1f} MiB (PSS "
              f"{d['pss_at_ready_mib']['median']:.1f}, anonymous "
              f"{d['anonymous_at_ready_mib']['median']:.1f}); worker "
              f"{d['worker_idle_rss_mib']['median']:.1f} MiB idle"
              + (f", {warm:.1f} MiB warm" if warm else ""))
    print("ratios")
    for n, v in r["ratios"].items():
        print(f"  {n:58s} {v:6.3f}")


if __name__ == "__main__":
    sys.exit(main())
