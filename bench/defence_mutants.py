#!/usr/bin/env python3
"""defence_mutants.py: shows that issue 27's tests fail when the defence they guard is removed.

Each mutant below undoes one defence in the source (a reversible text edit). The script applies
every mutant, builds coopd and the test binaries, runs the tests that guard those defences,
reverts the source (always, also on failure or Ctrl-C), rebuilds, and prints, per test, whether
it failed as it must. Exit status 0 when every guarding test failed under the mutants and the
controls (tests of behaviour no mutant touches) passed; 1 otherwise; 2 when a mutant no longer
matches the source (update its text here after a refactor).

Not part of CI: it rebuilds the daemon twice and runs slow tests (the cancellation tests wait
out their polling bound under the mutant). Usage:

    bench/defence_mutants.py [--build-dir build]

Run it from a clean tree of your own: it edits server/ and client/src/ in place while it runs.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file, the defence's text, the mutant's text, what the mutant removes)
MUTANTS = [
    ("server/engine/worker_pool.cc",
     "  if (cancel) cancel->OnCancel([this, id](const absl::Status& why) { CancelJob(id, why); });",
     "  if (false && cancel) cancel->OnCancel([this, id](const absl::Status& why) { CancelJob(id, why); });",
     "cancellation reaches no queued or running job"),
    ("server/service/client_quotas.cc",
     "Clock::time_point now) {\n  if (!enabled()) return absl::OkStatus();",
     "Clock::time_point now) {\n  if (true) return absl::OkStatus();",
     "per-client quotas never refuse"),
    ("server/cache/sqlite_cache.cc",
     "    chmod(options.dir.c_str(), 0700);\n  } else {\n    Tighten(options.dir, 0700);\n  }",
     "    (void)&Tighten;\n  } else {\n    (void)0;\n  }",
     "the cache directory keeps the umask's mode"),
    ("server/cache/sqlite_cache.cc",
     "O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);",
     "O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);",
     "the database is created 0644"),
    ("server/cache/sqlite_cache.cc",
     '  for (const char* suffix : {"", "-wal", "-shm"}) Tighten(path + suffix, 0600);',
     '  for (const char* suffix : {"", "-wal", "-shm"}) (void)suffix;',
     "open cache files are not tightened"),
    ("client/src/paths.cc",
     "std::string UnsafeSecretReason(unsigned mode, long uid, const std::string& holds) {\n",
     "std::string UnsafeSecretReason(unsigned mode, long uid, const std::string& holds) {\n"
     "  if (mode || !mode) return \"\";\n",
     "secrets files of any mode and owner are read"),
    ("server/daemon/daemon_edge.cc",
     "    if (access.enforced()) tcp_credentials->SetAuthMetadataProcessor(access.HeaderCheck());",
     "    if (false) tcp_credentials->SetAuthMetadataProcessor(access.HeaderCheck());",
     "tokens are checked after the body, not on the headers"),
    ("server/daemon/daemon_setup.cc",
     "  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;",
     "  if (true) return;",
     "the soft descriptor limit is not raised"),
    ("server/daemon/daemon_serve.cc",
     "  if (config.self_probe.count() > 0) {\n    std::vector<ProbeTarget> targets;",
     "  if (false) {\n    std::vector<ProbeTarget> targets;",
     "no self-probe"),
    ("server/daemon/daemon_edge.cc",
     "  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,\n"
     "                             static_cast<int>(config.handshake_timeout.count()));",
     "  // no handshake timeout",
     "gRPC's 120 s handshake timeout"),
]

# Tests that must fail under the mutants, and controls that must still pass (they test
# behaviour that no mutant removes: a joined compile goes on, quotas are off by default, the
# quota table forgets idle clients, the memory quota bounds the open health service).
MUST_FAIL = [
    "ClientQuotas.TheCompileAfterTheQuotaIsRefusedUntilTheMinuteEnds",
    "ClientQuotas.BytesOverTheHourlyQuotaRefuseTheNextCompile",
    "ClientQuotas.TheCompileOverATokensQuotaIsRefusedWhileHitsAndOtherTokensAreServed",
    "ClientQuotas.ACompileOverTheCacheBytesQuotaIsRefused",
    "Cancellation.ACompileWhoseOnlyCallerGaveUpIsStoppedAndItsWorkerFreed",
    "Cancellation.AQueuedCompileWhoseCallerGaveUpIsNeverStarted",
    "NetworkAbuse.UnauthenticatedLargeBodiesAreRefusedBeforeCoopdReceivesThem",
    "NetworkAbuse.TheSoftDescriptorLimitIsRaisedToTheHardLimit",
    "NetworkAbuse.AConnectionThatNeverFinishesItsHandshakeIsClosed",
    "NetworkAbuse.AListenerWedgedByRunningOutOfDescriptorsIsRestartedBySelfProbe",
    "LocalUsers.TheCacheIsCoopdsUsersAloneAndOldOpenFilesAreTightened",
    "LocalUsers.SecretsFilesOthersCouldRewriteAreRefused",
]
MUST_PASS = [
    "ClientQuotas.OffByDefault",
    "ClientQuotas.TheTableForgetsClientsWhoseWindowsRanOut",
    "Cancellation.ACompileAnotherCallerJoinedGoesOnWhenOneGivesUp",
    "NetworkAbuse.BodiesToTheOpenHealthServiceAreBoundedByTheMemoryQuota",
]
TARGETS = ["coopd", "coopd_integration_tests", "coopd_unit_tests"]


def edit(direction):
    """Applies (direction 1) or reverts (-1) every mutant; exits 2 when one does not match."""
    texts = {}
    for path, good, bad, _ in MUTANTS:
        full = os.path.join(ROOT, path)
        text = texts.get(full) or open(full).read()
        old, new = (good, bad) if direction > 0 else (bad, good)
        if text.count(old) != 1:
            sys.exit("defence_mutants: %s: the %s text of a mutant is found %d times, not once; "
                     "update MUTANTS" % (path, "defence" if direction > 0 else "mutant",
                                        text.count(old)))
        texts[full] = text.replace(old, new)
    for full, text in texts.items():
        with open(full, "w") as f:
            f.write(text)


def build(build_dir):
    subprocess.run(["cmake", "--build", build_dir, "--target"] + TARGETS, check=True)


def run_tests(build_dir):
    """{test name: passed?} for the tests above, as ctest reports them."""
    names = MUST_FAIL + MUST_PASS
    regex = "^(" + "|".join(re.escape(n) for n in names) + ")$"
    out = subprocess.run(["ctest", "--test-dir", build_dir, "-R", regex, "-j", "2",
                          "--timeout", "600"], capture_output=True, text=True).stdout
    results = {}
    for m in re.finditer(r"Test +#\d+: (\S+) \.+\s*(\*\*\*)?(\w+)", out):
        results[m.group(1)] = m.group(3) == "Passed"
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    for _, _, _, what in MUTANTS:
        print("mutant: " + what)
    edit(+1)
    try:
        build(args.build_dir)
        results = run_tests(args.build_dir)
    finally:
        edit(-1)
        build(args.build_dir)
    ok = True
    for name in MUST_FAIL:
        verdict = {False: "fails under the mutants, as it must", True: "PASSES under the mutants",
                   None: "DID NOT RUN"}[results.get(name)]
        ok = ok and results.get(name) is False
        print("%-90s %s" % (name, verdict))
    for name in MUST_PASS:
        verdict = {True: "passes (control)", False: "FAILS (control)",
                   None: "DID NOT RUN"}[results.get(name)]
        ok = ok and results.get(name) is True
        print("%-90s %s" % (name, verdict))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
