// registry.cc: the one list of families. Adding a family is a line here (ARCHITECTURE.md,
// "Adding a family").
#include <algorithm>

#include "server/catalog/families/families.h"

namespace coopd {

const std::vector<const Family*>& Families() {
  // Catalogue order: the Catalog RPC lists the families in this order.
  static const auto* families = new std::vector<const Family*>{
      &families::BlockReduce(),
      &families::BlockScan(),
      &families::BlockLoad(),
      &families::BlockStore(),
      &families::BlockExchange(),
      &families::BlockShuffle(),
      &families::BlockRadixSort(),
      &families::BlockMergeSort(),
      &families::BlockHistogram(),
      &families::BlockDiscontinuity(),
      &families::BlockAdjacentDifference(),
      &families::BlockRunLengthDecode(),
      &families::BlockRadixRank(),
      &families::WarpReduce(),
      &families::WarpScan(),
      &families::WarpLoad(),
      &families::WarpStore(),
      &families::WarpExchange(),
      &families::WarpMergeSort(),
      &families::BlockTopK(),
  };
  return *families;
}

const std::vector<std::string_view>& UserTypeFamilyNames() {
  static const auto* names = [] {
    // Errors have listed the families that take user types in this order since before the
    // registry (tests pin the message); a family added later joins in registry order.
    auto* out = new std::vector<std::string_view>;
    for (std::string_view name :
         {"block_load", "block_store", "block_exchange", "block_shuffle", "block_merge_sort",
          "warp_merge_sort", "warp_load", "warp_store", "warp_exchange"}) {
      const Family* f = FindFamily(name);
      if (f != nullptr && f->user_types) out->push_back(name);
    }
    for (const Family* f : Families()) {
      if (f->user_types && std::find(out->begin(), out->end(), f->name) == out->end()) {
        out->push_back(f->name);
      }
    }
    return out;
  }();
  return *names;
}

}  // namespace coopd
