// coop/catalog.h: Client::GetCatalog's answer: the families, methods, dtypes, operators and
// archs the daemon accepts. Part of the public API; coop/client.h includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coop {

struct CatalogMethod {
  std::string name;
  bool needs_op = false;
  std::string description;
  std::string op_kind;  // "binary", "comparator", "flag", "difference"; empty: takes no op
};

// A kind of operator: its signature (T is the spec's dtype) and its builtin operators.
struct CatalogOpKind {
  std::string name;       // "binary", ...
  std::string signature;  // "(T, T) -> T"
  std::vector<std::string> builtins;
};

struct CatalogFamily {
  std::string name;
  std::string description;
  std::vector<CatalogMethod> methods;  // the first is the default
  std::vector<std::string> algorithms;
  std::string default_algorithm;  // empty while algorithms is not: the caller must choose
  bool warp = false;
  uint32_t max_items_per_thread = 1;
  bool scan_options = false;
  std::vector<std::string> warp_multiple_algorithms;
  bool exchange_options = false;
  // The Spec options it accepts: "scan", "exchange", "radix_sort" (value_dtype, radix_bits),
  // "merge_sort" (value_dtype), "histogram" (histogram_bins), "run_length_decode"
  // (decoded_items_per_thread), "radix_rank" (radix_bits), "top_k" (value_dtype); empty: none.
  std::string family_options;
  std::vector<std::string> dtypes;    // the dtypes it accepts
  bool power_of_two_threads = false;  // the block's thread count must be a power of two
  // False when the daemon's CCCL headers lack the family (requests get kFailedPrecondition);
  // `requires` says what it needs ("CCCL 3.3 or newer (cub/block/block_topk.cuh)").
  bool available = true;
  std::string requires;
  // Algorithm "auto" (docs/tuning.md): what it chooses among (empty: not offered), its
  // fallback (CUB's default) and the method whose measurements decide.
  std::vector<std::string> auto_algorithms;
  std::string auto_baseline;
  std::string auto_measured_method;
};

// One CCCL header tree the daemon compiles against (Spec::cccl names one).
struct CcclInfo {
  std::string name;     // "toolkit", "default", or a configured NAME (--cccl NAME=DIR, [[cccl]])
  std::string version;  // its CCCL_VERSION: "3.5.0"
  std::string include;  // the include root NVRTC is given
  std::string digest;   // sha256 over every file of the tree
  bool is_default = false;  // serves specs that name no CCCL
  std::string origin;       // "CUDA toolkit", "--cccl-include", "--cccl", "[[cccl]]"
  // The families whose probe compile failed on it, each "family: the compiler's first error".
  std::vector<std::string> unavailable;
  std::string probe;  // "pending", "ok", "failed" or "off"
};

// What this daemon accepts, from the same tables its validator uses.
struct Catalog {
  std::vector<CatalogFamily> families;
  std::vector<std::string> dtypes;
  std::vector<std::string> builtin_ops;  // the binary kind's builtins (op_kinds has every kind)
  std::vector<CatalogOpKind> op_kinds;
  std::vector<std::string> archs;
  std::vector<std::string> calling_conventions;
  // The archs a bitcode request may name; empty when bitcode is unavailable, and then
  // `bitcode_unavailable` says why.
  std::vector<std::string> bitcode_archs;
  std::string bitcode_unavailable;
  // Every CCCL the daemon compiles against, the default first; `cccl` names the one whose
  // families' `available` and `requires` this catalogue describes.
  std::vector<CcclInfo> cccls;
  std::string cccl;
};

}  // namespace coop
