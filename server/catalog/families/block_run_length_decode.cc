// block_run_length_decode: cub::BlockRunLengthDecode.
#include "server/catalog/families/families.h"
#include "server/util/strings.h"

namespace coopd::families {
namespace {

using coop::v1::PrimitiveSpec;

absl::Status CanonicalizeRunLengthDecodeOptions(const SpecContext& c, PrimitiveSpec& out) {
  const uint32_t decoded = c.in.run_length_decode().decoded_items_per_thread();
  if (absl::Status st =
          CheckRequiredCount(c.ctx, "run_length_decode.decoded_items_per_thread", decoded, 64);
      !st.ok()) {
    return st;
  }
  out.mutable_run_length_decode()->set_decoded_items_per_thread(decoded);
  return absl::OkStatus();
}

std::vector<EntryPlan> PlanRunLengthDecode(const PrimitiveSpec& s, const DType& dt) {
  const std::string t(dt.c_type);
  const int n = static_cast<int>(s.items_per_thread());
  const uint32_t decoded = s.run_length_decode().decoded_items_per_thread();
  const bool offsets = s.method() == "decode_with_offsets";
  EntryPlan p;
  p.result = "unsigned int";
  p.params = {{StrCat("const ", t, "*"), "run_values"},
              {"const unsigned int*", "run_lengths"},
              {t + "*", "decoded_items"}};
  if (offsets) p.params.push_back({"unsigned int*", "relative_offsets"});
  p.params.push_back({"unsigned int", "from_decoded_offset"});
  p.call = StrCat("::coop::device::run_length_", s.method(), "<Prim, ", n, ", ", decoded,
                  ">(temp_storage, run_values, run_lengths, decoded_items",
                  offsets ? ", relative_offsets" : "", ", from_decoded_offset)");
  p.description =
      StrCat("takes ", n,
             " runs per thread (values and lengths, blocked; trailing runs may have length "
             "0) and writes the ",
             decoded,
             " decoded items per thread of the window starting at "
             "from_decoded_offset",
             offsets ? " and their offsets within their runs" : "",
             "; returns the total decoded size (every thread)");
  std::vector<EntryPlan> plans;
  plans.push_back(std::move(p));
  return plans;
}

}  // namespace

const Family& BlockRunLengthDecode() {
  static const Family f{
      .name = "block_run_length_decode",
      .description =
          "cub::BlockRunLengthDecode: expands runs (value, length) into a window of "
          "decoded items",
      .methods = {{.name = "decode",
                   .description = "decodes the window of threads*decoded_items_per_thread items "
                                  "starting at from_decoded_offset; returns the total decoded "
                                  "size"},
                  {.name = "decode_with_offsets",
                   .description =
                       "decode, also writing each decoded item's offset within its run"}},
      .options = PrimitiveSpec::kRunLengthDecode,
      .canonicalize_options = CanonicalizeRunLengthDecodeOptions,
      .primitive_type =
          [](const PrimitiveSpec& s, std::string_view t) {
            return StrCat("::cub::BlockRunLengthDecode<", t, ", ", s.block().x(), ", ",
                          s.items_per_thread(), ", ",
                          s.run_length_decode().decoded_items_per_thread(), ", unsigned int, ",
                          s.block().y(), ", ", s.block().z(), ">");
          },
      .plan_entries = PlanRunLengthDecode,
  };
  return f;
}

}  // namespace coopd::families
