// coopd_fill: writes N distinct, real-sized, verifiable entries into a coopd disk cache, for
// the benchmarks and the tests at scale (a cache of 10,000 entries in seconds, not the hours
// of compiles it would take to grow one).
//
//   coopd_fill --cache-dir DIR --entries N [--seed S] [--ltoir FILE] [--arch sm_XX]
//
// Every entry is written through coopd's own disk tier (SqliteCache::Put), so its records are
// exactly what coopd writes: compressed, checksummed, counted in the totals row, and clean
// under `coopctl verify`. The payload is one real BlockReduce LTO-IR (compiled here with NVRTC
// once, a second or two, unless --ltoir gives one) with a few bytes varied per entry, so
// entries compress like real ones and no two share a blob. Keys come from a fill-only
// derivation ("coopd-fill-v1", seed, index) that no real request produces, so a filled cache
// never answers a real request with a filler; the LTO-IR of a filler is not meant for linking.
// Attributes rotate over five dtypes of block_reduce, so filtered ls/purge have something to
// select. Safe to run while a coopd serves the same directory (SQLite WAL; coopd notices the
// new totals within a second and evicts if they exceed its budget).
//
// Prints progress to stderr and one summary line to stdout. Exit status 1 when a write fails
// (disk full, database locked: the message says which), 2 for a usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "coop/v1/coop.pb.h"
#include "device/embedded_headers.h"
#include "server/cache/sqlite_cache.h"
#include "server/catalog/render.h"
#include "server/catalog/spec.h"
#include "server/engine/compiler.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message, int code = 1) {
  std::fprintf(stderr, "coopd_fill: %s\n", message.c_str());
  std::exit(code);
}

constexpr char kUsage[] =
    "usage: coopd_fill --cache-dir DIR --entries N [--seed S] [--ltoir FILE] [--arch sm_XX]\n"
    "Writes N distinct, real-sized, verifiable filler entries into DIR/cache.db.\n";

struct Options {
  std::string cache_dir;
  uint64_t entries = 0;
  uint64_t seed = 1;
  std::string ltoir_path;
  std::string arch = "sm_90";
};

Options Parse(int argc, char** argv) {
  Options o;
  bool have_entries = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + ": missing value\n" + kUsage, 2);
      return argv[++i];
    };
    auto number = [&](uint64_t max) -> uint64_t {
      const std::string v = value();
      uint64_t n = 0;
      if (!absl::SimpleAtoi(v, &n) || n > max) {
        Die(coopd::StrCat(a, ": must be a whole number 0..", max, ", got \"", v, "\""), 2);
      }
      return n;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--cache-dir") {
      o.cache_dir = value();
    } else if (a == "--entries") {
      o.entries = number(10'000'000);
      have_entries = true;
    } else if (a == "--seed") {
      o.seed = number(~uint64_t{0} >> 1);
    } else if (a == "--ltoir") {
      o.ltoir_path = value();
    } else if (a == "--arch") {
      o.arch = value();
    } else {
      Die("unknown argument \"" + a + "\"\n" + kUsage, 2);
    }
  }
  if (o.cache_dir.empty() || !have_entries)
    Die(std::string("give --cache-dir and --entries\n") + kUsage, 2);
  return o;
}

// One real artifact: its LTO-IR and the metadata coopd would store beside it.
struct Template {
  std::string ltoir;
  coop::v1::Artifact meta;  // without LTO-IR
};

Template MakeTemplate(const Options& o) {
  auto probed = coopd::ProbeToolchain(coopd::ToolchainOptions{});
  if (!probed.ok()) Die(std::string(probed.status().message()));
  const coopd::Toolchain& tc = *probed;
  coop::v1::PrimitiveSpec request;
  request.set_family("block_reduce");
  request.set_dtype("float32");
  request.mutable_block()->set_x(256);
  request.set_arch(o.arch);
  auto spec = coopd::Canonicalize(request, tc.Target());
  if (!spec.ok()) Die(coopd::StrCat("--arch: ", spec.status().message()), 2);
  const coopd::RenderedUnit unit = coopd::Render(*spec);
  Template t;
  if (!o.ltoir_path.empty()) {
    std::ifstream in(o.ltoir_path, std::ios::binary);
    if (!in) Die("--ltoir: cannot read " + o.ltoir_path);
    std::stringstream ss;
    ss << in.rdbuf();
    t.ltoir = ss.str();
    if (t.ltoir.size() < 64) Die("--ltoir: " + o.ltoir_path + " is too small to be LTO-IR");
  } else {
    std::vector<coopd::EmbeddedHeader> headers;
    for (const auto& f : coop_device::EmbeddedHeaders()) {
      headers.push_back({std::string(f.name), std::string(f.contents)});
    }
    coopd::CompileSettings settings;
    settings.pch = false;
    std::fprintf(stderr, "coopd_fill: compiling one real block_reduce for %s with NVRTC...\n",
                 o.arch.c_str());
    auto out =
        coopd::CompileToLtoIr(headers, unit.source, coopd::SemanticOptions(tc, o.arch), settings);
    if (!out.ok()) Die(std::string(out.status().message()));
    t.ltoir = std::move(out->ltoir);
  }
  t.meta.set_arch(o.arch);
  *t.meta.mutable_spec() = *spec;
  t.meta.set_source(unit.source);
  t.meta.mutable_temp_storage()->set_bytes(44);
  t.meta.mutable_temp_storage()->set_align(4);
  for (const auto& e : unit.parts[0].entries) {
    auto* entry = t.meta.add_entries();
    entry->set_symbol(e.symbol);
    entry->set_declaration(e.declaration);
    entry->set_description(e.description);
  }
  t.meta.mutable_toolchain()->set_nvrtc_version(tc.NvrtcVersion());
  t.meta.mutable_toolchain()->set_nvjitlink_version(tc.NvJitLinkVersion());
  t.meta.mutable_toolchain()->set_cccl_version(tc.cccl_version);
  t.meta.mutable_toolchain()->set_header_digest(tc.header_digest);
  return t;
}

// Overwrites 8 bytes at `at` with `v` (little-endian).
void Stamp(std::string* s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*s)[at + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  Template t = MakeTemplate(o);

  coopd::SqliteCacheOptions cache_options;
  cache_options.dir = o.cache_dir;
  cache_options.budget_bytes = ~uint64_t{0};
  cache_options.evict = false;
  auto cache = coopd::SqliteCache::Open(cache_options);
  if (!cache.ok()) Die(std::string(cache.status().message()));

  static const char* const kDtypes[] = {"float32", "int32", "int64", "float64", "uint32"};
  const auto start = Clock::now();
  uint64_t next_report = o.entries / 10;
  std::string blob = t.ltoir;
  for (uint64_t i = 0; i < o.entries; ++i) {
    coopd::Sha256 h;
    h.UpdateField("coopd-fill-v1");
    h.UpdateField(std::to_string(o.seed));
    h.UpdateField(std::to_string(i));
    const std::string key = h.FinishHex();
    const uint64_t tag = (o.seed << 40) ^ i;
    // Three places, so no two entries share a blob and no window of zstd sees a long repeat.
    Stamp(&blob, 16, tag);
    Stamp(&blob, blob.size() / 2, ~tag);
    Stamp(&blob, blob.size() - 8, tag * 0x9E3779B97F4A7C15ull);

    const char* dtype = kDtypes[i % 5];
    coop::v1::Artifact meta = t.meta;
    meta.set_key(key);
    meta.mutable_spec()->set_dtype(dtype);
    coopd::CacheValue value{meta.SerializeAsString(), blob};
    coopd::EntryMeta attributes{"block_reduce", dtype, o.arch,
                                coopd::Sha256::Hex(coopd::StrCat("coopd-fill request ", key)), ""};
    if (absl::Status s = (*cache)->Put(key, value, attributes); !s.ok()) {
      Die(coopd::StrCat("stopped after ", i, " of ", o.entries, " entries: ", s.message()));
    }
    if (i + 1 == next_report && i + 1 < o.entries) {
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      std::fprintf(stderr, "coopd_fill: %llu/%llu entries, %.0f MiB stored, %.1f s\n",
                   static_cast<unsigned long long>(i + 1),
                   static_cast<unsigned long long>(o.entries),
                   static_cast<double>((*cache)->Stats().bytes) / (1 << 20), s);
      next_report += std::max<uint64_t>(1, o.entries / 10);
    }
  }
  const coopd::TierStats stats = (*cache)->Stats();
  const std::string path = (*cache)->path();
  cache->reset();
  // Leave no WAL behind: the next opener (often a coopd under test) starts from the main file.
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  }
  sqlite3_close_v2(db);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "filled %llu entries into %s: %llu entries, %.1f MiB stored (%.1f MiB raw) in %.1f s\n",
      static_cast<unsigned long long>(o.entries), path.c_str(),
      static_cast<unsigned long long>(stats.entries), static_cast<double>(stats.bytes) / (1 << 20),
      static_cast<double>(stats.raw_bytes) / (1 << 20), seconds);
  return 0;
}
