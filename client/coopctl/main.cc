// coopctl: command-line client of coopd. See `coopctl --help` and README.md.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "coop/client.h"
#include "coopctl/json.h"

namespace {

// One entry per command: its usage lines as `coopctl --help` lists them, a one-line summary
// and examples, for `coopctl COMMAND --help`.
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
     "      Counters of the running coopd; --zero prints them, then zeroes them.\n",
     "print the running coopd's counters",
     "  coopctl stats\n"
     "  coopctl stats --zero --json\n"},
    {"ls",
     "  ls [--family F] [--dtype T] [--arch A] [--limit N] [--json]\n"
     "      Disk cache entries, most recently used first.\n",
     "list disk cache entries, most recently used first",
     "  coopctl ls --family block_reduce --arch sm_90 --limit 10\n"},
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
     "  health [--service NAME] [--json]\n"
     "      Ask coopd's gRPC health service (grpc.health.v1) whether it serves; never starts\n"
     "      coopd. NAME: \"\" (the daemon, default) or coop.v1.Coop. Exit status: 0 SERVING,\n"
     "      1 NOT_SERVING (shutting down) or another answer, 3 no coopd is running.\n",
     "check whether coopd is running and serving (for scripts and probes)",
     "  coopctl health\n"
     "  coopctl --socket /run/coopd/coopd.sock health --json\n"},
};

constexpr char kGlobalUsage[] =
    "usage: coopctl [--socket PATH] [--timeout SECONDS] [--full-error] COMMAND ...\n";

constexpr char kUsageFooter[] =
    "The socket defaults to $COOPD_SOCKET, else $XDG_RUNTIME_DIR/coopd/coopd.sock, else\n"
    "/tmp/coopd-$UID/coopd.sock. Exit status is 0 on success; otherwise one line on stderr.\n"
    "coopd bounds long error messages (a compiler log of megabytes: its first lines and how\n"
    "many bytes were left out); --full-error asks for the whole one and prints it as it is.\n";

// `coopctl --help`: every command's usage.
std::string Usage() {
  std::string out = std::string(kGlobalUsage) + "\ncommands:\n";
  for (const auto& c : kCommands) out += c.usage;
  out += "\n";
  out += kUsageFooter;
  out += "`coopctl COMMAND --help` shows one command's usage with examples.\n";
  return out;
}

// `coopctl COMMAND --help`.
std::string CommandUsage(const CommandHelp& c) {
  return "coopctl " + std::string(c.name) + ": " + c.summary +
         "\n\nusage (after coopctl [--socket PATH] [--timeout SECONDS] [--full-error]):\n" +
         c.usage + "\nexamples:\n" + c.examples + "\n" + kUsageFooter;
}

// "specialize, link, ..." for error messages.
std::string CommandNames() {
  std::string out;
  for (const auto& c : kCommands) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

struct UsageError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "coopctl: %s\n", message.c_str());
  std::exit(code);
}

bool g_full_error = false;  // --full-error

std::string OneLine(std::string s);

// What coopctl prints of an error: one line, or with --full-error the whole message as coopd
// sent it (Error::details: every line of a compiler log).
std::string ErrorText(const coop::Error& e) {
  if (g_full_error && !e.details.empty()) return e.details;
  return OneLine(e.message);
}

std::string OneLine(std::string s) {
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

uint32_t ParseUint(const std::string& flag, const std::string& v) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
    Fail(flag + ": expected a non-negative whole number, got \"" + v + "\"", 2);
  }
  return static_cast<uint32_t>(std::stoul(v));
}

coop::Dim3 ParseThreads(const std::string& v) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t comma = v.find(',', start);
    parts.push_back(
        v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3) Fail("--threads: expected X[,Y[,Z]], got \"" + v + "\"", 2);
  coop::Dim3 d;
  d.x = ParseUint("--threads", parts[0]);
  if (parts.size() > 1) d.y = ParseUint("--threads", parts[1]);
  if (parts.size() > 2) d.z = ParseUint("--threads", parts[2]);
  return d;
}

void WriteFile(const std::filesystem::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) Fail("cannot write " + path.string() + ": " + std::strerror(errno));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot read " + path + ": " + std::strerror(errno), 2);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// File stem for --out: the entry symbol of a single spec, "coop_bundle_<key>" for a bundle.
std::string FileStem(const coop::Artifact& a) {
  if (a.parts.size() == 1 && !a.parts[0].entries.empty()) return a.parts[0].entries[0].symbol;
  return "coop_bundle_" + a.key.substr(0, 16);
}

// The value dtype and radix bits a spec's options carry, whichever options message holds them.
std::string ValueDtype(const coop::Spec& s) {
  for (const std::string* v :
       {&s.radix_sort.value_dtype, &s.merge_sort.value_dtype, &s.top_k.value_dtype}) {
    if (!v->empty()) return *v;
  }
  return "";
}
uint32_t RadixBits(const coop::Spec& s) {
  return s.radix_sort.radix_bits != 0 ? s.radix_sort.radix_bits : s.radix_rank.radix_bits;
}

std::string Shape(const coop::Spec& s) {
  std::string out;
  if (s.block.x != 0) {
    out += " block " + std::to_string(s.block.x) + "x" + std::to_string(s.block.y) + "x" +
           std::to_string(s.block.z);
  }
  if (s.warp_threads != 0) out += " logical warp " + std::to_string(s.warp_threads);
  out += " items " + std::to_string(s.items_per_thread);
  if (!s.algorithm.empty()) out += " algorithm " + s.algorithm;
  if (!s.op.empty()) out += " op " + s.op;
  const std::string values = ValueDtype(s);
  if (!values.empty()) out += " values " + values;
  if (RadixBits(s) != 0) out += " radix_bits " + std::to_string(RadixBits(s));
  if (s.histogram.bins != 0) out += " bins " + std::to_string(s.histogram.bins);
  if (s.run_length_decode.decoded_items_per_thread != 0) {
    out += " decoded_items " + std::to_string(s.run_length_decode.decoded_items_per_thread);
  }
  if (s.calling_convention == coop::CallingConvention::kNumba) out += " abi numba";
  return out;
}

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

void WriteSpecJson(coopctl::JsonWriter& w, const coop::Spec& s) {
  w.BeginObject();
  w.Key("family").String(s.family);
  w.Key("method").String(s.method);
  w.Key("dtype").String(s.dtype);
  w.Key("threads").BeginArray().Uint(s.block.x).Uint(s.block.y).Uint(s.block.z).EndArray();
  w.Key("items_per_thread").Uint(s.items_per_thread);
  w.Key("algorithm").String(s.algorithm);
  w.Key("op").String(s.user_op.name.empty() ? s.op : "user:" + s.user_op.name);
  w.Key("warp_threads").Uint(s.warp_threads);
  w.Key("abi").String(s.calling_convention == coop::CallingConvention::kNumba ? "numba" : "c");
  // The rest of the resolved spec, so --json says everything the header written by --out does.
  w.Key("value_dtype").String(ValueDtype(s));
  w.Key("user_type").BeginObject();
  w.Key("size").Uint(s.user_type_size);
  w.Key("align").Uint(s.user_type_align);
  w.EndObject();
  w.Key("radix_bits").Uint(RadixBits(s));
  w.Key("bins").Uint(s.histogram.bins);
  w.Key("decoded_items_per_thread").Uint(s.run_length_decode.decoded_items_per_thread);
  w.Key("with_aggregate").Bool(s.scan.with_aggregate);
  w.Key("warp_time_slicing").Bool(s.exchange.warp_time_slicing);
  w.Key("prefix_callback").String(s.prefix_callback.name);
  w.EndObject();
}

void WriteEntriesJson(coopctl::JsonWriter& w, const std::vector<coop::Entry>& entries) {
  w.BeginArray();
  for (const auto& e : entries) {
    w.BeginObject();
    w.Key("symbol").String(e.symbol);
    w.Key("declaration").String(e.declaration);
    w.Key("description").String(e.description);
    w.EndObject();
  }
  w.EndArray();
}

void PrintArtifactJson(const coop::Artifact& a, const std::vector<std::string>& files) {
  coopctl::JsonWriter w;
  w.BeginObject();
  w.Key("key").String(a.key);
  w.Key("origin").String(coop::OriginName(a.origin));
  w.Key("compile_ms").Double(a.compile_ms);
  w.Key("layout_ms").Double(a.layout_ms);
  w.Key("pch").String(a.pch_status);
  w.Key("ltoir_bytes").Uint(a.ltoir.size());
  if (!a.bitcode.key.empty()) {
    w.Key("bitcode").BeginObject();
    w.Key("key").String(a.bitcode.key);
    w.Key("origin").String(coop::OriginName(a.bitcode.origin));
    w.Key("bytes").Uint(a.bitcode.data.size());
    w.Key("compile_ms").Double(a.bitcode.compile_ms);
    w.Key("pch").String(a.bitcode.pch_status);
    w.Key("compile_log").String(a.bitcode.compile_log);
    w.EndObject();
  }
  if (a.parts.size() == 1) {
    w.Key("temp_storage").BeginObject();
    w.Key("bytes").Uint(a.temp_storage_bytes);
    w.Key("align").Uint(a.temp_storage_align);
    w.EndObject();
  }
  w.Key("entries");
  WriteEntriesJson(w, a.entries);
  w.Key("arch").String(a.arch);
  w.Key("toolchain").BeginObject();
  w.Key("nvrtc").String(a.toolchain.nvrtc_version);
  w.Key("nvjitlink").String(a.toolchain.nvjitlink_version);
  w.Key("cccl").String(a.toolchain.cccl_version);
  w.Key("header_digest").String(a.toolchain.header_digest);
  w.Key("clang").String(a.toolchain.clang_version);
  w.EndObject();
  if (a.parts.size() == 1) {
    w.Key("spec");
    WriteSpecJson(w, a.spec);
  }
  w.Key("parts").BeginArray();
  for (const auto& p : a.parts) {
    w.BeginObject();
    w.Key("spec");
    WriteSpecJson(w, p.spec);
    w.Key("temp_storage").BeginObject();
    w.Key("bytes").Uint(p.temp_storage_bytes);
    w.Key("align").Uint(p.temp_storage_align);
    w.EndObject();
    w.Key("entries");
    WriteEntriesJson(w, p.entries);
    w.EndObject();
  }
  w.EndArray();
  w.Key("type_definitions").String(a.type_definitions);
  w.Key("compile_log").String(a.compile_log);
  w.Key("link_inputs").BeginArray();
  for (const auto& in : a.link_inputs) {
    w.BeginObject();
    w.Key("symbol").String(in.symbol);
    w.Key("key").String(in.key);
    w.Key("ltoir_bytes").Uint(in.ltoir.size());
    w.Key("bitcode_key").String(in.bitcode_key);
    w.Key("bitcode_bytes").Uint(in.bitcode.size());
    w.EndObject();
  }
  w.EndArray();
  if (!files.empty()) {
    w.Key("files").BeginArray();
    for (const auto& f : files) w.String(f);
    w.EndArray();
  }
  w.EndObject();
  std::cout << w.str() << "\n";
}

void PrintArtifactText(const coop::Artifact& a, const std::vector<std::string>& files) {
  std::cout << "key:          " << a.key << "\n"
            << "origin:       " << coop::OriginName(a.origin) << "\n";
  for (const auto& p : a.parts) {
    std::cout << "spec:         " << p.spec.family << " " << p.spec.method << " " << p.spec.dtype
              << Shape(p.spec) << " " << a.arch << "\n"
              << "temp storage: " << p.temp_storage_bytes << " bytes, align "
              << p.temp_storage_align << "\n";
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

// Parses one spec: FAMILY [options...], stopping at "+" (the next spec of a bundle).
coop::Spec ParseSpec(const std::vector<std::string>& args, size_t* i, bool* json,
                     std::string* out_dir, coop::Formats* formats) {
  if (*i >= args.size() || args[*i].rfind("--", 0) == 0) {
    Fail("specialize: missing FAMILY (see coopctl catalog)", 2);
  }
  coop::Spec spec;
  spec.family = args[(*i)++];
  for (; *i < args.size() && args[*i] != "+"; ++*i) {
    const std::string& a = args[*i];
    auto value = [&]() -> std::string {
      if (*i + 1 >= args.size() || args[*i + 1] == "+") Fail(a + ": missing value", 2);
      return args[++*i];
    };
    if (a == "--method") {
      spec.method = value();
    } else if (a == "--dtype") {
      spec.dtype = value();
    } else if (a == "--threads") {
      spec.block = ParseThreads(value());
    } else if (a == "--items") {
      spec.items_per_thread = ParseUint(a, value());
    } else if (a == "--algorithm") {
      spec.algorithm = value();
    } else if (a == "--op") {
      spec.op = value();
    } else if (a == "--user-type") {
      // SIZE[,ALIGN]: dtype "user", an opaque struct.
      const std::string v = value();
      const size_t comma = v.find(',');
      spec.dtype = "user";
      spec.user_type_size = ParseUint(a, v.substr(0, comma));
      spec.user_type_align = comma == std::string::npos ? 1 : ParseUint(a, v.substr(comma + 1));
    } else if (a == "--op-name") {
      spec.user_op.name = value();
    } else if (a == "--op-source") {
      spec.user_op.source = ReadFile(value());
    } else if (a == "--op-ltoir") {
      spec.user_op.ltoir = ReadFile(value());
    } else if (a == "--op-stateful") {
      spec.user_op.stateful = true;
    } else if (a == "--prefix-name") {
      spec.prefix_callback.name = value();
    } else if (a == "--prefix-source") {
      spec.prefix_callback.source = ReadFile(value());
    } else if (a == "--prefix-ltoir") {
      spec.prefix_callback.ltoir = ReadFile(value());
    } else if (a == "--warp-threads") {
      spec.warp_threads = ParseUint(a, value());
    } else if (a == "--arch") {
      spec.arch = value();
    } else if (a == "--with-aggregate") {
      spec.scan.with_aggregate = true;
    } else if (a == "--warp-time-slicing") {
      spec.exchange.warp_time_slicing = true;
    } else if (a == "--value-dtype") {
      // Held in radix_sort until RouteSortFlags moves it to the family's options message.
      spec.radix_sort.value_dtype = value();
    } else if (a == "--radix-bits") {
      spec.radix_sort.radix_bits = ParseUint(a, value());
    } else if (a == "--bins") {
      spec.histogram.bins = ParseUint(a, value());
    } else if (a == "--decoded-items") {
      spec.run_length_decode.decoded_items_per_thread = ParseUint(a, value());
    } else if (a == "--abi") {
      std::string v = value();
      if (v == "c") {
        spec.calling_convention = coop::CallingConvention::kC;
      } else if (v == "numba") {
        spec.calling_convention = coop::CallingConvention::kNumba;
      } else {
        Fail("--abi must be c or numba, got \"" + v + "\"", 2);
      }
    } else if (a == "--format") {
      const std::string v = value();
      if (v == "ltoir") {
        *formats = coop::Formats::kLtoIr;
      } else if (v == "bitcode") {
        *formats = coop::Formats::kBitcode;
      } else if (v == "both") {
        *formats = coop::Formats::kBoth;
      } else {
        Fail("--format must be ltoir, bitcode or both, got \"" + v + "\"", 2);
      }
    } else if (a == "--json") {
      *json = true;
    } else if (a == "--out") {
      *out_dir = value();
    } else {
      Fail("specialize: unknown argument \"" + a + "\" (see coopctl --help)", 2);
    }
  }
  return spec;
}

// --value-dtype and --radix-bits belong to whichever options message the family takes (the
// catalogue's family_options): ParseSpec holds them in radix_sort and this moves them. A family
// the catalogue does not know keeps them there, and coopd names the problem.
void RouteSortFlags(coop::Client& client, std::vector<coop::Spec>* specs) {
  bool any = false;
  for (const auto& s : *specs) {
    any = any || !s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0;
  }
  if (!any) return;
  auto catalog = client.GetCatalog();
  if (!catalog) {
    Fail(std::string(coop::ErrorCodeName(catalog.error().code)) + ": " +
         ErrorText(catalog.error()));
  }
  for (auto& s : *specs) {
    std::string options;
    for (const auto& f : catalog->families) {
      if (f.name == s.family) options = f.family_options;
    }
    coop::RadixSortOptions held = s.radix_sort;
    if (options == "merge_sort" && held.radix_bits == 0) {
      s.merge_sort.value_dtype = held.value_dtype;
      s.radix_sort = {};
    } else if (options == "top_k" && held.radix_bits == 0) {
      s.top_k.value_dtype = held.value_dtype;
      s.radix_sort = {};
    } else if (options == "radix_rank" && held.value_dtype.empty()) {
      s.radix_rank.radix_bits = held.radix_bits;
      s.radix_sort = {};
    }
  }
}

int Specialize(coop::Client& client, const std::vector<std::string>& args) {
  bool json = false;
  std::string out_dir;
  coop::Formats formats = coop::Formats::kLtoIr;
  std::vector<coop::Spec> specs;
  size_t i = 0;
  specs.push_back(ParseSpec(args, &i, &json, &out_dir, &formats));
  while (i < args.size() && args[i] == "+") {
    ++i;
    specs.push_back(ParseSpec(args, &i, &json, &out_dir, &formats));
  }
  RouteSortFlags(client, &specs);
  auto artifact = specs.size() == 1 ? client.Specialize(specs[0], formats)
                                    : client.SpecializeBundle(specs, formats);
  if (!artifact) {
    Fail(std::string(coop::ErrorCodeName(artifact.error().code)) + ": " +
         ErrorText(artifact.error()));
  }
  std::vector<std::string> files;
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) Fail("cannot create " + out_dir + ": " + ec.message());
    const std::string stem = FileStem(*artifact);
    const std::filesystem::path dir(out_dir);
    auto write = [&](const std::string& name, const std::string& bytes) {
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
  if (json) {
    PrintArtifactJson(*artifact, files);
  } else {
    PrintArtifactText(*artifact, files);
  }
  return 0;
}

int Link(coop::Client& client, const std::vector<std::string>& args) {
  coop::LinkRequest request;
  std::string out;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) Fail(a + ": missing value", 2);
      return args[++i];
    };
    if (a == "--arch") {
      request.arch = value();
    } else if (a == "--ltoir" || a == "--ptx") {
      std::string path = value();
      request.modules.push_back(
          {a == "--ptx" ? coop::LinkInputKind::kPtx : coop::LinkInputKind::kLtoIr,
           std::filesystem::path(path).filename().string(), ReadFile(path)});
    } else if (a == "--artifact") {
      request.artifact_keys.push_back(value());
    } else if (a == "--option") {
      request.options.push_back(value());
    } else if (a == "--keep-unused-variables") {
      request.keep_unused_variables = true;
    } else if (a == "--out") {
      out = value();
    } else if (a == "--json") {
      json = true;
    } else {
      Fail("link: unknown argument \"" + a + "\" (see coopctl link --help)", 2);
    }
  }
  if (request.modules.empty()) Fail("link: give the kernel with --ltoir FILE or --ptx FILE", 2);
  if (out.empty()) Fail("link: give the output cubin path with --out FILE", 2);
  auto result = client.Link(request);
  if (!result) {
    Fail(std::string(coop::ErrorCodeName(result.error().code)) + ": " + ErrorText(result.error()));
  }
  WriteFile(out, result->cubin);
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("key").String(result->key);
    w.Key("origin").String(coop::OriginName(result->origin));
    w.Key("link_ms").Double(result->link_ms);
    w.Key("cubin_bytes").Uint(result->cubin.size());
    w.Key("options").BeginArray();
    for (const auto& o : result->options) w.String(o);
    w.EndArray();
    w.Key("file").String(out);
    w.EndObject();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "wrote " << out << " (" << result->cubin.size() << " bytes, "
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

int Stats(coop::Client& client, const std::vector<std::string>& args) {
  bool json = false, zero = false;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--zero") {
      zero = true;
    } else {
      Fail("stats: unknown argument \"" + a + "\" (--json, --zero)", 2);
    }
  }
  // --zero prints the counters as they were, then zeroes them.
  auto s = zero ? client.ResetStats() : client.GetStats();
  if (!s) Fail(std::string(coop::ErrorCodeName(s.error().code)) + ": " + ErrorText(s.error()));
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("requests").Uint(s->requests);
    w.Key("invalid_requests").Uint(s->invalid_requests);
    w.Key("memory_hits").Uint(s->memory_hits);
    w.Key("disk_hits").Uint(s->disk_hits);
    w.Key("misses").Uint(s->misses);
    w.Key("compiles").Uint(s->compiles);
    w.Key("compile_failures").Uint(s->compile_failures);
    w.Key("compile_ms_total").Double(s->compile_ms_total);
    w.Key("memory_entries").Uint(s->memory_entries);
    w.Key("memory_bytes").Uint(s->memory_bytes);
    w.Key("disk_entries").Uint(s->disk_entries);
    w.Key("disk_bytes").Uint(s->disk_bytes);
    w.Key("disk_write_failures").Uint(s->disk_write_failures);
    w.Key("uptime_s").Double(s->uptime_s);
    w.Key("cache_path").String(s->cache_path);
    w.Key("pch_warm_compiles").Uint(s->pch_warm_compiles);
    w.Key("joined_requests").Uint(s->joined_requests);
    w.Key("worker_restarts").Uint(s->worker_restarts);
    w.Key("worker_crashes").Uint(s->worker_crashes);
    w.Key("compile_timeouts").Uint(s->compile_timeouts);
    w.Key("queue_depth").Uint(s->queue_depth);
    w.Key("workers").Uint(s->workers);
    w.Key("workers_busy").Uint(s->workers_busy);
    w.Key("compile_ms_p50").Double(s->compile_ms_p50);
    w.Key("compile_ms_p90").Double(s->compile_ms_p90);
    w.Key("compile_ms_p99").Double(s->compile_ms_p99);
    w.Key("links").Uint(s->links);
    w.Key("link_failures").Uint(s->link_failures);
    w.Key("link_hits").Uint(s->link_hits);
    w.Key("bundles").Uint(s->bundles);
    w.Key("corruptions").Uint(s->corruptions);
    w.Key("evictions").Uint(s->evictions);
    w.Key("cache_degraded").Bool(s->cache_degraded);
    w.Key("bitcode_compiles").Uint(s->bitcode_compiles);
    w.Key("remote_hits").Uint(s->remote_hits);
    w.Key("listeners").BeginArray();
    for (const auto& l : s->listeners) {
      w.BeginObject();
      w.Key("address").String(l.address);
      w.Key("tls").Bool(l.tls);
      w.Key("client_certificates").Bool(l.client_certificates);
      w.Key("tokens").Bool(l.tokens);
      w.Key("insecure").Bool(l.insecure);
      if (!l.mode.empty()) w.Key("mode").String(l.mode);
      w.EndObject();
    }
    w.EndArray();
    w.Key("unauthenticated_calls").Uint(s->unauthenticated_calls);
    w.Key("denied_calls").Uint(s->denied_calls);
    if (s->remote.configured) {
      const auto& r = s->remote;
      w.Key("remote").BeginObject();
      w.Key("url").String(r.url);
      w.Key("cluster").Bool(r.cluster);
      w.Key("read_only").Bool(r.read_only);
      w.Key("healthy").Bool(r.healthy);
      w.Key("hits").Uint(r.hits);
      w.Key("misses").Uint(r.misses);
      w.Key("errors").Uint(r.errors);
      w.Key("timeouts").Uint(r.timeouts);
      w.Key("reconnects").Uint(r.reconnects);
      w.Key("corruptions").Uint(r.corruptions);
      w.Key("writes").Uint(r.writes);
      w.Key("write_failures").Uint(r.write_failures);
      w.Key("writes_skipped").Uint(r.writes_skipped);
      w.Key("writes_dropped").Uint(r.writes_dropped);
      w.Key("redirects").Uint(r.redirects);
      w.Key("slot_refreshes").Uint(r.slot_refreshes);
      w.Key("leases_acquired").Uint(r.leases_acquired);
      w.Key("lease_waits").Uint(r.lease_waits);
      w.Key("lease_wait_hits").Uint(r.lease_wait_hits);
      w.Key("lease_wait_timeouts").Uint(r.lease_wait_timeouts);
      w.Key("lease_takeovers").Uint(r.lease_takeovers);
      w.Key("leases_lost").Uint(r.leases_lost);
      w.EndObject();
    }
    w.Key("tiers").BeginArray();
    for (const auto& t : s->tiers) {
      w.BeginObject();
      w.Key("name").String(t.name);
      w.Key("hits").Uint(t.hits);
      w.Key("misses").Uint(t.misses);
      w.Key("entries").Uint(t.entries);
      w.Key("bytes").Uint(t.bytes);
      w.Key("raw_bytes").Uint(t.raw_bytes);
      w.Key("budget_bytes").Uint(t.budget_bytes);
      w.Key("evictions").Uint(t.evictions);
      w.Key("corruptions").Uint(t.corruptions);
      w.Key("write_failures").Uint(t.write_failures);
      w.Key("degraded").Bool(t.degraded);
      w.EndObject();
    }
    w.EndArray();
    w.Key("worker_status").BeginArray();
    for (const auto& ws : s->worker_status) {
      w.BeginObject();
      w.Key("pid").Uint(static_cast<uint64_t>(ws.pid));
      w.Key("busy").Bool(ws.busy);
      w.Key("jobs").Uint(ws.jobs);
      w.Key("header_set").String(ws.header_set);
      w.EndObject();
    }
    w.EndArray();
    w.Key("toolchain").BeginObject();
    w.Key("nvrtc").String(s->toolchain.nvrtc_version);
    w.Key("nvjitlink").String(s->toolchain.nvjitlink_version);
    w.Key("cccl").String(s->toolchain.cccl_version);
    w.Key("header_digest").String(s->toolchain.header_digest);
    w.Key("clang").String(s->toolchain.clang_version);
    w.EndObject();
    w.EndObject();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "requests:        " << s->requests << " (" << s->invalid_requests << " invalid)\n"
              << "hits:            " << s->memory_hits << " memory, " << s->disk_hits << " disk, "
              << s->remote_hits << " remote\n"
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

// Shared by ls and purge: --family/--dtype/--arch; returns the remaining arguments.
std::vector<std::string> ParseFilter(const std::string& command,
                                     const std::vector<std::string>& args,
                                     coop::CacheFilter* filter) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) Fail(command + ": " + a + ": missing value", 2);
      return args[++i];
    };
    if (a == "--family") {
      filter->family = value();
    } else if (a == "--dtype") {
      filter->dtype = value();
    } else if (a == "--arch") {
      filter->arch = value();
    } else if (a == "--limit") {
      rest.push_back(a);
      rest.push_back(value());
    } else {
      rest.push_back(a);
    }
  }
  return rest;
}

[[noreturn]] void FailWith(const coop::Error& e) {
  Fail(std::string(coop::ErrorCodeName(e.code)) + ": " + ErrorText(e));
}

// "NAME=BYTES[,ALIGN[,COUNT]]" of --reserve (align defaults to 1).
coop::PlanReservation ParseReservation(const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0) {
    Fail("--reserve: expected NAME=BYTES[,ALIGN[,COUNT]], got \"" + v + "\"", 2);
  }
  std::vector<std::string> parts;
  for (size_t start = eq + 1;;) {
    const size_t comma = v.find(',', start);
    parts.push_back(v.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3)
    Fail("--reserve: expected NAME=BYTES[,ALIGN[,COUNT]], got \"" + v + "\"", 2);
  coop::PlanReservation r;
  r.name = v.substr(0, eq);
  r.bytes = ParseUint("--reserve", parts[0]);
  r.align = parts.size() > 1 ? ParseUint("--reserve", parts[1]) : 1;
  r.count = parts.size() > 2 ? ParseUint("--reserve", parts[2]) : 0;
  return r;
}

// One use of `coopctl plan`: NAME[@FIRST[-LAST]] [--count N] (--bytes N [--align A] | SPEC),
// stopping at "+".
coop::PlanUse ParsePlanUse(const std::vector<std::string>& args, size_t* i, bool* json) {
  if (*i >= args.size() || args[*i] == "+" || args[*i].rfind("--", 0) == 0) {
    Fail("plan: expected a use, NAME[@FIRST[-LAST]] then a spec or --bytes N --align A", 2);
  }
  coop::PlanUse use;
  const std::string head = args[(*i)++];
  const size_t at = head.find('@');
  use.name = head.substr(0, at);
  if (at != std::string::npos) {
    const std::string span = head.substr(at + 1);
    const size_t dash = span.find('-');
    use.first = ParseUint(head, span.substr(0, dash));
    use.last = dash == std::string::npos ? use.first : ParseUint(head, span.substr(dash + 1));
  }
  bool sized = false;
  for (; *i < args.size() && args[*i] != "+"; ++*i) {
    const std::string& a = args[*i];
    auto value = [&]() -> std::string {
      if (*i + 1 >= args.size() || args[*i + 1] == "+") Fail(a + ": missing value", 2);
      return args[++*i];
    };
    if (a == "--count") {
      use.count = ParseUint(a, value());
    } else if (a == "--bytes") {
      use.bytes = ParseUint(a, value());
      sized = true;
    } else if (a == "--align") {
      use.align = ParseUint(a, value());
      sized = true;
    } else if (a == "--json") {
      *json = true;
    } else if (a.rfind("--", 0) == 0) {
      Fail("plan: unknown argument \"" + a + "\" for use \"" + use.name +
               "\" (before its FAMILY: --count, --bytes, --align)",
           2);
    } else {
      if (sized) Fail("plan: use \"" + use.name + "\" has --bytes/--align and a spec: give one", 2);
      std::string out_dir;
      coop::Formats formats = coop::Formats::kLtoIr;
      use.spec = ParseSpec(args, i, json, &out_dir, &formats);
      if (!out_dir.empty()) Fail("plan: --out does not apply", 2);
      if (formats != coop::Formats::kLtoIr) Fail("plan: --format does not apply", 2);
      break;
    }
  }
  if (!use.spec && !sized) {
    Fail("plan: use \"" + use.name + "\" needs a spec (FAMILY ...) or --bytes N --align A", 2);
  }
  if (sized && use.align == 0) use.align = 1;
  return use;
}

void PlanRegionJson(coopctl::JsonWriter& w, const coop::PlanRegion& r, bool use) {
  w.BeginObject();
  w.Key("name").String(r.name);
  w.Key("offset").Uint(r.offset);
  w.Key("bytes").Uint(r.bytes);
  w.Key("align").Uint(r.align);
  w.Key("padding").Uint(r.padding);
  w.Key("count").Uint(r.count);
  w.Key("stride").Uint(r.stride);
  if (use) {
    w.Key("first").Uint(r.first);
    w.Key("last").Uint(r.last);
    w.Key("artifact_key").String(r.artifact_key);
  }
  w.EndObject();
}

int Plan(coop::Client& client, const std::vector<std::string>& args) {
  coop::PlanRequest request;
  bool json = false;
  size_t i = 0;
  for (; i < args.size() && args[i].rfind("--", 0) == 0; ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) Fail(a + ": missing value", 2);
      return args[++i];
    };
    if (a == "--base-offset") {
      request.base_offset = ParseUint(a, value());
    } else if (a == "--reserve") {
      request.reservations.push_back(ParseReservation(value()));
    } else if (a == "--json") {
      json = true;
    } else {
      Fail("plan: unknown argument \"" + a + "\" (see coopctl plan --help)", 2);
    }
  }
  if (i < args.size()) {
    request.uses.push_back(ParsePlanUse(args, &i, &json));
    while (i < args.size() && args[i] == "+") {
      ++i;
      request.uses.push_back(ParsePlanUse(args, &i, &json));
    }
  }
  // --value-dtype / --radix-bits into each spec's own options message, as for specialize.
  std::vector<coop::Spec> specs;
  for (const auto& use : request.uses) {
    if (use.spec) specs.push_back(*use.spec);
  }
  RouteSortFlags(client, &specs);
  for (size_t u = 0, k = 0; u < request.uses.size(); ++u) {
    if (request.uses[u].spec) request.uses[u].spec = specs[k++];
  }
  auto plan = client.Plan(request);
  if (!plan) FailWith(plan.error());
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("dynamic_shared_bytes").Uint(plan->dynamic_shared_bytes);
    w.Key("base_align").Uint(plan->base_align);
    w.Key("reserved_bytes").Uint(plan->reserved_bytes);
    w.Key("no_reuse_bytes").Uint(plan->no_reuse_bytes);
    w.Key("reservations").BeginArray();
    for (const auto& r : plan->reservations) PlanRegionJson(w, r, false);
    w.EndArray();
    w.Key("uses").BeginArray();
    for (const auto& r : plan->uses) PlanRegionJson(w, r, true);
    w.EndArray();
    w.EndObject();
    std::cout << w.str() << "\n";
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

int Explain(coop::Client& client, const std::vector<std::string>& args) {
  bool json = false;
  std::string out_dir;
  size_t i = 0;
  coop::Formats format = coop::Formats::kLtoIr;
  std::vector<coop::Spec> specs{ParseSpec(args, &i, &json, &out_dir, &format)};
  if (i < args.size()) Fail("explain: takes one spec (no \"+\" bundles)", 2);
  if (!out_dir.empty()) Fail("explain: --out does not apply", 2);
  if (format == coop::Formats::kBoth) {
    Fail("explain: --format must be ltoir or bitcode (each format has a key of its own)", 2);
  }
  RouteSortFlags(client, &specs);
  auto e = client.Explain(specs[0], format);
  if (!e) FailWith(e.error());
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("key").String(e->key);
    w.Key("cached").Bool(e->cached);
    w.Key("components").BeginArray();
    for (const auto& c : e->components) {
      w.BeginObject();
      w.Key("name").String(c.name);
      w.Key("value").String(c.value);
      w.Key("digest").String(c.digest);
      w.EndObject();
    }
    w.EndArray();
    w.Key("others").BeginArray();
    for (const auto& o : e->others) {
      w.BeginObject();
      w.Key("key").String(o.key);
      w.Key("created_at").Uint(static_cast<uint64_t>(o.created_at));
      w.Key("differing").BeginArray();
      for (const auto& d : o.differing) w.String(d);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::cout << w.str() << "\n";
    return 0;
  }
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

int Ls(coop::Client& client, const std::vector<std::string>& args) {
  coop::CacheFilter filter;
  bool json = false;
  uint32_t limit = 0;
  auto rest = ParseFilter("ls", args, &filter);
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "--json") {
      json = true;
    } else if (rest[i] == "--limit") {
      limit = ParseUint("--limit", rest[++i]);
    } else {
      Fail("ls: unknown argument \"" + rest[i] + "\" (--family, --dtype, --arch, --limit, --json)",
           2);
    }
  }
  auto entries = client.ListEntries(filter, limit);
  if (!entries) FailWith(entries.error());
  if (json) {
    coopctl::JsonWriter w;
    w.BeginArray();
    for (const auto& e : *entries) {
      w.BeginObject();
      w.Key("key").String(e.key);
      w.Key("family").String(e.family);
      w.Key("dtype").String(e.dtype);
      w.Key("arch").String(e.arch);
      w.Key("raw_bytes").Uint(e.raw_bytes);
      w.Key("stored_bytes").Uint(e.stored_bytes);
      w.Key("created_at").Uint(static_cast<uint64_t>(e.created_at));
      w.Key("last_access").Uint(static_cast<uint64_t>(e.last_access));
      w.EndObject();
    }
    w.EndArray();
    std::cout << w.str() << "\n";
    return 0;
  }
  for (const auto& e : *entries) {
    std::cout << e.key.substr(0, 16) << "  " << e.family << " " << e.dtype << " " << e.arch << "  "
              << e.stored_bytes << " bytes stored (" << e.raw_bytes << " raw)\n";
  }
  std::cout << entries->size() << " entries\n";
  return 0;
}

int Purge(coop::Client& client, const std::vector<std::string>& args) {
  coop::CacheFilter filter;
  bool json = false, all = false;
  for (const auto& a : ParseFilter("purge", args, &filter)) {
    if (a == "--json") {
      json = true;
    } else if (a == "--all") {
      all = true;
    } else {
      Fail("purge: unknown argument \"" + a + "\" (--all, --family, --dtype, --arch, --json)", 2);
    }
  }
  if (!all && filter.family.empty() && filter.dtype.empty() && filter.arch.empty()) {
    Fail("purge: give --all, or a filter (--family, --dtype, --arch)", 2);
  }
  auto n = client.Purge(filter, all);
  if (!n) FailWith(n.error());
  if (json) {
    std::cout << "{\"entries_removed\":" << *n << "}\n";
  } else {
    std::cout << "removed " << *n << " entries\n";
  }
  return 0;
}

int Verify(coop::Client& client, const std::vector<std::string>& args) {
  bool json = !args.empty() && args[0] == "--json";
  if (args.size() > (json ? 1u : 0u)) Fail("verify: takes only --json", 2);
  auto r = client.Verify();
  if (!r) FailWith(r.error());
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("entries_checked").Uint(r->entries_checked);
    w.Key("blobs_checked").Uint(r->blobs_checked);
    w.Key("bad_removed").Uint(r->bad_removed);
    w.Key("bad_keys").BeginArray();
    for (const auto& k : r->bad_keys) w.String(k);
    w.EndArray();
    w.EndObject();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "checked " << r->entries_checked << " entries and " << r->blobs_checked
              << " blobs; removed " << r->bad_removed << " bad entries\n";
    for (const auto& k : r->bad_keys) std::cout << "  removed " << k << "\n";
  }
  return 0;
}

int Vacuum(coop::Client& client, const std::vector<std::string>& args) {
  bool json = !args.empty() && args[0] == "--json";
  if (args.size() > (json ? 1u : 0u)) Fail("vacuum: takes only --json", 2);
  auto r = client.Vacuum();
  if (!r) FailWith(r.error());
  if (json) {
    std::cout << "{\"file_bytes_before\":" << r->file_bytes_before
              << ",\"file_bytes_after\":" << r->file_bytes_after << "}\n";
  } else {
    std::cout << "database file: " << r->file_bytes_before << " -> " << r->file_bytes_after
              << " bytes\n";
  }
  return 0;
}

// Exit status 3: no daemon answered (health only, for now; issue 16 item 2 extends it).
constexpr int kExitNotRunning = 3;

int Health(coop::Client& client, const std::vector<std::string>& args) {
  bool json = false;
  std::string service;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--service" && i + 1 < args.size()) {
      service = args[++i];
    } else if (args[i] == "--service") {
      Fail("health: --service: missing value", 2);
    } else {
      Fail("health: unknown argument \"" + args[i] + "\" (--service, --json)", 2);
    }
  }
  auto print_json = [&client](const char* status) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("status").String(status);
    w.Key("socket").String(client.socket_path());
    w.EndObject();
    std::cout << w.str() << "\n";
  };
  auto h = client.Health(service);
  if (!h && h.error().code == coop::ErrorCode::kUnavailable && !h.error().from_server) {
    if (json) print_json("NOT_RUNNING");
    Fail("coopd is not running on " + client.socket_path() + " (coopctl health never starts it)",
         kExitNotRunning);
  }
  if (!h) FailWith(h.error());
  // An --insecure TCP listener is said on every health check (when the stats can be read).
  if (auto stats = client.GetStats()) {
    for (const auto& l : stats->listeners) {
      if (l.insecure) std::cerr << "warning: coopd serves " << ListenerText(l) << "\n";
    }
  }
  const char* name = coop::HealthStatusName(*h);
  if (json) {
    print_json(name);
  } else {
    std::cout << name << " (" << client.socket_path() << ")\n";
  }
  return *h == coop::HealthStatus::kServing ? 0 : 1;
}

int CatalogCommand(coop::Client& client, const std::vector<std::string>& args) {
  bool json = !args.empty() && args[0] == "--json";
  if (args.size() > (json ? 1u : 0u)) Fail("catalog: takes only --json", 2);
  auto c = client.GetCatalog();
  if (!c) FailWith(c.error());
  auto strings = [](coopctl::JsonWriter& w, const std::vector<std::string>& v) {
    w.BeginArray();
    for (const auto& s : v) w.String(s);
    w.EndArray();
  };
  if (json) {
    coopctl::JsonWriter w;
    w.BeginObject();
    w.Key("families").BeginArray();
    for (const auto& f : c->families) {
      w.BeginObject();
      w.Key("name").String(f.name);
      w.Key("description").String(f.description);
      w.Key("methods").BeginArray();
      for (const auto& m : f.methods) {
        w.BeginObject();
        w.Key("name").String(m.name);
        w.Key("needs_op").Bool(m.needs_op);
        w.Key("op_kind").String(m.op_kind);
        w.Key("description").String(m.description);
        w.EndObject();
      }
      w.EndArray();
      w.Key("algorithms");
      strings(w, f.algorithms);
      w.Key("default_algorithm").String(f.default_algorithm);
      w.Key("warp").Bool(f.warp);
      w.Key("max_items_per_thread").Uint(f.max_items_per_thread);
      w.Key("scan_options").Bool(f.scan_options);
      w.Key("warp_multiple_algorithms");
      strings(w, f.warp_multiple_algorithms);
      w.Key("exchange_options").Bool(f.exchange_options);
      w.Key("family_options").String(f.family_options);
      w.Key("dtypes");
      strings(w, f.dtypes);
      w.Key("power_of_two_threads").Bool(f.power_of_two_threads);
      w.Key("available").Bool(f.available);
      w.Key("requires").String(f.requires);
      w.EndObject();
    }
    w.EndArray();
    w.Key("dtypes");
    strings(w, c->dtypes);
    w.Key("builtin_ops");
    strings(w, c->builtin_ops);
    w.Key("op_kinds").BeginArray();
    for (const auto& k : c->op_kinds) {
      w.BeginObject();
      w.Key("name").String(k.name);
      w.Key("signature").String(k.signature);
      w.Key("builtins");
      strings(w, k.builtins);
      w.EndObject();
    }
    w.EndArray();
    w.Key("archs");
    strings(w, c->archs);
    w.Key("calling_conventions");
    strings(w, c->calling_conventions);
    w.Key("bitcode_archs");
    strings(w, c->bitcode_archs);
    w.Key("bitcode_unavailable").String(c->bitcode_unavailable);
    w.EndObject();
    std::cout << w.str() << "\n";
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
                << "\n";
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

}  // namespace

int main(int argc, char** argv) {
  coop::ClientOptions options;
  options.client_name = "coopctl";
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << Usage();
      return 0;
    } else if (a == "--socket") {
      if (i + 1 >= argc) Fail("--socket: missing value", 2);
      options.socket_path = argv[++i];
    } else if (a == "--full-error") {
      g_full_error = true;
      options.full_errors = true;
    } else if (a == "--timeout") {
      if (i + 1 >= argc) Fail("--timeout: missing value", 2);
      options.timeout = std::chrono::seconds(ParseUint("--timeout", argv[++i]));
    } else {
      break;
    }
  }
  if (i >= argc) Fail("missing COMMAND (" + CommandNames() + "); see coopctl --help", 2);
  const std::string command = argv[i];
  std::vector<std::string> rest(argv + i + 1, argv + argc);
  // `--help` (or -h) anywhere among a command's arguments prints that command's help, whatever
  // else is there: it is what a user reaches for after a usage error.
  for (const auto& c : kCommands) {
    if (command != c.name) continue;
    for (const auto& a : rest) {
      if (a == "--help" || a == "-h") {
        std::cout << CommandUsage(c);
        return 0;
      }
    }
  }
  // Commands that report on the daemon itself say it is not running rather than start one;
  // the others start it when it is not (coop::ClientOptions::autostart).
  if (command == "stats" || command == "health") options.autostart = false;
  coop::Client client(options);
  if (command == "specialize") return Specialize(client, rest);
  if (command == "stats") return Stats(client, rest);
  if (command == "link") return Link(client, rest);
  if (command == "explain") return Explain(client, rest);
  if (command == "plan") return Plan(client, rest);
  if (command == "catalog") return CatalogCommand(client, rest);
  if (command == "ls") return Ls(client, rest);
  if (command == "purge") return Purge(client, rest);
  if (command == "verify") return Verify(client, rest);
  if (command == "vacuum") return Vacuum(client, rest);
  if (command == "health") return Health(client, rest);
  Fail("unknown command \"" + command + "\" (" + CommandNames() + "); see coopctl --help", 2);
}
