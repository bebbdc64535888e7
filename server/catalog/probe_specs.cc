#include "server/catalog/probe_specs.h"

#include "server/catalog/family.h"
#include "server/util/strings.h"

namespace coopd {

namespace {

// A spec of `family` and `method` with `items` per thread, canonicalized, or why not.
// A spec of `family` and `method` with `items` per thread (and, with `values`, int32 values for
// the methods that move key-value pairs), canonicalized, or why not.
absl::StatusOr<coop::v1::PrimitiveSpec> ProbeSpec(const Family& family, const Method& method,
                                                  uint32_t items, bool values,
                                                  const TargetInfo& target,
                                                  const std::string& arch) {
  coop::v1::PrimitiveSpec s;
  s.set_family(std::string(family.name));
  s.set_method(std::string(method.name));
  s.set_dtype(family.dtypes == DtypeRule::kUnsignedInteger ? "uint32" : "int32");
  if (!family.warp) s.mutable_block()->set_x(128);
  s.set_items_per_thread(items);
  if (!family.algorithms.empty() && family.default_algorithm.empty()) {
    s.set_algorithm(std::string(family.algorithms.front()));
  }
  if (method.op != OpKind::kNone) {
    s.mutable_op()->set_builtin(std::string(GetOpKind(method.op).builtins.front()));
  }
  s.set_arch(arch);
  // The options a family requires, at small values (the others keep their defaults).
  switch (family.options) {
    case coop::v1::PrimitiveSpec::kHistogram:
      s.mutable_histogram()->set_bins(256);
      break;
    case coop::v1::PrimitiveSpec::kRunLengthDecode:
      s.mutable_run_length_decode()->set_decoded_items_per_thread(4);
      break;
    case coop::v1::PrimitiveSpec::kRadixRank:
      s.mutable_radix_rank()->set_radix_bits(4);
      break;
    default:
      break;
  }
  if (values && family.options != coop::v1::PrimitiveSpec::FAMILY_OPTIONS_NOT_SET) {
    // Every options message with values names their dtype `value_dtype`.
    const auto* oneof_field = s.GetDescriptor()->FindFieldByNumber(family.options);
    google::protobuf::Message* options = s.GetReflection()->MutableMessage(&s, oneof_field);
    const auto* value_dtype = options->GetDescriptor()->FindFieldByName("value_dtype");
    if (value_dtype == nullptr) return absl::InvalidArgumentError("no value_dtype");
    options->GetReflection()->SetString(options, value_dtype, "int32");
  }
  return Canonicalize(s, target);
}

}  // namespace

ProbeSpecs MakeProbeSpecs(const TargetInfo& target, const std::string& arch) {
  ProbeSpecs out;
  for (const Family* family : Families()) {
    std::string why;
    size_t accepted = 0;
    for (const Method& method : family->methods) {
      // One item per thread where the method allows it, else the smallest tile CUB takes.
      absl::StatusOr<coop::v1::PrimitiveSpec> spec = absl::UnknownError("");
      absl::Status first;  // the plainest variant's error, the most telling
      for (const bool values : {false, true}) {
        for (const uint32_t items : {1u, 4u}) {
          spec = ProbeSpec(*family, method, items, values, target, arch);
          if (spec.ok()) break;
          if (first.ok()) first = spec.status();
        }
        if (spec.ok()) break;
      }
      if (!spec.ok()) {
        if (why.empty()) why = std::string(first.message());
        // Canonicalize's errors start with the family's name already.
        if (why.rfind(StrCat(family->name, ": "), 0) == 0) why.erase(0, family->name.size() + 2);
        continue;
      }
      out.specs.push_back(std::move(*spec));
      ++accepted;
    }
    if (accepted == 0) out.refused.push_back(StrCat(family->name, ": ", why));
  }
  return out;
}

}  // namespace coopd
