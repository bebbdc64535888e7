// coopctl: command-line client of coopd. See `coopctl --help`, README.md and docs/operators.md.
// Arguments are parsed by CLI11; --json output is written with nlohmann-json.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "coop/client.h"
#include "coopctl/manifest.h"
#include "coopctl/spec_args.h"

namespace {

using coopctl::CommandError;
using coopctl::Json;
using coopctl::UsageFail;

// Each command's synopsis (as `coopctl --help` lists it), summary and examples.
struct CommandHelp {
  const char* name;
  const char* usage;
  const char* summary;
  const char* examples;
};

constexpr CommandHelp kCommands[] = {
    {"specialize",
     "  specialize FAMILY [--method M] --dtype T --threads X[,Y[,Z]] [--items N]\n"
     "             [--algorithm A] [--op OP] [--warp-threads N] [--with-aggregate]\n"
     "             [--warp-time-slicing] [--value-dtype T] [--radix-bits N] [--bins N]\n"
     "             [--decoded-items N]\n"
     "             [--abi c|numba] --arch sm_XX[a] [--format ltoir|bitcode|both]\n"
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
     "  catalog [--json]\n"
     "      Every family, method, algorithm, dtype, operator and arch coopd accepts.\n",
     "list every family, method, algorithm, dtype, operator and arch coopd accepts",
     "  coopctl catalog\n"
     "  coopctl catalog --json\n"},
    {"stats",
     "  stats [--zero] [--json]\n"
     "      Counters of the running coopd; --zero prints them, then zeroes them. Never starts\n"
     "      coopd.\n",
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

const CommandHelp* FindCommand(const std::string& name) {
  for (const auto& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// Help in coopctl's layout: the synopsis, CLI11's list of options, the examples.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    const CommandHelp* c = FindCommand(app->get_name());
    if (app->get_parent() == nullptr || c == nullptr) return "";
    return "coopctl " + std::string(c->name) + ": " + c->summary + "\n\n";
  }
  std::string make_usage(const CLI::App* app, std::string) const override {
    const CommandHelp* c = FindCommand(app->get_name());
    if (app->get_parent() == nullptr || c == nullptr) return kGlobalUsage;
    return "usage (after coopctl [--socket PATH | --target TARGET] [--timeout SECONDS] "
           "[--full-error]):\n" +
           std::string(c->usage);
  }
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode) const override {
    if (app->get_parent() != nullptr) return "";
    std::string out = "\ncommands:\n";
    for (const auto& c : kCommands) out += c.usage;
    return out;
  }
  std::string make_footer(const CLI::App* app) const override {
    const CommandHelp* c = FindCommand(app->get_name());
    if (app->get_parent() == nullptr || c == nullptr) {
      return std::string(kUsageFooter) +
             "`coopctl COMMAND --help` shows one command's usage with examples.\n";
    }
    return "examples:\n" + std::string(c->examples) + "\n" + kUsageFooter;
  }
};

// The connection: where coopd is and how to talk to it. Flags that change how the client
// connects (credentials, TLS) belong here, each with its ClientOptions field in ToOptions.
struct GlobalOptions {
  std::string socket;
  std::string target;
  std::string timeout_s;
  bool full_error = false;
  std::string token_file, tls_ca, tls_cert, tls_key;

  void Add(CLI::App* app) {
    auto* socket_opt =
        app->add_option("--socket", socket, "coopd's Unix socket")->type_name("PATH");
    auto* target_opt =
        app->add_option("--target", target,
                        "a gRPC target instead of the socket, e.g. ipv4:127.0.0.1:7070 "
                        "(never starts coopd)")
            ->type_name("TARGET");
    socket_opt->excludes(target_opt);
    app->add_option("--timeout", timeout_s, "per-call deadline (default 180)")
        ->type_name("SECONDS");
    app->add_flag("--full-error", full_error, "print coopd's whole error message");
    app->add_option("--token-file", token_file,
                    "a file holding the bearer token to send (env COOPD_TOKEN_FILE)")
        ->type_name("FILE");
    app->add_option("--tls-ca", tls_ca,
                    "PEM CA that signed coopd's certificate: TLS to --target (env COOPD_TLS_CA)")
        ->type_name("FILE");
    app->add_option("--tls-cert", tls_cert,
                    "PEM client certificate, for coopd's mTLS (env COOPD_TLS_CERT)")
        ->type_name("FILE");
    app->add_option("--tls-key", tls_key, "its PEM private key (env COOPD_TLS_KEY)")
        ->type_name("FILE");
  }

  // The global options that take a value (main finds the command after them).
  static bool TakesValue(const std::string& flag) {
    return flag == "--socket" || flag == "--target" || flag == "--timeout" ||
           flag == "--token-file" || flag == "--tls-ca" || flag == "--tls-cert" ||
           flag == "--tls-key";
  }

  coop::ClientOptions ToOptions() const {
    coop::ClientOptions options;
    options.client_name = "coopctl";
    options.socket_path = socket;
    options.target = target;
    if (!timeout_s.empty()) {
      options.timeout = std::chrono::seconds(coopctl::ParseUint("--timeout", timeout_s));
    }
    options.full_errors = full_error;
    options.token_file = token_file;  // empty: the library reads COOPD_TOKEN_FILE, ...
    options.tls_ca_file = tls_ca;
    options.tls_cert_file = tls_cert;
    options.tls_key_file = tls_key;
    return options;
  }
};

GlobalOptions g_global;
bool g_json = false;  // --json

std::string OneLine(const std::string& s) {
  // Errors are one line on stderr; compiler logs keep their content, joined with " | ".
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += " | ";
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|')) out.pop_back();
  return out;
}

// What coopctl prints of an error: one line, or with --full-error the whole message as coopd
// sent it (Error::details: every line of a compiler log).
std::string ErrorText(const coop::Error& e) {
  if (g_global.full_error && !e.details.empty()) return e.details;
  return OneLine(e.message);
}

[[noreturn]] void FailWith(const coop::Error& e) {
  throw CommandError(coopctl::ExitStatusFor(e), coop::ErrorCodeName(e.code),
                     std::string(coop::ErrorCodeName(e.code)) + ": " + ErrorText(e));
}

[[noreturn]] void Fail(const std::string& message) {
  throw CommandError(coopctl::kExitFailed, "FAILED", message);
}

// Where the client talks to, for messages.
std::string Where(const coop::Client& client) {
  return g_global.target.empty() ? client.socket_path() : g_global.target;
}

void Print(const Json& j) {
  std::cout << coopctl::Dump(j) << "\n";
}

void WriteFile(const std::filesystem::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) Fail("cannot write " + path.string() + ": " + std::strerror(errno));
}

// File stem for --out: the entry symbol of a single spec, "coop_bundle_<key>" for a bundle.
std::string FileStem(const coop::Artifact& a) {
  if (a.parts.size() == 1 && !a.parts[0].entries.empty()) return a.parts[0].entries[0].symbol;
  return "coop_bundle_" + a.key.substr(0, 16);
}

using coopctl::RadixBits;
using coopctl::Shape;
using coopctl::ValueDtype;

std::string Header(const coop::Artifact& a) {
  std::string guard = "COOP_" + a.key.substr(0, 16) + "_H";
  std::string h = "// Generated by coopctl from coopd artifact " + a.key + " (" + a.arch + ")\n";
  h += "#ifndef " + guard + "\n#define " + guard + "\n";
  h += a.type_definitions;
  // The half-precision types the declarations may name.
  for (const auto& e : a.entries) {
    if (e.declaration.find("__half") != std::string::npos ||
        e.declaration.find("__nv_bfloat16") != std::string::npos) {
      h += "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n";
      break;
    }
  }
  for (const auto& p : a.parts) {
    const std::string base = p.entries.empty() ? "" : p.entries[0].symbol;
    h += "\n// " + p.spec.family + " " + p.spec.method + " " + p.spec.dtype + Shape(p.spec) + "\n";
    h += "// Temp storage: " + std::to_string(p.temp_storage_bytes) + " bytes, aligned to " +
         std::to_string(p.temp_storage_align) + "\n";
    h += "#define " + base + "_TEMP_STORAGE_BYTES " + std::to_string(p.temp_storage_bytes) + "\n";
    h += "#define " + base + "_TEMP_STORAGE_ALIGN " + std::to_string(p.temp_storage_align) + "\n";
    for (const auto& e : p.entries) h += "// " + e.description + "\n" + e.declaration + "\n";
  }
  h += "\n#endif\n";
  return h;
}

Json SpecJson(const coop::Spec& s) {
  Json j = Json::object();
  j["family"] = s.family;
  j["method"] = s.method;
  j["dtype"] = s.dtype;
  j["threads"] = Json::array({s.block.x, s.block.y, s.block.z});
  j["items_per_thread"] = s.items_per_thread;
  j["algorithm"] = s.algorithm;
  j["op"] = s.user_op.name.empty() ? s.op : "user:" + s.user_op.name;
  j["warp_threads"] = s.warp_threads;
  j["abi"] = s.calling_convention == coop::CallingConvention::kNumba ? "numba" : "c";
  // The rest of the resolved spec, so --json says everything the header written by --out does.
  j["value_dtype"] = ValueDtype(s);
  j["user_type"] = {{"size", s.user_type_size}, {"align", s.user_type_align}};
  j["radix_bits"] = RadixBits(s);
  j["bins"] = s.histogram.bins;
  j["decoded_items_per_thread"] = s.run_length_decode.decoded_items_per_thread;
  j["with_aggregate"] = s.scan.with_aggregate;
  j["warp_time_slicing"] = s.exchange.warp_time_slicing;
  j["prefix_callback"] = s.prefix_callback.name;
  return j;
}

Json EntriesJson(const std::vector<coop::Entry>& entries) {
  Json out = Json::array();
  for (const auto& e : entries) {
    out.push_back(
        {{"symbol", e.symbol}, {"declaration", e.declaration}, {"description", e.description}});
  }
  return out;
}

Json TempStorageJson(uint64_t bytes, uint64_t align) {
  return {{"bytes", bytes}, {"align", align}};
}

Json ToolchainJson(const coop::Toolchain& t) {
  return {{"nvrtc", t.nvrtc_version},
          {"nvjitlink", t.nvjitlink_version},
          {"cccl", t.cccl_version},
          {"header_digest", t.header_digest},
          {"clang", t.clang_version}};
}

Json ChoiceJson(const coop::AlgorithmChoice& c) {
  return {{"requested", c.requested},
          {"chosen", c.chosen},
          {"reason", c.reason},
          {"table_version", c.table_version},
          {"table_digest", c.table_digest}};
}

Json ArtifactJson(const coop::Artifact& a, const std::vector<std::string>& files) {
  Json j = Json::object();
  j["key"] = a.key;
  j["origin"] = coop::OriginName(a.origin);
  j["compile_ms"] = a.compile_ms;
  j["layout_ms"] = a.layout_ms;
  j["pch"] = a.pch_status;
  j["ltoir_bytes"] = a.ltoir.size();
  if (!a.bitcode.key.empty()) {
    j["bitcode"] = {
        {"key", a.bitcode.key},           {"origin", coop::OriginName(a.bitcode.origin)},
        {"bytes", a.bitcode.data.size()}, {"compile_ms", a.bitcode.compile_ms},
        {"pch", a.bitcode.pch_status},    {"compile_log", a.bitcode.compile_log}};
  }
  if (a.parts.size() == 1)
    j["temp_storage"] = TempStorageJson(a.temp_storage_bytes, a.temp_storage_align);
  j["entries"] = EntriesJson(a.entries);
  j["arch"] = a.arch;
  j["toolchain"] = ToolchainJson(a.toolchain);
  if (a.parts.size() == 1) j["spec"] = SpecJson(a.spec);
  Json parts = Json::array();
  for (const auto& p : a.parts) {
    parts.push_back({{"spec", SpecJson(p.spec)},
                     {"temp_storage", TempStorageJson(p.temp_storage_bytes, p.temp_storage_align)},
                     {"entries", EntriesJson(p.entries)}});
    if (!p.algorithm_choice.requested.empty()) {
      parts.back()["algorithm_choice"] = ChoiceJson(p.algorithm_choice);
    }
  }
  j["parts"] = std::move(parts);
  if (!a.algorithm_choice.requested.empty()) {
    j["algorithm_choice"] = ChoiceJson(a.algorithm_choice);
  }
  j["type_definitions"] = a.type_definitions;
  j["compile_log"] = a.compile_log;
  Json inputs = Json::array();
  for (const auto& in : a.link_inputs) {
    inputs.push_back({{"symbol", in.symbol},
                      {"key", in.key},
                      {"ltoir_bytes", in.ltoir.size()},
                      {"bitcode_key", in.bitcode_key},
                      {"bitcode_bytes", in.bitcode.size()}});
  }
  j["link_inputs"] = std::move(inputs);
  if (!files.empty()) j["files"] = files;
  return j;
}

void PrintArtifactText(const coop::Artifact& a, const std::vector<std::string>& files) {
  std::cout << "key:          " << a.key << "\n"
            << "origin:       " << coop::OriginName(a.origin) << "\n";
  for (const auto& p : a.parts) {
    std::cout << "spec:         " << p.spec.family << " " << p.spec.method << " " << p.spec.dtype
              << Shape(p.spec) << " " << a.arch << "\n"
              << "temp storage: " << p.temp_storage_bytes << " bytes, align "
              << p.temp_storage_align << "\n";
    if (!p.algorithm_choice.requested.empty()) {
      std::cout << "algorithm:    " << p.algorithm_choice.chosen
                << " (auto: " << p.algorithm_choice.reason << ")\n";
    }
  }
  if (!a.ltoir.empty()) {
    std::cout << "LTO-IR:       " << a.ltoir.size() << " bytes (compiled in " << a.compile_ms
              << " ms, PCH " << a.pch_status << ")\n";
  }
  if (!a.bitcode.key.empty()) {
    std::cout << "bitcode:      " << a.bitcode.data.size() << " bytes (key "
              << a.bitcode.key.substr(0, 16) << ", " << coop::OriginName(a.bitcode.origin)
              << ", compiled in " << a.bitcode.compile_ms << " ms, PCH " << a.bitcode.pch_status
              << ")\n";
  }
  std::cout << "toolchain:    NVRTC " << a.toolchain.nvrtc_version << ", nvJitLink "
            << a.toolchain.nvjitlink_version << ", CCCL " << a.toolchain.cccl_version
            << ", headers " << a.toolchain.header_digest.substr(0, 16) << "\n";
  if (!a.toolchain.clang_version.empty()) {
    std::cout << "clang:        " << a.toolchain.clang_version << "\n";
  }
  std::cout << "entries:\n";
  for (const auto& e : a.entries) {
    std::cout << "  " << e.declaration << "\n    // " << e.description << "\n";
  }
  for (const auto& in : a.link_inputs) {
    std::cout << "link input:   " << in.symbol << " (";
    if (!in.ltoir.empty()) {
      std::cout << in.ltoir.size() << " bytes LTO-IR"
                << (in.key.empty() ? ", yours" : ", operator " + in.key.substr(0, 16));
    }
    if (!in.bitcode.empty()) {
      std::cout << (in.ltoir.empty() ? "" : "; ") << in.bitcode.size() << " bytes bitcode, "
                << in.bitcode_key.substr(0, 16);
    }
    std::cout << ")\n";
  }
  for (const auto& f : files) std::cout << "wrote " << f << "\n";
}

// --format's values.
coop::Formats ParseFormats(const std::string& v) {
  if (v == "bitcode") return coop::Formats::kBitcode;
  if (v == "both") return coop::Formats::kBoth;
  return coop::Formats::kLtoIr;
}

// The options of specialize besides the spec's: accepted in every spec of a bundle.
struct OutputArgs {
  std::string format = "ltoir";
  std::string out_dir;
  void Add(CLI::App* app, bool with_out, bool with_both) {
    app->add_option("--format", format,
                    with_both ? "ltoir (default), bitcode or both" : "ltoir (default) or bitcode")
        ->check(with_both ? coopctl::OneOf({"ltoir", "bitcode", "both"})
                          : coopctl::OneOf({"ltoir", "bitcode"}));
    if (with_out) {
      app->add_option("--out", out_dir, "write the artifact's files here")->type_name("DIR");
    }
    app->add_flag("--json", g_json, "machine-readable output");
  }
};

// A spec command's specs: the first parsed with the command, each further one ("+ FAMILY ...")
// by an app of its own with the same options.
std::vector<coop::Spec> BundleSpecs(const coopctl::SpecArgs& first,
                                    const std::vector<std::vector<std::string>>& more,
                                    OutputArgs* output, bool with_out, bool with_both) {
  std::vector<coop::Spec> specs{coopctl::ToSpec(first)};
  for (size_t k = 0; k < more.size(); ++k) {
    coopctl::SpecArgs args;
    CLI::App app;
    coopctl::AddSpecOptions(&app, &args);
    output->Add(&app, with_out, with_both);
    coopctl::ParseSegment(&app, "specs[" + std::to_string(k + 1) + "]", more[k]);
    specs.push_back(coopctl::ToSpec(args));
  }
  return specs;
}

int Specialize(coop::Client& client, std::vector<coop::Spec> specs, const OutputArgs& output) {
  const coop::Formats formats = ParseFormats(output.format);
  coopctl::RouteSortFlags(client, &specs);
  auto artifact = specs.size() == 1 ? client.Specialize(specs[0], formats)
                                    : client.SpecializeBundle(specs, formats);
  if (!artifact) FailWith(artifact.error());
  std::vector<std::string> files;
  if (!output.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output.out_dir, ec);
    if (ec) Fail("cannot create " + output.out_dir + ": " + ec.message());
    const std::string stem = FileStem(*artifact);
    const std::filesystem::path dir(output.out_dir);
    auto write = [&](const std::string& name, std::string_view bytes) {
      WriteFile(dir / name, bytes);
      files.push_back((dir / name).string());
    };
    const bool ltoir = formats != coop::Formats::kBitcode;
    const bool bitcode = formats != coop::Formats::kLtoIr;
    if (ltoir) write(stem + ".ltoir", artifact->ltoir);
    if (bitcode) write(stem + ".bc", artifact->bitcode.data);
    write(stem + ".h", Header(*artifact));
    for (size_t n = 0; n < artifact->link_inputs.size(); ++n) {
      const std::string op = stem + ".op" + std::to_string(n);
      if (ltoir) write(op + ".ltoir", artifact->link_inputs[n].ltoir);
      if (bitcode) write(op + ".bc", artifact->link_inputs[n].bitcode);
    }
  }
  if (g_json) {
    Print(ArtifactJson(*artifact, files));
  } else {
    PrintArtifactText(*artifact, files);
  }
  return 0;
}

Json AutoJson(const coop::AutoExplanation& a) {
  Json measured = Json::array();
  for (const auto& m : a.measured) {
    measured.push_back({{"algorithm", m.algorithm},
                        {"median_gbps", m.median_gbps},
                        {"min_gbps", m.min_gbps},
                        {"max_gbps", m.max_gbps},
                        {"n", m.n},
                        {"eligible", m.eligible}});
  }
  Json j = {{"choice", ChoiceJson(a.choice)},
            {"eligible", a.eligible},
            {"filtered_out", a.filtered_out},
            {"baseline", a.baseline},
            {"dtype_size", a.dtype_size},
            {"threads", a.threads},
            {"items_per_thread", a.items_per_thread},
            {"measured_method", a.measured_method},
            {"table_arch", a.table_arch},
            {"rule", a.rule},
            {"measured", measured}};
  if (!a.cell_family.empty()) {
    j["cell"] = {{"family", a.cell_family},
                 {"method", a.cell_method},
                 {"dtype_size", a.cell_dtype_size},
                 {"threads", a.cell_threads},
                 {"items_per_thread", a.cell_items_per_thread},
                 {"run", a.cell_run},
                 {"choice", a.cell_choice}};
  }
  if (a.rule == "nearest") j["distance"] = a.distance;
  return j;
}

void PrintAuto(const coop::AutoExplanation& a) {
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  std::cout << "algorithm auto: " << a.choice.chosen << "\n"
            << "  reason:    " << a.choice.reason << "\n"
            << "  eligible:  " << join(a.eligible) << " (baseline, CUB's default: " << a.baseline
            << ")\n";
  for (const auto& f : a.filtered_out) std::cout << "  excluded:  " << f << "\n";
  std::cout << "  looked up: " << a.measured_method << " cells at S=" << a.dtype_size
            << " T=" << a.threads << " N=" << a.items_per_thread << "\n";
  if (a.table_arch.empty()) {
    std::cout << "  table:     none for this arch\n";
  } else {
    std::cout << "  table:     " << a.table_arch << " version " << a.choice.table_version
              << " sha256 " << a.choice.table_digest.substr(0, 16) << "\n";
  }
  if (!a.cell_family.empty()) {
    char dist[32];
    std::snprintf(dist, sizeof(dist), "%.2f", a.distance);
    std::cout << "  cell:      " << a.cell_family << "/" << a.cell_method
              << " S=" << a.cell_dtype_size << " T=" << a.cell_threads
              << " N=" << a.cell_items_per_thread << " (run " << a.cell_run << "; "
              << (a.rule == "exact" ? std::string("exact match")
                                    : "nearest, distance " + std::string(dist))
              << ")\n";
    std::cout << "  measured (median GB/s, min..max, n):\n";
    for (const auto& m : a.measured) {
      char line[160];
      std::snprintf(line, sizeof(line), "    %-26s %9.1f  %.1f..%.1f  n=%u%s%s",
                    m.algorithm.c_str(), m.median_gbps, m.min_gbps, m.max_gbps, m.n,
                    m.algorithm == a.choice.chosen ? "  <- chosen" : "",
                    m.eligible ? "" : "  (not eligible)");
      std::cout << line << "\n";
    }
  }
}

int Explain(coop::Client& client, std::vector<coop::Spec> specs, const OutputArgs& output) {
  if (specs.size() > 1) UsageFail("explain: takes one spec (no \"+\" bundles)");
  coopctl::RouteSortFlags(client, &specs);
  auto e = client.Explain(specs[0], ParseFormats(output.format));
  if (!e) FailWith(e.error());
  if (g_json) {
    Json components = Json::array();
    for (const auto& c : e->components) {
      components.push_back({{"name", c.name}, {"value", c.value}, {"digest", c.digest}});
    }
    Json others = Json::array();
    for (const auto& o : e->others) {
      others.push_back({{"key", o.key},
                        {"created_at", static_cast<uint64_t>(o.created_at)},
                        {"differing", o.differing}});
    }
    Json j = {
        {"key", e->key}, {"cached", e->cached}, {"components", components}, {"others", others}};
    if (e->auto_choice) j["auto"] = AutoJson(*e->auto_choice);
    Print(j);
    return 0;
  }
  if (e->auto_choice) PrintAuto(*e->auto_choice);
  std::cout << "key:    " << e->key << (e->cached ? "  (cached)" : "  (not cached)") << "\n";
  for (const auto& c : e->components) {
    std::string value = c.value;
    for (auto& ch : value) {
      if (ch == '\n') ch = ' ';
    }
    std::cout << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ')
              << c.digest.substr(0, 16) << (value.empty() ? "" : "  " + value) << "\n";
  }
  if (e->others.empty() && !e->cached) {
    std::cout << "no other entries for this request: it has never been compiled with this cache\n";
  }
  for (const auto& o : e->others) {
    std::cout << "other key " << o.key.substr(0, 16) << " for the same request differs in: ";
    for (size_t k = 0; k < o.differing.size(); ++k) {
      std::cout << (k ? ", " : "") << o.differing[k];
    }
    std::cout << "\n";
  }
  return 0;
}

// The order of --ltoir and --ptx as given (CLI11 keeps each option's values apart).
std::vector<coop::LinkModule> LinkModules(const std::vector<std::string>& args) {
  std::vector<coop::LinkModule> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], path;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      path = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < args.size()) {
      path = args[i + 1];
    }
    if (flag != "--ltoir" && flag != "--ptx") continue;
    if (eq == std::string::npos) ++i;
    out.push_back({flag == "--ptx" ? coop::LinkInputKind::kPtx : coop::LinkInputKind::kLtoIr,
                   std::filesystem::path(path).filename().string(),
                   coopctl::ReadFileOrFail(flag, path)});
  }
  return out;
}

struct LinkArgs {
  std::string arch, out;
  std::vector<std::string> ltoir, ptx, artifacts, options;
  bool keep_unused = false;
  void Add(CLI::App* app) {
    app->add_option("--arch", arch, "target architecture, e.g. sm_90");
    app->add_option("--ltoir", ltoir, "a kernel module as LTO-IR (repeatable)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    app->add_option("--ptx", ptx, "a kernel module as PTX (repeatable)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    app->add_option("--artifact", artifacts, "a cached artifact's key (repeatable)")
        ->type_name("KEY")
        ->allow_extra_args(false);
    app->add_option("--option", options, "an extra nvJitLink option (repeatable)")
        ->type_name("OPT")
        ->allow_extra_args(false);
    app->add_flag("--keep-unused-variables", keep_unused,
                  "link without -optimize-unused-variables");
    app->add_option("--out", out, "the cubin to write")->type_name("FILE");
    app->add_flag("--json", g_json, "machine-readable output");
  }
};

int Link(coop::Client& client, const LinkArgs& args, const std::vector<std::string>& raw) {
  if (args.ltoir.empty() && args.ptx.empty()) {
    UsageFail("link: give the kernel with --ltoir FILE or --ptx FILE");
  }
  if (args.out.empty()) UsageFail("link: give the output cubin path with --out FILE");
  coop::LinkRequest request;
  request.arch = args.arch;
  request.modules = LinkModules(raw);
  request.artifact_keys = args.artifacts;
  request.options = args.options;
  request.keep_unused_variables = args.keep_unused;
  auto result = client.Link(request);
  if (!result) FailWith(result.error());
  WriteFile(args.out, result->cubin);
  if (g_json) {
    Print({{"key", result->key},
           {"origin", coop::OriginName(result->origin)},
           {"link_ms", result->link_ms},
           {"cubin_bytes", result->cubin.size()},
           {"options", result->options},
           {"file", args.out}});
  } else {
    std::cout << "wrote " << args.out << " (" << result->cubin.size() << " bytes, "
              << coop::OriginName(result->origin) << ", linked in " << result->link_ms << " ms)\n";
  }
  return 0;
}

// "tcp 0.0.0.0:7070: TLS, client certificates, tokens" or "...: INSECURE (plaintext)".
std::string ListenerText(const coop::Listener& l) {
  std::string out = l.address + ":";
  if (!l.mode.empty()) out += " " + l.mode;
  if (l.address.rfind("tcp ", 0) == 0) out += l.tls ? " TLS" : " plaintext";
  if (l.client_certificates) out += ", client certificates";
  if (l.tokens) out += ", bearer tokens";
  if (l.insecure) out += l.tls ? "  INSECURE: no client authentication" : "  INSECURE: no TLS";
  return out;
}

int Stats(coop::Client& client, bool zero) {
  // --zero prints the counters as they were, then zeroes them.
  auto s = zero ? client.ResetStats() : client.GetStats();
  if (!s) FailWith(s.error());
  if (g_json) {
    Json j = Json::object();
    j["requests"] = s->requests;
    j["invalid_requests"] = s->invalid_requests;
    j["memory_hits"] = s->memory_hits;
    j["disk_hits"] = s->disk_hits;
    j["misses"] = s->misses;
    j["compiles"] = s->compiles;
    j["compile_failures"] = s->compile_failures;
    j["compile_ms_total"] = s->compile_ms_total;
    j["memory_entries"] = s->memory_entries;
    j["memory_bytes"] = s->memory_bytes;
    j["disk_entries"] = s->disk_entries;
    j["disk_bytes"] = s->disk_bytes;
    j["disk_write_failures"] = s->disk_write_failures;
    j["uptime_s"] = s->uptime_s;
    j["cache_path"] = s->cache_path;
    j["pch_warm_compiles"] = s->pch_warm_compiles;
    j["joined_requests"] = s->joined_requests;
    j["worker_restarts"] = s->worker_restarts;
    j["worker_crashes"] = s->worker_crashes;
    j["compile_timeouts"] = s->compile_timeouts;
    j["queue_depth"] = s->queue_depth;
    j["workers"] = s->workers;
    j["workers_busy"] = s->workers_busy;
    j["compile_ms_p50"] = s->compile_ms_p50;
    j["compile_ms_p90"] = s->compile_ms_p90;
    j["compile_ms_p99"] = s->compile_ms_p99;
    j["links"] = s->links;
    j["link_failures"] = s->link_failures;
    j["link_hits"] = s->link_hits;
    j["bundles"] = s->bundles;
    j["corruptions"] = s->corruptions;
    j["evictions"] = s->evictions;
    j["cache_degraded"] = s->cache_degraded;
    j["bitcode_compiles"] = s->bitcode_compiles;
    j["remote_hits"] = s->remote_hits;
    j["listeners"] = nlohmann::json::array();
    for (const auto& l : s->listeners) {
      nlohmann::json o = {{"address", l.address},
                          {"tls", l.tls},
                          {"client_certificates", l.client_certificates},
                          {"tokens", l.tokens},
                          {"insecure", l.insecure}};
      if (!l.mode.empty()) o["mode"] = l.mode;
      j["listeners"].emplace_back(std::move(o));
    }
    j["unauthenticated_calls"] = s->unauthenticated_calls;
    j["denied_calls"] = s->denied_calls;
    j["client_in_flight_refusals"] = s->client_in_flight_refusals;
    j["client_rate_refusals"] = s->client_rate_refusals;
    j["undecodable_requests"] = s->undecodable_requests;
    j["oversized_requests"] = s->oversized_requests;
    j["requests_cancelled"] = s->requests_cancelled;
    j["compiles_cancelled"] = s->compiles_cancelled;
    j["quota_compile_refusals"] = s->quota_compile_refusals;
    j["quota_bytes_refusals"] = s->quota_bytes_refusals;
    j["tuning_digest"] = s->tuning_digest;
    j["auto_resolutions"] = s->auto_resolutions;
    j["tuning_tables"] = nlohmann::json::array();
    for (const auto& t : s->tuning_tables) {
      j["tuning_tables"].push_back({{"arch", t.arch},
                                    {"version", t.version},
                                    {"digest", t.digest},
                                    {"source", t.source},
                                    {"device", t.device},
                                    {"cells", t.cells},
                                    {"placeholder", t.placeholder}});
    }
    j["memo"] = {{"hits", s->memo_hits},
                 {"misses", s->memo_misses},
                 {"entries", s->memo_entries},
                 {"evictions", s->memo_evictions}};
    j["digest_only_replies"] = s->digest_only_replies;
    j["bytes_omitted"] = s->bytes_omitted;
    if (s->remote.configured) {
      const auto& r = s->remote;
      j["remote"] = {{"url", r.url},
                     {"cluster", r.cluster},
                     {"read_only", r.read_only},
                     {"healthy", r.healthy},
                     {"hits", r.hits},
                     {"misses", r.misses},
                     {"errors", r.errors},
                     {"timeouts", r.timeouts},
                     {"reconnects", r.reconnects},
                     {"corruptions", r.corruptions},
                     {"writes", r.writes},
                     {"write_failures", r.write_failures},
                     {"writes_skipped", r.writes_skipped},
                     {"writes_dropped", r.writes_dropped},
                     {"redirects", r.redirects},
                     {"slot_refreshes", r.slot_refreshes},
                     {"leases_acquired", r.leases_acquired},
                     {"lease_waits", r.lease_waits},
                     {"lease_wait_hits", r.lease_wait_hits},
                     {"lease_wait_timeouts", r.lease_wait_timeouts},
                     {"lease_takeovers", r.lease_takeovers},
                     {"leases_lost", r.leases_lost}};
    }
    Json tiers = Json::array();
    for (const auto& t : s->tiers) {
      tiers.push_back({{"name", t.name},
                       {"hits", t.hits},
                       {"misses", t.misses},
                       {"entries", t.entries},
                       {"bytes", t.bytes},
                       {"raw_bytes", t.raw_bytes},
                       {"budget_bytes", t.budget_bytes},
                       {"evictions", t.evictions},
                       {"corruptions", t.corruptions},
                       {"write_failures", t.write_failures},
                       {"degraded", t.degraded}});
    }
    j["tiers"] = std::move(tiers);
    Json workers = Json::array();
    for (const auto& ws : s->worker_status) {
      workers.push_back({{"pid", static_cast<uint64_t>(ws.pid)},
                         {"busy", ws.busy},
                         {"jobs", ws.jobs},
                         {"header_set", ws.header_set}});
    }
    j["worker_status"] = std::move(workers);
    j["toolchain"] = ToolchainJson(s->toolchain);
    Print(j);
  } else {
    std::cout << "requests:        " << s->requests << " (" << s->invalid_requests << " invalid)\n"
              << "hits:            " << s->memory_hits << " memory, " << s->disk_hits << " disk, "
              << s->remote_hits << " remote\n"
              << "hit path:        " << s->memo_hits << " memo hits, " << s->memo_misses
              << " memo misses (" << s->memo_entries << " entries, " << s->memo_evictions
              << " evictions); " << s->digest_only_replies << " digest-only replies ("
              << s->bytes_omitted << " bytes left out)\n"
              << "misses:          " << s->misses << "\n"
              << "compiles:        " << s->compiles << " (" << s->compile_failures << " failed), "
              << s->compile_ms_total << " ms total; " << s->bitcode_compiles << " of them clang\n"
              << "cache:           " << s->cache_path
              << (s->cache_degraded ? "  DEGRADED: cannot store, compiling without caching" : "")
              << "\n";
    for (const auto& t : s->tiers) {
      std::cout << "  " << t.name << ": " << t.entries << " entries, " << t.bytes
                << " bytes stored (" << t.raw_bytes << " raw, budget " << t.budget_bytes << "), "
                << t.hits << " hits, " << t.misses << " misses, " << t.evictions << " evictions, "
                << t.corruptions << " corruptions, " << t.write_failures << " write failures\n";
    }
    if (s->remote.configured) {
      const auto& r = s->remote;
      std::cout << "farm tier:       " << r.url << (r.cluster ? " (cluster)" : "")
                << (r.read_only ? " read-only" : "")
                << (r.healthy ? "" : "  UNHEALTHY: reconnecting") << "\n  " << r.errors
                << " errors, " << r.timeouts << " timeouts, " << r.reconnects << " reconnects, "
                << r.writes << " writes (" << r.write_failures << " failed, " << r.writes_skipped
                << " skipped), leases: " << r.leases_acquired << " taken, " << r.lease_waits
                << " waits (" << r.lease_wait_hits << " served, " << r.lease_wait_timeouts
                << " timed out)\n";
    }
    for (const auto& l : s->listeners) std::cout << "listening:       " << ListenerText(l) << "\n";
    std::cout << "access:          " << s->unauthenticated_calls << " calls unauthenticated, "
              << s->denied_calls << " denied\n";
    std::cout << "refused:         " << s->client_in_flight_refusals
              << " over a client's in-flight limit, " << s->client_rate_refusals
              << " over its rate; " << s->undecodable_requests << " requests undecodable, "
              << s->oversized_requests << " oversized\n";
    std::cout << "cancelled:       " << s->requests_cancelled << " requests stopped waiting, "
              << s->compiles_cancelled << " compiles stopped for it\n";
    std::cout << "quotas:          " << s->quota_compile_refusals
              << " compiles refused over a client's compiles per minute, "
              << s->quota_bytes_refusals << " over its cache bytes per hour\n";
    for (const auto& t : s->tuning_tables) {
      std::cout << "tuning table:    " << t.arch << " version " << t.version << " sha256 "
                << t.digest.substr(0, 16) << " (" << t.source << ", " << t.cells << " cells"
                << (t.placeholder ? ", placeholder: not measured" : "") << ")\n";
    }
    std::cout << "algorithm auto:  " << s->auto_resolutions << " specs resolved"
              << (s->tuning_tables.empty() ? " (no tuning table: CUB's defaults)" : "") << "\n";
    std::cout << "compile times:   p50 " << s->compile_ms_p50 << " ms, p90 " << s->compile_ms_p90
              << " ms, p99 " << s->compile_ms_p99 << " ms; " << s->pch_warm_compiles
              << " on a warm PCH\n"
              << "single-flight:   " << s->joined_requests
              << " requests joined a compile in flight\n"
              << "workers:         " << s->workers << " (" << s->workers_busy << " busy, queue "
              << s->queue_depth << "), " << s->worker_restarts << " restarts, " << s->worker_crashes
              << " crashes, " << s->compile_timeouts << " timeouts\n"
              << "links:           " << s->links << " (" << s->link_failures << " failed, "
              << s->link_hits << " cache hits); bundles " << s->bundles << "\n"
              << "toolchain:       NVRTC " << s->toolchain.nvrtc_version << ", CCCL "
              << s->toolchain.cccl_version << "; bitcode: "
              << (s->toolchain.clang_version.empty() ? "unavailable (no clang)"
                                                     : s->toolchain.clang_version)
              << "\n"
              << "uptime:          " << s->uptime_s << " s\n";
  }
  return 0;
}

// --family/--dtype/--arch of ls and purge.
struct FilterArgs {
  coop::CacheFilter filter;
  void Add(CLI::App* app) {
    app->add_option("--family", filter.family, "only entries of this family (or bundle, link)");
    app->add_option("--dtype", filter.dtype, "only entries of this dtype");
    app->add_option("--arch", filter.arch, "only entries for this arch");
  }
};

int Ls(coop::Client& client, const coop::CacheFilter& filter, const std::string& limit,
       bool manifest) {
  const uint32_t n = limit.empty() ? 0 : coopctl::ParseUint("--limit", limit);
  auto entries = client.ListEntries(filter, n, manifest);
  if (!entries) FailWith(entries.error());
  if (manifest) {
    std::vector<std::string> left_out;
    const Json doc = coopctl::ManifestOf(*entries, &left_out);
    Print(doc);
    for (const auto& l : left_out) std::cerr << "coopctl: ls --manifest: left out " << l << "\n";
    return 0;
  }
  if (g_json) {
    Json out = Json::array();
    for (const auto& e : *entries) {
      out.push_back({{"key", e.key},
                     {"family", e.family},
                     {"dtype", e.dtype},
                     {"arch", e.arch},
                     {"raw_bytes", e.raw_bytes},
                     {"stored_bytes", e.stored_bytes},
                     {"created_at", static_cast<uint64_t>(e.created_at)},
                     {"last_access", static_cast<uint64_t>(e.last_access)}});
    }
    Print(out);
    return 0;
  }
  for (const auto& e : *entries) {
    std::cout << e.key.substr(0, 16) << "  " << e.family << " " << e.dtype << " " << e.arch << "  "
              << e.stored_bytes << " bytes stored (" << e.raw_bytes << " raw)\n";
  }
  std::cout << entries->size() << " entries\n";
  return 0;
}

int Purge(coop::Client& client, const coop::CacheFilter& filter, bool all) {
  if (!all && filter.family.empty() && filter.dtype.empty() && filter.arch.empty()) {
    UsageFail("purge: give --all, or a filter (--family, --dtype, --arch)");
  }
  auto n = client.Purge(filter, all);
  if (!n) FailWith(n.error());
  if (g_json) {
    Print({{"entries_removed", *n}});
  } else {
    std::cout << "removed " << *n << " entries\n";
  }
  return 0;
}

int Verify(coop::Client& client) {
  auto r = client.Verify();
  if (!r) FailWith(r.error());
  if (g_json) {
    Print({{"entries_checked", r->entries_checked},
           {"blobs_checked", r->blobs_checked},
           {"bad_removed", r->bad_removed},
           {"bad_keys", r->bad_keys}});
  } else {
    std::cout << "checked " << r->entries_checked << " entries and " << r->blobs_checked
              << " blobs; removed " << r->bad_removed << " bad entries\n";
    for (const auto& k : r->bad_keys) std::cout << "  removed " << k << "\n";
  }
  return 0;
}

int Vacuum(coop::Client& client) {
  auto r = client.Vacuum();
  if (!r) FailWith(r.error());
  if (g_json) {
    Print({{"file_bytes_before", r->file_bytes_before}, {"file_bytes_after", r->file_bytes_after}});
  } else {
    std::cout << "database file: " << r->file_bytes_before << " -> " << r->file_bytes_after
              << " bytes\n";
  }
  return 0;
}

// grpc_health_probe's exit statuses (its README): what `health --probe-exit-codes` returns.
enum ProbeExit {
  kProbeServing = 0,
  kProbeInvalidArguments = 1,
  kProbeConnectionFailure = 2,
  kProbeRpcFailure = 3,
  kProbeUnhealthy = 4,
};

// coopctl's exit status for `health` as grpc_health_probe's.
int ProbeExitStatus(int coopctl_status, bool answered_not_serving) {
  if (answered_not_serving) return kProbeUnhealthy;
  switch (coopctl_status) {
    case coopctl::kExitOk:
      return kProbeServing;
    case coopctl::kExitUsage:
      return kProbeInvalidArguments;
    case coopctl::kExitUnreachable:
      return kProbeConnectionFailure;
    default:
      return kProbeRpcFailure;
  }
}

int Health(coop::Client& client, const std::string& service) {
  auto print_json = [&client](const char* status) {
    Print({{"status", status}, {"socket", Where(client)}});
  };
  auto h = client.Health(service);
  if (!h && h.error().code == coop::ErrorCode::kUnavailable && !h.error().from_server) {
    if (g_json) print_json("NOT_RUNNING");
    CommandError e(
        coopctl::kExitUnreachable, "UNAVAILABLE",
        "coopd is not running on " + Where(client) + " (coopctl health never starts it)");
    e.json_printed = true;
    throw e;
  }
  // Every other answer but SERVING is exit status 1, as for probes.
  if (!h) {
    CommandError e(coopctl::kExitFailed, coop::ErrorCodeName(h.error().code),
                   std::string(coop::ErrorCodeName(h.error().code)) + ": " + ErrorText(h.error()));
    throw e;
  }
  // An --insecure TCP listener is said on every health check (when the stats can be read).
  if (auto stats = client.GetStats()) {
    for (const auto& l : stats->listeners) {
      if (l.insecure) std::cerr << "warning: coopd serves " << ListenerText(l) << "\n";
    }
  }
  const char* name = coop::HealthStatusName(*h);
  if (g_json) {
    print_json(name);
  } else {
    std::cout << name << " (" << Where(client) << ")\n";
  }
  return *h == coop::HealthStatus::kServing ? 0 : 1;
}

int Stop(coop::Client& client, bool wait) {
  auto accepted = client.Stop();
  if (!accepted && accepted.error().code == coop::ErrorCode::kUnavailable &&
      !accepted.error().from_server) {
    throw CommandError(coopctl::kExitUnreachable, "UNAVAILABLE",
                       "coopd is not running on " + Where(client));
  }
  if (!accepted) FailWith(accepted.error());
  // Stopped once it no longer answers at all (while it drains, health says NOT_SERVING).
  const auto deadline = std::chrono::steady_clock::now() + g_global.ToOptions().timeout;
  bool stopped = !wait;
  while (wait && !stopped) {
    auto h = client.Health();
    stopped = !h && h.error().code == coop::ErrorCode::kUnavailable && !h.error().from_server;
    if (stopped || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!stopped) {
    throw CommandError(coopctl::kExitBusy, "DEADLINE_EXCEEDED",
                       "coopd on " + Where(client) + " accepted the stop but still answers (it " +
                           "drains for up to its shutdown grace; raise --timeout to wait longer)");
  }
  if (g_json) {
    Print({{"status", wait ? "STOPPED" : "STOPPING"}, {"socket", Where(client)}});
  } else {
    std::cout << (wait ? "stopped" : "stopping") << " (" << Where(client) << ")\n";
  }
  return 0;
}

int CatalogCommand(coop::Client& client) {
  auto c = client.GetCatalog();
  if (!c) FailWith(c.error());
  if (g_json) {
    Json families = Json::array();
    for (const auto& f : c->families) {
      Json methods = Json::array();
      for (const auto& m : f.methods) {
        methods.push_back({{"name", m.name},
                           {"needs_op", m.needs_op},
                           {"op_kind", m.op_kind},
                           {"description", m.description}});
      }
      Json fj = Json::object();
      fj["name"] = f.name;
      fj["description"] = f.description;
      fj["methods"] = std::move(methods);
      fj["algorithms"] = f.algorithms;
      fj["default_algorithm"] = f.default_algorithm;
      fj["warp"] = f.warp;
      fj["max_items_per_thread"] = f.max_items_per_thread;
      fj["scan_options"] = f.scan_options;
      fj["warp_multiple_algorithms"] = f.warp_multiple_algorithms;
      fj["exchange_options"] = f.exchange_options;
      fj["family_options"] = f.family_options;
      fj["dtypes"] = f.dtypes;
      fj["power_of_two_threads"] = f.power_of_two_threads;
      fj["available"] = f.available;
      fj["requires"] = f.requires;
      fj["auto_algorithms"] = f.auto_algorithms;
      fj["auto_baseline"] = f.auto_baseline;
      fj["auto_measured_method"] = f.auto_measured_method;
      families.push_back(std::move(fj));
    }
    Json kinds = Json::array();
    for (const auto& k : c->op_kinds) {
      kinds.push_back({{"name", k.name}, {"signature", k.signature}, {"builtins", k.builtins}});
    }
    Json j = Json::object();
    j["families"] = std::move(families);
    j["dtypes"] = c->dtypes;
    j["builtin_ops"] = c->builtin_ops;
    j["op_kinds"] = std::move(kinds);
    j["archs"] = c->archs;
    j["calling_conventions"] = c->calling_conventions;
    j["bitcode_archs"] = c->bitcode_archs;
    j["bitcode_unavailable"] = c->bitcode_unavailable;
    Print(j);
    return 0;
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  for (const auto& f : c->families) {
    std::cout << f.name << ": " << f.description << "\n";
    if (!f.available) std::cout << "  UNAVAILABLE here: needs " << f.requires << "\n";
    for (size_t i = 0; i < f.methods.size(); ++i) {
      const auto& m = f.methods[i];
      std::cout << "  --method " << m.name << (i == 0 ? " (default)" : "")
                << (m.needs_op ? " --op " + m.op_kind : "") << ": " << m.description << "\n";
    }
    if (!f.algorithms.empty()) {
      std::cout << "  --algorithm " << join(f.algorithms)
                << (f.default_algorithm.empty() ? " (required)"
                                                : " (default " + f.default_algorithm + ")")
                << (f.auto_algorithms.empty() ? "" : ", or auto") << "\n";
      if (!f.auto_algorithms.empty()) {
        std::cout << "  --algorithm auto: the fastest of " << join(f.auto_algorithms)
                  << " for the spec, from the tuning table (" << f.auto_measured_method
                  << " measured; fallback " << f.auto_baseline << ")\n";
      }
    }
    std::cout << (f.warp                   ? "  --warp-threads 1, 2, 4, 8, 16, 32 (default 32)\n"
                  : f.power_of_two_threads ? "  --threads X[,Y[,Z]] (x*y*z a power of two)\n"
                                           : "  --threads X[,Y[,Z]] (1..1024 in all)\n");
    if (f.dtypes.size() != c->dtypes.size()) std::cout << "  --dtype " << join(f.dtypes) << "\n";
    std::cout << "  --items 1.." << f.max_items_per_thread << "\n";
    if (f.scan_options) std::cout << "  --with-aggregate\n";
    if (f.exchange_options) std::cout << "  --warp-time-slicing\n";
    if (f.family_options == "radix_sort" || f.family_options == "merge_sort" ||
        f.family_options == "top_k") {
      std::cout << "  --value-dtype T (key-value pairs; default keys only)\n";
    }
    if (f.family_options == "radix_sort") std::cout << "  --radix-bits 1..8 (default 4)\n";
    if (f.family_options == "histogram") std::cout << "  --bins 1..65536 (required)\n";
    if (f.family_options == "radix_rank") std::cout << "  --radix-bits 1..8 (required)\n";
    if (f.family_options == "run_length_decode") {
      std::cout << "  --items N: runs per thread; --decoded-items 1..64 (required)\n";
    }
  }
  std::cout << "dtypes: " << join(c->dtypes) << "\n";
  for (const auto& k : c->op_kinds) {
    std::cout << "operators, " << k.name << " " << k.signature << ": " << join(k.builtins) << "\n";
  }
  std::cout << "archs: " << join(c->archs) << "\n"
            << "bitcode archs (--format bitcode): "
            << (c->bitcode_archs.empty() ? "none: " + c->bitcode_unavailable
                                         : join(c->bitcode_archs))
            << "\n"
            << "abi: " << join(c->calling_conventions) << "\n";
  return 0;
}

// ---- plan ------------------------------------------------------------------------------------

// "NAME=BYTES[,ALIGN[,COUNT]]" of --reserve (align defaults to 1).
coop::PlanReservation ParseReservation(const std::string& v) {
  const size_t eq = v.find('=');
  auto bad = [&v]() {
    UsageFail("--reserve: expected NAME=BYTES[,ALIGN[,COUNT]], got \"" + v + "\"");
  };
  if (eq == std::string::npos || eq == 0) bad();
  std::vector<std::string> parts;
  for (size_t start = eq + 1;;) {
    const size_t comma = v.find(',', start);
    parts.push_back(v.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3) bad();
  coop::PlanReservation r;
  r.name = v.substr(0, eq);
  r.bytes = coopctl::ParseUint("--reserve", parts[0]);
  r.align = parts.size() > 1 ? coopctl::ParseUint("--reserve", parts[1]) : 1;
  r.count = parts.size() > 2 ? coopctl::ParseUint("--reserve", parts[2]) : 0;
  return r;
}

// One use: NAME[@FIRST[-LAST]] [--count N] (--bytes N [--align A] | SPEC).
coop::PlanUse ParsePlanUse(const std::vector<std::string>& segment, size_t index) {
  const std::string where = "plan: uses[" + std::to_string(index) + "]";
  std::string head, count, bytes, align;
  CLI::App app;
  app.add_option("NAME", head, "NAME[@FIRST[-LAST]]")->required();
  app.add_option("--count", count, "instances");
  app.add_option("--bytes", bytes, "size, instead of a spec");
  app.add_option("--align", align, "alignment, with --bytes");
  app.add_flag("--json", g_json, "machine-readable output");
  app.prefix_command();  // the spec, from its FAMILY on
  std::vector<std::string> reversed(segment.rbegin(), segment.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    UsageFail(where + ": " + e.what());
  }
  std::vector<std::string> spec_args = app.remaining();
  coop::PlanUse use;
  const size_t at = head.find('@');
  use.name = head.substr(0, at);
  if (at != std::string::npos) {
    const std::string span = head.substr(at + 1);
    const size_t dash = span.find('-');
    use.first = coopctl::ParseUint(head, span.substr(0, dash));
    use.last =
        dash == std::string::npos ? use.first : coopctl::ParseUint(head, span.substr(dash + 1));
  }
  if (!count.empty()) use.count = coopctl::ParseUint("--count", count);
  const bool sized = !bytes.empty() || !align.empty();
  if (!bytes.empty()) use.bytes = coopctl::ParseUint("--bytes", bytes);
  if (!align.empty()) use.align = coopctl::ParseUint("--align", align);
  if (!spec_args.empty()) {
    if (spec_args[0].rfind("-", 0) == 0) {
      UsageFail("plan: unknown argument \"" + spec_args[0] + "\" for use \"" + use.name +
                "\" (before its FAMILY: --count, --bytes, --align)");
    }
    if (sized) UsageFail("plan: use \"" + use.name + "\" has --bytes/--align and a spec: give one");
    coopctl::SpecArgs args;
    CLI::App spec_app;
    coopctl::AddSpecOptions(&spec_app, &args);
    spec_app.add_flag("--json", g_json, "machine-readable output");
    coopctl::ParseSegment(&spec_app, where, spec_args);
    use.spec = coopctl::ToSpec(args);
  } else if (!sized) {
    UsageFail("plan: use \"" + use.name + "\" needs a spec (FAMILY ...) or --bytes N --align A");
  }
  if (sized && use.align == 0) use.align = 1;
  return use;
}

Json PlanRegionJson(const coop::PlanRegion& r, bool use) {
  Json j = {{"name", r.name},       {"offset", r.offset}, {"bytes", r.bytes},  {"align", r.align},
            {"padding", r.padding}, {"count", r.count},   {"stride", r.stride}};
  if (use) {
    j["first"] = r.first;
    j["last"] = r.last;
    j["artifact_key"] = r.artifact_key;
  }
  return j;
}

int Plan(coop::Client& client, const std::string& base_offset,
         const std::vector<std::string>& reserves, const std::vector<std::string>& uses) {
  coop::PlanRequest request;
  if (!base_offset.empty()) request.base_offset = coopctl::ParseUint("--base-offset", base_offset);
  for (const auto& r : reserves) request.reservations.push_back(ParseReservation(r));
  if (!uses.empty()) {
    const auto segments = coopctl::SplitAtPlus(uses);
    for (size_t k = 0; k < segments.size(); ++k) {
      request.uses.push_back(ParsePlanUse(segments[k], k));
    }
  }
  // --value-dtype / --radix-bits into each spec's own options message, as for specialize.
  std::vector<coop::Spec> specs;
  for (const auto& use : request.uses) {
    if (use.spec) specs.push_back(*use.spec);
  }
  coopctl::RouteSortFlags(client, &specs);
  for (size_t u = 0, k = 0; u < request.uses.size(); ++u) {
    if (request.uses[u].spec) request.uses[u].spec = specs[k++];
  }
  auto plan = client.Plan(request);
  if (!plan) FailWith(plan.error());
  if (g_json) {
    Json reservations = Json::array(), placed = Json::array();
    for (const auto& r : plan->reservations) reservations.push_back(PlanRegionJson(r, false));
    for (const auto& r : plan->uses) placed.push_back(PlanRegionJson(r, true));
    Print({{"dynamic_shared_bytes", plan->dynamic_shared_bytes},
           {"base_align", plan->base_align},
           {"reserved_bytes", plan->reserved_bytes},
           {"no_reuse_bytes", plan->no_reuse_bytes},
           {"reservations", reservations},
           {"uses", placed}});
    return 0;
  }
  std::cout << "dynamic shared memory: " << plan->dynamic_shared_bytes << " bytes, aligned to "
            << plan->base_align << " (reserved " << plan->reserved_bytes << ", without reuse "
            << plan->no_reuse_bytes << ")\n";
  std::printf("%8s %8s %6s %4s %7s  %s\n", "offset", "bytes", "align", "pad", "points", "name");
  auto row = [](const coop::PlanRegion& r, const std::string& points) {
    std::string name = r.name;
    if (r.count > 1)
      name += " [" + std::to_string(r.count) + " x " + std::to_string(r.stride) + "]";
    if (!r.artifact_key.empty()) name += "  (artifact " + r.artifact_key.substr(0, 16) + ")";
    std::printf("%8llu %8llu %6llu %4llu %7s  %s\n", static_cast<unsigned long long>(r.offset),
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.align),
                static_cast<unsigned long long>(r.padding), points.c_str(), name.c_str());
  };
  for (const auto& r : plan->reservations) row(r, "all");
  for (const auto& r : plan->uses) {
    row(r, r.first == r.last ? std::to_string(r.first)
                             : std::to_string(r.first) + "-" + std::to_string(r.last));
  }
  return 0;
}

// ---- warm ------------------------------------------------------------------------------------

// What became of one manifest item.
struct WarmResult {
  bool done = false, ok = false, compiled = false;
  std::string origin, key, code, message;
  int exit_status = 0;
  double ms = 0;
};

std::string Clock(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// The progress bar: "[#####-----] 17/50  hits 3  compiled 14  failed 0  ETA 0:23".
std::string Bar(size_t done, size_t total, size_t hits, size_t compiled, size_t failed,
                double elapsed_s) {
  constexpr size_t kWidth = 30;
  const size_t filled = total == 0 ? kWidth : done * kWidth / total;
  std::string eta = "--:--";
  if (done > 0 && done < total) eta = Clock(elapsed_s / done * (total - done));
  if (done == total) eta = Clock(0);
  return "[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " +
         std::to_string(done) + "/" + std::to_string(total) + "  hits " + std::to_string(hits) +
         "  compiled " + std::to_string(compiled) + "  failed " + std::to_string(failed) +
         "  ETA " + eta;
}

std::string ItemText(const coopctl::ManifestItem& item) {
  std::string out;
  for (const auto& s : item.specs) out += (out.empty() ? "" : " + ") + coopctl::Describe(s);
  return out;
}

struct WarmArgs {
  std::string manifest;
  std::string jobs = "4";
  void Add(CLI::App* app) {
    app->add_option("MANIFEST", manifest, "manifest of specs, JSON or YAML (- reads stdin)")
        ->required();
    app->add_option("--jobs", jobs, "requests in flight at once (default 4)")->type_name("N");
    app->add_flag("--dry-run", dry_run, "check the manifest and list its specs; send nothing");
    app->add_flag("--json", g_json, "machine-readable summary");
  }
  bool dry_run = false;
};

// --dry-run: the manifest's items as warm would request them.
int WarmDryRun(const std::vector<coopctl::ManifestItem>& items) {
  const char* kFormats[] = {"ltoir", "bitcode", "both"};
  Json list = Json::array();
  for (const auto& item : items) {
    const char* format = kFormats[static_cast<int>(item.formats)];
    if (g_json) {
      list.push_back({{"item", item.where}, {"spec", ItemText(item)}, {"format", format}});
    } else {
      std::cout << item.where << " " << ItemText(item) << " (" << format << ")\n";
    }
  }
  if (g_json) {
    Print({{"total", items.size()}, {"items", list}});
  } else {
    std::cout << items.size() << " specs\n";
  }
  return 0;
}

int Warm(coop::Client& client, const WarmArgs& args, std::vector<coopctl::ManifestItem> items) {
  const uint32_t jobs = coopctl::ParseUint("--jobs", args.jobs);
  if (jobs == 0 || jobs > 256) UsageFail("warm: --jobs must be 1..256, got " + args.jobs);
  // The sort flags into each family's options message, as for specialize (one catalogue call).
  std::vector<coop::Spec> all;
  for (const auto& item : items) all.insert(all.end(), item.specs.begin(), item.specs.end());
  coopctl::RouteSortFlags(client, &all);
  for (size_t i = 0, k = 0; i < items.size(); ++i) {
    for (auto& s : items[i].specs) s = all[k++];
  }

  const bool bar = isatty(STDERR_FILENO) != 0;
  const bool lines = !g_json && isatty(STDOUT_FILENO) == 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<WarmResult> results(items.size());
  std::mutex mu;
  std::condition_variable changed;
  size_t done = 0, hits = 0, compiled = 0, failed = 0;
  std::atomic<size_t> next{0};

  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < items.size();) {
      const auto& item = items[i];
      const auto t0 = std::chrono::steady_clock::now();
      auto a = item.specs.size() == 1 ? client.Specialize(item.specs[0], item.formats)
                                      : client.SpecializeBundle(item.specs, item.formats);
      WarmResult r;
      r.done = true;
      r.ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (a) {
        r.ok = true;
        r.key = a->key;
        const bool lto = item.formats != coop::Formats::kBitcode;
        const coop::Origin origin = lto ? a->origin : a->bitcode.origin;
        r.compiled =
            origin == coop::Origin::kCompiled ||
            (item.formats == coop::Formats::kBoth && a->bitcode.origin == coop::Origin::kCompiled);
        r.origin = r.compiled ? "compiled" : coop::OriginName(origin);
      } else {
        r.code = coop::ErrorCodeName(a.error().code);
        r.message = OneLine(a.error().message);
        r.exit_status = coopctl::ExitStatusFor(a.error());
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (!r.ok) {
        ++failed;
      } else if (r.compiled) {
        ++compiled;
      } else {
        ++hits;
      }
      if (lines) {
        std::string line = "[" + std::to_string(done) + "/" + std::to_string(items.size()) + "] ";
        if (r.ok) {
          char ms[32];
          std::snprintf(ms, sizeof ms, "%.0f", r.ms);
          line += "ok " + r.origin + " " + r.key.substr(0, 16) + " " + ItemText(item) + " (" + ms +
                  " ms)";
        } else {
          line += "FAILED " + item.where + " " + ItemText(item) + ": " + r.code + ": " + r.message;
        }
        std::cout << line << std::endl;
      }
      results[i] = std::move(r);
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < std::min<size_t>(jobs, items.size()); ++t) threads.emplace_back(work);
  {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (bar) {
        std::cerr << "\r\033[K" << Bar(done, items.size(), hits, compiled, failed, elapsed())
                  << std::flush;
      }
      if (done == items.size()) break;
      // Redrawn at every completion, and twice a second for the ETA.
      changed.wait_for(lock, std::chrono::milliseconds(500));
    }
  }
  for (auto& t : threads) t.join();
  if (bar) std::cerr << "\n";
  const double seconds = elapsed();
  size_t unreachable = 0;
  for (const auto& r : results) unreachable += r.exit_status == coopctl::kExitUnreachable;

  if (g_json) {
    Json list = Json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& r = results[i];
      Json j = {{"item", items[i].where},
                {"spec", ItemText(items[i])},
                {"status", r.ok ? r.origin : "failed"},
                {"ms", r.ms}};
      if (r.ok) {
        j["key"] = r.key;
      } else {
        j["code"] = r.code;
        j["message"] = r.message;
      }
      list.push_back(std::move(j));
    }
    Print({{"total", items.size()},
           {"hits", hits},
           {"compiled", compiled},
           {"failed", failed},
           {"seconds", seconds},
           {"results", list}});
  } else {
    if (bar && !lines) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (results[i].ok) continue;
        std::cerr << "coopctl: warm: " << items[i].where << " " << ItemText(items[i]) << ": "
                  << results[i].code << ": " << results[i].message << "\n";
      }
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", seconds);
    std::cout << "warm: " << items.size() << " specs: " << hits << " hits, " << compiled
              << " compiled, " << failed << " failed (" << secs << " s)\n";
  }
  if (failed == 0) return coopctl::kExitOk;
  if (unreachable == items.size()) {
    const auto& first =
        *std::find_if(results.begin(), results.end(), [](const WarmResult& r) { return !r.ok; });
    std::cerr << "coopctl: warm: every spec failed: " << first.code << ": " << first.message
              << "\n";
    return coopctl::kExitUnreachable;
  }
  std::cerr << "coopctl: warm: " << failed << " of " << items.size() << " specs failed\n";
  return coopctl::kExitPartial;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // With --json anywhere, errors are reported as JSON too, even those found while parsing.
  for (const auto& a : args) g_json = g_json || a == "--json";
  // So with --probe-exit-codes: a usage error of `health` is then grpc_health_probe's 1.
  bool probe_codes = false;
  for (const auto& a : args) probe_codes = probe_codes || a == "--probe-exit-codes";
  std::string command;
  try {
    // The command, after the global options; for the commands that take "+"-joined specs, the
    // first spec goes to CLI11 with the command, the others are parsed one by one.
    size_t command_at = 0;
    while (command_at < args.size() && args[command_at].rfind("-", 0) == 0) {
      const std::string& a = args[command_at];
      const bool takes_value = GlobalOptions::TakesValue(a);  // "--socket=PATH" is one
      command_at += takes_value ? 2 : 1;
    }
    std::vector<std::string> head(args.begin(), args.begin() + std::min(command_at, args.size()));
    std::vector<std::string> rest;
    if (command_at < args.size()) {
      command = args[command_at];
      rest.assign(args.begin() + command_at + 1, args.end());
    }
    // `--help` (or -h) anywhere among a command's arguments prints that command's help, whatever
    // else is there: it is what a user reaches for after a usage error.
    if (FindCommand(command) != nullptr &&
        std::any_of(rest.begin(), rest.end(),
                    [](const std::string& a) { return a == "--help" || a == "-h"; })) {
      rest = {"--help"};
    }
    std::vector<std::vector<std::string>> more;
    if (command == "specialize" || command == "explain") {
      auto segments = coopctl::SplitAtPlus(rest);
      rest = segments[0];
      more.assign(segments.begin() + 1, segments.end());
    }

    CLI::App app("command-line client of coopd", "coopctl");
    app.formatter(std::make_shared<HelpFormatter>());
    app.require_subcommand(1);
    g_global.Add(&app);
    app.add_flag("--json", g_json, "machine-readable output (also after the command)");
    std::map<std::string, CLI::App*> subs;
    for (const auto& c : kCommands) {
      subs[c.name] = app.add_subcommand(c.name, c.summary);
      subs[c.name]->allow_extras();
    }
    coopctl::SpecArgs spec_args;
    OutputArgs output;
    coopctl::AddSpecOptions(subs["specialize"], &spec_args);
    output.Add(subs["specialize"], true, true);
    coopctl::SpecArgs explain_args;
    OutputArgs explain_output;
    coopctl::AddSpecOptions(subs["explain"], &explain_args);
    explain_output.Add(subs["explain"], false, false);
    LinkArgs link;
    link.Add(subs["link"]);
    std::string base_offset;
    std::vector<std::string> reserves;
    subs["plan"]->add_option("--base-offset", base_offset, "bytes kept below the layout");
    subs["plan"]
        ->add_option("--reserve", reserves, "a region live throughout (repeatable)")
        ->type_name("NAME=BYTES[,ALIGN[,COUNT]]")
        ->allow_extra_args(false);
    subs["plan"]->add_flag("--json", g_json, "machine-readable output");
    subs["plan"]->prefix_command();  // the uses, from the first one on
    subs["catalog"]->add_flag("--json", g_json, "machine-readable output");
    bool zero = false;
    subs["stats"]->add_flag("--zero", zero, "zero the counters after printing them");
    subs["stats"]->add_flag("--json", g_json, "machine-readable output");
    FilterArgs ls_filter, purge_filter;
    std::string limit;
    bool manifest = false, all = false;
    ls_filter.Add(subs["ls"]);
    subs["ls"]->add_option("--limit", limit, "at most N entries")->type_name("N");
    auto* ls_json = subs["ls"]->add_flag("--json", g_json, "machine-readable output");
    subs["ls"]
        ->add_flag("--manifest", manifest, "write a manifest for coopctl warm (JSON)")
        ->excludes(ls_json);
    purge_filter.Add(subs["purge"]);
    subs["purge"]->add_flag("--all", all, "remove every entry");
    subs["purge"]->add_flag("--json", g_json, "machine-readable output");
    subs["verify"]->add_flag("--json", g_json, "machine-readable output");
    subs["vacuum"]->add_flag("--json", g_json, "machine-readable output");
    std::string service;
    subs["health"]->add_option("--service", service, "\"\" (default) or coop.v1.Coop");
    subs["health"]->add_flag("--json", g_json, "machine-readable output");
    subs["health"]->add_flag("--probe-exit-codes", probe_codes,
                             "exit statuses as grpc_health_probe's: 0 SERVING, 1 bad arguments, "
                             "2 connection failed, 3 call failed, 4 not SERVING");
    bool no_wait = false;
    subs["stop"]->add_flag("--no-wait", no_wait, "return once coopd has accepted the stop");
    subs["stop"]->add_flag("--json", g_json, "machine-readable output");
    WarmArgs warm;
    warm.Add(subs["warm"]);

    std::vector<std::string> to_parse = head;
    if (!command.empty()) to_parse.push_back(command);
    to_parse.insert(to_parse.end(), rest.begin(), rest.end());
    std::reverse(to_parse.begin(), to_parse.end());
    try {
      app.parse(to_parse);
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help();
      return 0;
    } catch (const CLI::ParseError& e) {
      if (command.empty() || FindCommand(command) == nullptr) {
        std::string names;
        for (const auto& c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
        UsageFail(
            (command.empty() ? "missing COMMAND (" : "unknown command \"" + command + "\" (") +
            names + "); see coopctl --help");
      }
      UsageFail(command + ": " + e.what());
    }
    CLI::App* sub = subs[command];
    if (command != "plan") {
      const auto extras = sub->remaining();
      if (!extras.empty()) {
        UsageFail(command + ": unknown argument \"" + extras[0] + "\" (see coopctl " + command +
                  " --help)");
      }
    }

    coop::ClientOptions options = g_global.ToOptions();
    // Commands that report on the daemon itself say it is not running rather than start one;
    // the others start it when it is not (coop::ClientOptions::autostart).
    if (command == "stats" || command == "health" || command == "stop") {
      options.autostart = false;
    }
    if (command == "specialize") {
      auto specs = BundleSpecs(spec_args, more, &output, true, true);
      coop::Client client(options);
      return Specialize(client, std::move(specs), output);
    }
    if (command == "explain") {
      if (!more.empty()) UsageFail("explain: takes one spec (no \"+\" bundles)");
      auto specs = BundleSpecs(explain_args, more, &explain_output, false, false);
      coop::Client client(options);
      return Explain(client, std::move(specs), explain_output);
    }
    if (command == "warm") {
      auto items = coopctl::LoadManifest(warm.manifest);
      if (warm.dry_run) return WarmDryRun(items);
      coop::Client client(options);
      return Warm(client, warm, std::move(items));
    }
    coop::Client client(options);
    if (command == "link") return Link(client, link, rest);
    if (command == "plan") return Plan(client, base_offset, reserves, sub->remaining());
    if (command == "catalog") return CatalogCommand(client);
    if (command == "stats") return Stats(client, zero);
    if (command == "ls") return Ls(client, ls_filter.filter, limit, manifest);
    if (command == "purge") return Purge(client, purge_filter.filter, all);
    if (command == "verify") return Verify(client);
    if (command == "vacuum") return Vacuum(client);
    if (command == "stop") return Stop(client, !no_wait);
    if (command == "health") {
      const int status = Health(client, service);
      return probe_codes ? ProbeExitStatus(status, status != coopctl::kExitOk) : status;
    }
    UsageFail("unknown command \"" + command + "\"");
  } catch (const CommandError& e) {
    std::fflush(stdout);
    std::cerr << "coopctl: " << e.what() << "\n";
    const int status =
        probe_codes && command == "health" ? ProbeExitStatus(e.status, false) : e.status;
    if (g_json && !e.json_printed) {
      Print({{"error", {{"exit_status", status}, {"code", e.code}, {"message", e.what()}}}});
    }
    return status;
  }
}
