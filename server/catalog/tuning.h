// tuning.h: the tuning tables that resolve PrimitiveSpec.algorithm "auto" (docs/tuning.md).
//
// A table holds, for one arch, measured throughputs of every auto-eligible algorithm in cells
// keyed by (family, measured method, dtype size, threads, items per thread). The build embeds
// server/catalog/tuning/*.json; `--tuning-table FILE` may replace the embedded table of the
// file's arch. ParseTable validates the schema strictly (errors name the cell index and the
// field); CheckCoverage checks the grid the tuning suite must measure (the CI check).
// Resolve() implements the resolution rule; spec.cc calls it before the key is computed, so
// "auto" and the algorithm it picks share one cache entry.
//
// Thread-safe: tables are immutable once parsed. The active set is replaced only through
// SetActiveTables (coopd calls it once, before serving); readers hold a shared_ptr.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"

namespace coopd {
struct Family;
}

namespace coopd::tuning {

inline constexpr int kSchema = 1;
// A nearest-cell fallback leaves the baseline only for an algorithm whose median there is at
// least this many times the baseline's. The contract's first 1.05 picked algorithms slower than
// CUB's default out of the table on the H200; 2.5 was chosen from validation runs and held on
// fresh shapes (docs/tuning.md, "The fallback margin"; device/tuning/rule.py's NEAREST_MARGIN).
inline constexpr double kFallbackMargin = 2.5;

struct Measurement {
  std::string algorithm;
  double median_gbps = 0, min_gbps = 0, max_gbps = 0;
  uint32_t n = 0;
};

struct Cell {
  std::string family, method;
  uint32_t dtype_size = 0, threads = 0, items_per_thread = 0;
  std::string choice, run;
  std::vector<Measurement> measured;  // in the family's auto_algorithms order
  const Measurement* Find(std::string_view algorithm) const;
};

struct Table {
  std::string version, arch, device, toolchain, generated_by;
  std::vector<std::pair<std::string, std::string>> runs;  // id -> command line, in file order
  std::vector<Cell> cells;
  std::string digest;        // sha256 of the file's bytes, hex
  std::string source;        // "embedded:sm_90.json" or the file's path
  bool placeholder() const;  // every cell's run is "placeholder" (nothing measured yet)
};

// Parses and validates one table (schema 1). `source` names it in errors:
//   sm_90.json: cells[3].measured.striped: not an auto algorithm of block_load (direct, ...)
absl::StatusOr<Table> ParseTable(std::string_view json, std::string_view source);

// The grid the tuning suite measures (docs/tuning.md): every cell of it present for every
// family that offers auto, each measuring the family's baseline. The error lists the first
// missing cells and how many there are.
absl::Status CheckCoverage(const Table& table);

// The tables in use, at most one per arch.
struct TableSet {
  std::vector<Table> tables;  // in arch order
  // sha256 over every table's arch and digest: what a memo that maps an "auto" request to a key
  // without resolving it again must include. "" when there is no table.
  std::string digest;
  const Table* ForArch(std::string_view arch) const;  // "sm_90a" finds "sm_90"
};

// The embedded tables, parsed. A table that does not parse is an error (the CI check keeps the
// checked-in ones valid).
absl::StatusOr<std::shared_ptr<const TableSet>> EmbeddedTables();
// The embedded tables with `path`'s table replacing the one of its arch (or added); the
// embedded set when `path` is empty. Errors name the file.
absl::StatusOr<std::shared_ptr<const TableSet>> LoadTables(const std::string& path);
// Builds a set (digest included) from parsed tables; two tables of one arch are an error.
absl::StatusOr<std::shared_ptr<const TableSet>> MakeTableSet(std::vector<Table> tables);

// The set Canonicalize() uses when TargetInfo names none: the embedded tables until
// SetActiveTables replaces them.
std::shared_ptr<const TableSet> ActiveTables();
void SetActiveTables(std::shared_ptr<const TableSet> tables);
// ActiveTables()->digest. The hook for request->key memos (see TableSet::digest).
std::string ActiveTableDigest();

// What Resolve() needs of a canonical spec.
struct Query {
  const Family* family = nullptr;
  std::string_view arch;    // "sm_90a"
  uint32_t dtype_size = 0;  // bytes (a user type's size)
  uint32_t threads = 0;     // block x*y*z, or warp_threads for warp families
  uint32_t items_per_thread = 0;
  bool commutative = false;  // the spec's operator is commutative
};

// The resolution rule's result, with what coopctl explain shows.
// explanation.choice holds the choice the reply reports (requested "auto", chosen, reason, the
// table's version and digest).
struct Resolution {
  std::string chosen;
  coop::v1::AutoExplanation explanation;
};

// Resolves "auto" for `q` (docs/tuning.md, "Resolution rule"). The family must offer auto.
Resolution Resolve(const Query& q, const TableSet& tables);

// The families that accept "auto", in catalogue order (for errors and docs).
std::vector<std::string_view> AutoFamilyNames();

// Stats' description of each table.
void FillTableInfo(const TableSet& tables,
                   google::protobuf::RepeatedPtrField<coop::v1::TuningTableInfo>* out);

}  // namespace coopd::tuning
