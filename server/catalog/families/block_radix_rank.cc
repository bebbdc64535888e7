// block_radix_rank: cub::BlockRadixRank, and the tile limit of every family that ranks with it.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {

absl::Status CheckRadixRankTile(const SpecContext& c, const coop::v1::PrimitiveSpec& out) {
  // BlockRadixRank counts digits in 16 bits and static_asserts a tile of at most 65535 keys.
  const uint64_t tile = BlockThreads(out) * out.items_per_thread();
  if (tile > kMaxRadixRankTile) {
    return Invalid(c.ctx, StrCat("block threads * items_per_thread must be at most 65535 (CUB's "
                                 "radix rank counts in 16 bits), got ",
                                 tile));
  }
  return absl::OkStatus();
}

namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeRadixRankOptions(const SpecContext& c, PrimitiveSpec& out) {
  const uint32_t bits = c.in.radix_rank().radix_bits();
  if (absl::Status st = CheckRequiredCount(c.ctx, "radix_rank.radix_bits", bits, 8); !st.ok()) {
    return st;
  }
  out.mutable_radix_rank()->set_radix_bits(bits);
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanRadixRank(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const uint32_t bits = s.radix_rank().radix_bits();
  EntryPlan p;
  p.result = "void";
  p.params = {{StrCat("const ", t, "*"), "keys"}, {"int*", "ranks"}, {"int", "begin_bit"}};
  p.call = StrCat("::coop::device::radix_rank_keys<Prim, ", n,
                  ">(temp_storage, keys, ranks, ::cub::BFEDigitExtractor<", t, ">(begin_bit, ",
                  bits, "))");
  p.description = StrCat("ranks ", n, " blocked keys per thread by bits [begin_bit, begin_bit + ",
                         bits, "), ", s.method() == "rank_keys" ? "ascending" : "descending",
                         "; ranks[i] is key i's position in the tile (stable)");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockRadixRank() {
  static const Family f{
      .name = "block_radix_rank",
      .description = "cub::BlockRadixRank: ranks unsigned keys across the block by one digit",
      .methods = {{.name = "rank_keys",
                   .description = "ranks[i] = position of key i in the tile stably sorted by its "
                                  "digit, ascending"},
                  {.name = "rank_keys_descending",
                   .description = "like rank_keys, digits descending"}},
      // RankKeys takes the keys' bits as unsigned integers: signed and float keys must be
      // mapped to an order-preserving unsigned form by the caller.
      .dtypes = DtypeRule::kUnsignedInteger,
      .options = PrimitiveSpec::kRadixRank,
      .check = CheckRadixRankTile,
      .canonicalize_options = CanonicalizeRadixRankOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view) {
            return StrCat("::cub::BlockRadixRank<", s.block().x(), ", ",
                          s.radix_rank().radix_bits(), ", ",
                          s.method() == "rank_keys_descending" ? "true" : "false",
                          ", true, ::cub::BLOCK_SCAN_WARP_SCANS, ::cudaSharedMemBankSizeFourByte, ",
                          s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanRadixRank,
  };
  return f;
}

}  // namespace coopd::families
