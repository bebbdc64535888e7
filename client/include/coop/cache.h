// coop/cache.h: the cache maintenance calls' values: Client::Explain's key components and
// algorithm "auto" resolution, ListEntries' filter and entries, Verify's and Vacuum's reports.
// Part of the public API; coop/client.h includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coop/artifact.h"
#include "coop/spec.h"

namespace coop {

struct KeyComponent {
  std::string name;  // "schema", "canonical_request", "source", "options", "nvrtc", ...
  std::string value;
  std::string digest;
};

struct OtherKey {
  std::string key;
  std::vector<std::string> differing;  // component names
  int64_t created_at = 0;
};

// How algorithm "auto" was resolved (proto AutoExplanation has each field's contract).
struct AutoExplanation {
  AlgorithmChoice choice;
  std::vector<std::string> eligible;      // after the spec's semantic filters
  std::vector<std::string> filtered_out;  // "striped: ..." and why
  std::string baseline;                   // CUB's default
  uint32_t dtype_size = 0, threads = 0, items_per_thread = 0;
  std::string measured_method;
  std::string table_arch;  // empty: no table for the arch
  std::string rule;        // "exact", "nearest", "no_table", "no_cells", "single"
  // The cell used (exact or nearest): its coordinates, run and the table's choice for it.
  std::string cell_family, cell_method, cell_run, cell_choice;
  uint32_t cell_dtype_size = 0, cell_threads = 0, cell_items_per_thread = 0;
  double distance = 0;  // nearest: |log2(N/Nc)| + |log2(T/Tc)|
  struct Measurement {
    std::string algorithm;
    double median_gbps = 0, min_gbps = 0, max_gbps = 0;
    uint32_t n = 0;
    bool eligible = false;
  };
  std::vector<Measurement> measured;  // every algorithm the cell measured
};

// Why a spec hits or misses: its key's components, and other keys stored for the same request.
struct Explanation {
  std::string key;
  std::vector<KeyComponent> components;
  bool cached = false;
  std::vector<OtherKey> others;
  std::optional<AutoExplanation> auto_choice;  // the spec asked for algorithm "auto"
};

struct CacheFilter {
  std::string family;
  std::string dtype;
  std::string arch;
};

struct CacheEntry {
  std::string key;
  std::string family;
  std::string dtype;
  std::string arch;
  uint64_t raw_bytes = 0;
  uint64_t stored_bytes = 0;
  int64_t created_at = 0;
  int64_t last_access = 0;
  // Only from ListEntries(..., with_specs = true): each part's resolved spec (none for link
  // results and user operators; resolved specs carry no operator source) and the format.
  std::vector<Spec> specs;
  Formats format = Formats::kLtoIr;
};

struct VerifyReport {
  uint64_t entries_checked = 0;
  uint64_t blobs_checked = 0;
  uint64_t bad_removed = 0;
  std::vector<std::string> bad_keys;
  bool totals_corrected = false;  // the stored totals disagreed with the tables; rebuilt
};

struct VacuumReport {
  uint64_t file_bytes_before = 0;
  uint64_t file_bytes_after = 0;
};

}  // namespace coop
