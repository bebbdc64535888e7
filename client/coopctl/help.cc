// help.cc: coopctl's help: each command's synopsis, summary and examples, the global usage and
// footer, and the formatter that lays them out around CLI11's list of options.
#include "coopctl/help.h"

#include <iterator>

namespace coopctl {
namespace {

constexpr CommandHelp kTable[] = {
    {"specialize",
     "  specialize FAMILY [--method M] --dtype T --threads X[,Y[,Z]] [--items N]\n"
     "             [--algorithm A] [--op OP] [--warp-threads N] [--with-aggregate]\n"
     "             [--warp-time-slicing] [--value-dtype T] [--radix-bits N] [--bins N]\n"
     "             [--decoded-items N] [--valid-items]\n"
     "             [--abi c|numba] --arch sm_XX[a] [--cccl NAME|VERSION]\n"
     "             [--format ltoir|bitcode|both]\n"
     "             [--json] [--out DIR]\n"
     "             [--op-name NAME (--op-source FILE | --op-ltoir FILE) [--op-stateful]]\n"
     "             [--user-type SIZE[,ALIGN]]   (instead of --dtype: an opaque struct)\n"
     "             [--prefix-name NAME (--prefix-source FILE | --prefix-ltoir FILE)]\n"
     "      Request one specialization. FAMILY: see `coopctl catalog`.\n"
     "      --format: NVRTC's LTO-IR (default; link with nvJitLink), LLVM bitcode from clang\n"
     "      (link as a bitcode library, e.g. CuTe DSL), or both.\n"
     "      --out DIR writes <symbol>.ltoir and/or <symbol>.bc, <symbol>.h (the entry\n"
     "      declarations), and <symbol>.op<N>.ltoir / .op<N>.bc per user operator (link them\n"
     "      too).\n"
     "      --op-name with --op-source/--op-ltoir: a user operator instead of --op.\n"
     "      --cccl: the CCCL to compile against when coopd has several (`coopctl catalog`\n"
     "      lists them): a name, or a version (3.5.0, or 3.5 when it names one); default:\n"
     "      coopd's default. Every spec of a bundle or plan names the same one.\n"
     "      Several specs joined by \" + \" form a bundle: one LTO-IR, one round trip.\n",
     "compile (or fetch from the cache) one specialization, or a bundle of several",
     "  coopctl specialize block_reduce --method sum --dtype float32 --threads 256 --arch sm_90\n"
     "  coopctl specialize block_reduce --dtype float32 --threads 256 --arch sm_90a \\\n"
     "      --format bitcode --out gen/\n"
     "  coopctl specialize block_reduce --dtype float32 --threads 256 --arch sm_90 --out gen/ \\\n"
     "      + block_scan --method exclusive_sum --dtype int32 --threads 256 --arch sm_90\n"},
    {"link",
     "  link --arch sm_XX (--ltoir FILE | --ptx FILE)... [--artifact KEY]...\n"
     "       [--option OPT]... [--keep-unused-variables] --out FILE [--json]\n"
     "      Link a kernel with cached artifacts (by key) into a cubin.\n",
     "link a kernel with cached artifacts (by key) into a cubin",
     "  coopctl link --arch sm_90 --ltoir kernel.ltoir --artifact KEY --out kernel.cubin\n"
     "      (KEY: the key `coopctl specialize` printed)\n"},
    {"plan",
     "  plan [--base-offset N] [--reserve NAME=BYTES[,ALIGN[,COUNT]]]... [--json]\n"
     "       USE [+ USE]...\n"
     "       USE: NAME[@FIRST[-LAST]] [--count N] (SPEC | --bytes N [--align A])\n"
     "      Lay out one kernel's dynamic shared memory: each use's temp storage (from its\n"
     "      spec, as specialize takes it, or given in bytes) live over program points\n"
     "      FIRST..LAST (default 0), and the reservations, live throughout. Uses whose\n"
     "      points do not overlap may share bytes. --align and a reservation's ALIGN\n"
     "      default to 1. See docs/plan.md.\n",
     "lay out the temp storage of a kernel's primitives in its dynamic shared memory",
     "  coopctl plan --reserve tile=4096,16 \\\n"
     "      sort@0 block_radix_sort --dtype uint32 --threads 256 --items 4 --arch sm_90 \\\n"
     "      + scan@1 block_scan --method exclusive_sum --dtype int32 --threads 256 --arch sm_90\n"
     "  coopctl plan --json a@0-1 --bytes 1024 --align 16 + b@2 --count 8 --bytes 20 --align 8\n"},
    {"explain",
     "  explain SPEC [--format ltoir|bitcode] [--json]\n"
     "      The cache key's components (same arguments as specialize); on a miss, which\n"
     "      components differ from entries stored for the same request. Each format has a\n"
     "      key of its own.\n",
     "show a spec's cache key, its components, and why it misses the cache",
     "  coopctl explain block_reduce --method sum --dtype float32 --threads 256 --arch sm_90\n"},
    {"catalog",
     "  catalog [--cccl NAME|VERSION] [--json]\n"
     "      Every family, method, algorithm, dtype, operator and arch coopd accepts, and\n"
     "      every CCCL it compiles against (the default first). --cccl: the families'\n"
     "      availability on that CCCL (default: coopd's default).\n",
     "list every family, method, algorithm, dtype, operator, arch and CCCL coopd accepts",
     "  coopctl catalog\n"
     "  coopctl catalog --cccl 3.5 --json\n"},
    {"stats",
     "  stats [--zero] [--json]\n"
     "      Counters of the running coopd, and the CCCLs it compiles against; --zero prints\n"
     "      them, then zeroes them. Never starts coopd.\n",
     "print the running coopd's counters",
     "  coopctl stats\n"
     "  coopctl stats --zero --json\n"},
    {"ls",
     "  ls [--family F] [--dtype T] [--arch A] [--limit N] [--json | --manifest]\n"
     "      Disk cache entries, most recently used first. --manifest writes them as a manifest\n"
     "      for `coopctl warm` (JSON; entries with user operators are left out, and named on\n"
     "      stderr: coopd keeps no operator source).\n",
     "list disk cache entries, most recently used first, or export them as a warm manifest",
     "  coopctl ls --family block_reduce --arch sm_90 --limit 10\n"
     "  coopctl ls --manifest > app.json        (then, elsewhere: coopctl warm app.json)\n"},
    {"purge",
     "  purge (--all | [--family F] [--dtype T] [--arch A]) [--json]\n"
     "      Remove every cache entry, or those that match all the filters given.\n",
     "remove cache entries: all of them, or those matching a filter",
     "  coopctl purge --family block_scan --arch sm_80\n"
     "  coopctl purge --all\n"},
    {"verify",
     "  verify [--json]\n"
     "      Read and check every stored record; remove bad ones.\n",
     "read and check every stored record of the disk cache; remove bad ones",
     "  coopctl verify --json\n"},
    {"vacuum",
     "  vacuum [--json]\n"
     "      Compact the database file.\n",
     "compact the disk cache's database file", "  coopctl vacuum\n"},
    {"health",
     "  health [--service NAME] [--probe-exit-codes] [--json]\n"
     "      Ask coopd's gRPC health service (grpc.health.v1) whether it serves; never starts\n"
     "      coopd. NAME: \"\" (the daemon, default) or coop.v1.Coop. Exit status: 0 SERVING,\n"
     "      1 NOT_SERVING (shutting down) or another answer, 3 no coopd is running, else\n"
     "      coopctl's usual ones. --probe-exit-codes: grpc_health_probe's instead, for probes\n"
     "      written against it: 0 SERVING, 1 bad arguments, 2 no coopd is running (connection\n"
     "      failed), 3 the call failed (refused, timed out), 4 NOT_SERVING or another answer.\n",
     "check whether coopd is running and serving (for scripts and probes)",
     "  coopctl health\n"
     "  coopctl --socket /run/coopd/coopd.sock health --json\n"
     "  coopctl health --probe-exit-codes    # exit statuses as grpc_health_probe's\n"},
    {"stop",
     "  stop [--no-wait] [--json]\n"
     "      Stop coopd gracefully: it refuses new calls, lets those in flight finish within\n"
     "      its shutdown grace (--shutdown-grace), stops its workers and exits. Waits until it\n"
     "      no longer answers (within --timeout) unless --no-wait. Needs an admin token when\n"
     "      coopd requires tokens. Never starts coopd. Exit status: 0 stopped, 3 no coopd is\n"
     "      running, 5 not an admin, 6 it still answers after --timeout.\n",
     "stop coopd gracefully (as SIGTERM does)",
     "  coopctl stop\n"
     "  coopctl --target ipv4:10.0.0.5:7070 stop --no-wait   # with COOPD_TOKEN an admin's\n"},
    {"warm",
     "  warm MANIFEST [--jobs N] [--dry-run] [--json]\n"
     "      Request every spec of a manifest (JSON or YAML; `-` reads stdin; format in\n"
     "      docs/operators.md), N at a time (default 4). A progress bar (done/total, hits,\n"
     "      compiled, failed, ETA) is drawn on stderr when stderr is a terminal; when stdout\n"
     "      is not a terminal, one line per spec goes to stdout. A failed spec does not stop\n"
     "      the others; exit status 7 when some failed. --json: a summary object on stdout.\n"
     "      --dry-run checks the manifest and lists its specs without contacting coopd.\n",
     "prepare a cache: request every spec of a manifest, in parallel, with progress",
     "  coopctl warm deploy/warm-manifest.example.yaml\n"
     "  coopctl ls --manifest > app.json; coopctl --socket /new/coopd.sock warm app.json\n"
     "  coopctl warm --jobs 8 --json app.json | jq .failed\n"},
};

constexpr char kGlobalUsage[] =
    "usage: coopctl [--socket PATH | --target TARGET] [--timeout SECONDS] [--full-error]\n"
    "               COMMAND ...\n";

constexpr char kUsageFooter[] =
    "The socket defaults to $COOPD_SOCKET, else $XDG_RUNTIME_DIR/coopd/coopd.sock, else\n"
    "/tmp/coopd-$UID/coopd.sock. --target names a gRPC target instead, for replicas that\n"
    "listen on TCP (coopd --listen): ipv4:127.0.0.1:7070, dns:///coopd.farm:7070, ...\n"
    "coopd bounds long error messages (a compiler log of megabytes: its first lines and how\n"
    "many bytes were left out); --full-error asks for the whole one and prints it as it is.\n"
    "On failure: one line on stderr (with --json, also {\"error\": {...}} on stdout) and exit\n"
    "status 1 failed, 2 usage error, 3 coopd unreachable, 4 request refused (INVALID_ARGUMENT,\n"
    "FAILED_PRECONDITION, NOT_FOUND, ...), 5 permission denied or unauthenticated, 6 busy,\n"
    "out of resources or timed out (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ...: try again\n"
    "later), 7 warm: some specs failed. 0 on success.\n";

}  // namespace

const CommandHelp* CommandTable::begin() const {
  return std::begin(kTable);
}

const CommandHelp* CommandTable::end() const {
  return std::end(kTable);
}

const CommandHelp* FindCommand(const std::string& name) {
  for (const auto& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const CommandHelp* c = FindCommand(app->get_name());
  if (app->get_parent() == nullptr || c == nullptr) return "";
  return "coopctl " + std::string(c->name) + ": " + c->summary + "\n\n";
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string) const {
  const CommandHelp* c = FindCommand(app->get_name());
  if (app->get_parent() == nullptr || c == nullptr) return kGlobalUsage;
  return "usage (after coopctl [--socket PATH | --target TARGET] [--timeout SECONDS] "
         "[--full-error]):\n" +
         std::string(c->usage);
}

std::string HelpFormatter::make_subcommands(const CLI::App* app, CLI::AppFormatMode) const {
  if (app->get_parent() != nullptr) return "";
  std::string out = "\ncommands:\n";
  for (const auto& c : kCommands) out += c.usage;
  return out;
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const CommandHelp* c = FindCommand(app->get_name());
  if (app->get_parent() == nullptr || c == nullptr) {
    return std::string(kUsageFooter) +
           "`coopctl COMMAND --help` shows one command's usage with examples.\n";
  }
  return "examples:\n" + std::string(c->examples) + "\n" + kUsageFooter;
}

}  // namespace coopctl
