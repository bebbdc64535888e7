// resolve.cc: Specialize's first stage: validate the request, canonicalize each spec ("auto"
// resolved), check the user operators against the request limits and the formats against the
// toolchain.
#include <algorithm>

#include "server/catalog/spec.h"
#include "server/catalog/user_op.h"
#include "server/engine/bitcode.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::PrimitiveSpec;

absl::StatusOr<std::vector<PrimitiveSpec>> Service::Validate(
    const std::vector<PrimitiveSpec>& in, bool bundle,
    std::vector<coop::v1::AutoExplanation>* autos) {
  const size_t max_specs = options_.limits.bundle_specs;
  if (in.empty() || in.size() > max_specs) {
    return absl::InvalidArgumentError(StrCat("bundle: specs must hold 1..", max_specs,
                                             " specs (--max-bundle, COOPD_MAX_BUNDLE), got ",
                                             in.size()));
  }
  {
    std::vector<const PrimitiveSpec*> specs;
    for (const auto& s : in) specs.push_back(&s);
    if (absl::Status s = CheckUserOperators(
            specs, [bundle](size_t i) { return bundle ? StrCat("specs[", i, "]: ") : ""; });
        !s.ok()) {
      return s;
    }
  }
  std::vector<PrimitiveSpec> out;
  std::vector<std::string> encodings;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string where = bundle ? StrCat("specs[", i, "]: ") : "";
    coop::v1::AutoExplanation explanation;
    auto tc = FindCccl(in[i].cccl(), "cccl");
    if (!tc.ok()) {
      if (autos != nullptr) autos->push_back(std::move(explanation));
      return absl::Status(tc.status().code(), StrCat(where, tc.status().message()));
    }
    auto spec = Canonicalize(in[i], (*tc)->Target(), &explanation);
    if (in[i].algorithm() == "auto" && spec.ok()) ++auto_resolutions_;
    if (autos != nullptr) autos->push_back(std::move(explanation));
    if (!spec.ok())
      return absl::Status(spec.status().code(), StrCat(where, spec.status().message()));
    spec->set_cccl((*tc)->cccl_name);
    if (absl::Status probed = CheckProbed(**tc, *spec); !probed.ok()) {
      return absl::Status(probed.code(), StrCat(where, probed.message()));
    }
    if (i > 0 && spec->cccl() != out[0].cccl()) {
      return absl::InvalidArgumentError(
          StrCat(where, "cccl must name specs[0]'s CCCL \"", out[0].cccl(),
                 "\" (a bundle is one unit compiled against one CCCL), got ",
                 QuoteValue(in[i].cccl()), ", which is \"", spec->cccl(), "\""));
    }
    if (i > 0 && spec->arch() != out[0].arch()) {
      return absl::InvalidArgumentError(
          StrCat(where, "arch must match specs[0]'s \"", out[0].arch(),
                 "\" (a bundle is one LTO-IR for one arch), got ", QuoteValue(spec->arch())));
    }
    std::string enc = CanonicalEncoding(*spec);
    auto dup = std::find(encodings.begin(), encodings.end(), enc);
    if (dup != encodings.end()) {
      return absl::InvalidArgumentError(
          StrCat(where, "duplicates specs[", dup - encodings.begin(), "]"));
    }
    encodings.push_back(std::move(enc));
    out.push_back(std::move(*spec));
  }
  return out;
}

absl::Status Service::CheckUserOperators(const std::vector<const PrimitiveSpec*>& specs,
                                         const std::function<std::string(size_t)>& where) const {
  const size_t max_source = options_.limits.op_source_bytes;
  // Distinct operators by content (name and source or LTO-IR), as the compiles would count
  // them: one used by many specs is one.
  std::vector<std::pair<std::string_view, std::string_view>> seen;
  for (size_t i = 0; i < specs.size(); ++i) {
    const PrimitiveSpec& s = *specs[i];
    const std::pair<const char*, const coop::v1::UserOperator*> users[] = {
        {"op.user", s.op().has_user() ? &s.op().user() : nullptr},
        {"prefix_callback", s.has_prefix_callback() ? &s.prefix_callback() : nullptr}};
    for (const auto& [field, op] : users) {
      if (op == nullptr) continue;
      if (op->source().size() > max_source) {
        return absl::InvalidArgumentError(
            StrCat(where(i), field, ".source must be at most ", max_source, " bytes (",
                   max_source >> 10, " KiB; --max-op-source-kb, COOPD_MAX_OP_SOURCE_KB), got ",
                   op->source().size(), " bytes"));
      }
      const std::pair<std::string_view, std::string_view> content = {
          op->name(), op->source().empty() ? op->ltoir() : op->source()};
      if (std::find(seen.begin(), seen.end(), content) != seen.end()) continue;
      seen.push_back(content);
      if (seen.size() > options_.limits.user_ops) {
        return absl::InvalidArgumentError(
            StrCat(where(i), field, ": a request may use at most ", options_.limits.user_ops,
                   " distinct user operators (--max-user-ops, COOPD_MAX_USER_OPS); this is "
                   "one more"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Service::Formats> Service::CheckFormats(const std::vector<int>& formats,
                                                       const std::vector<PrimitiveSpec>& specs,
                                                       bool bundle) const {
  Formats out;
  for (size_t i = 0; i < formats.size(); ++i) {
    const int f = formats[i];
    if (f != coop::v1::FORMAT_LTOIR && f != coop::v1::FORMAT_BITCODE) {
      return absl::InvalidArgumentError(
          StrCat("formats[", i, "] must be FORMAT_LTOIR or FORMAT_BITCODE, got ",
                 f == coop::v1::FORMAT_UNSPECIFIED ? std::string("FORMAT_UNSPECIFIED")
                                                   : StrCat("the unknown value ", f)));
    }
    bool& seen = f == coop::v1::FORMAT_LTOIR ? out.ltoir : out.bitcode;
    if (seen) {
      return absl::InvalidArgumentError(
          StrCat("formats[", i, "] names ", coop::v1::Format_Name(f), " a second time"));
    }
    seen = true;
  }
  if (formats.empty()) out.ltoir = true;
  if (!out.bitcode) return out;
  if (!toolchain_.clang.available()) {
    return absl::FailedPreconditionError(toolchain_.clang.UnavailableMessage());
  }
  if (options_.clang_workspace.empty()) {
    return absl::FailedPreconditionError(
        "bitcode: coopd could not create its clang workspace in $TMPDIR (its log says why)");
  }
  const std::vector<std::string> archs = BitcodeArchs(toolchain_);
  for (size_t i = 0; i < specs.size(); ++i) {
    const PrimitiveSpec& s = specs[i];
    const std::string where = StrCat(bundle ? StrCat("specs[", i, "]: ") : "", s.family(), ": ");
    if (std::find(archs.begin(), archs.end(), s.arch()) == archs.end()) {
      return absl::InvalidArgumentError(
          StrCat(where, "arch for FORMAT_BITCODE must be one of ", StrJoin(archs, ", "),
                 " (the architectures both NVRTC and ", toolchain_.clang.version, " support); got ",
                 QuoteValue(s.arch())));
    }
    for (const auto& [field, op] :
         {std::pair<const char*, const coop::v1::UserOperator*>{
              "op.user.ltoir", s.op().has_user() ? &s.op().user() : nullptr},
          {"prefix_callback.ltoir", s.has_prefix_callback() ? &s.prefix_callback() : nullptr}}) {
      if (op != nullptr && !UserOperatorIsSource(*op)) {
        return absl::InvalidArgumentError(
            StrCat(where, field,
                   ": FORMAT_BITCODE cannot use an operator given as LTO-IR (clang cannot link "
                   "it); give its CUDA source instead, which coopd compiles with both compilers"));
      }
    }
  }
  return out;
}

}  // namespace coopd
