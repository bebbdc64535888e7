// render_fuzz: bytes -> coop.v1.SpecializeBundleRequest -> the specs Canonicalize() accepts
// (distinct, one arch, as Service::Validate keeps them) -> Render(): the wrapper unit NVRTC
// compiles. Source operators also go through RenderOperatorUnit().
//
// Properties of the rendered unit:
//   - it is printable ASCII lines: symbols, types and comments come from coopd's tables, never
//     from the request, so no request byte can reach the compiler unchecked;
//   - each part's symbols are C identifiers, distinct across the unit, and each entry's
//     declaration is exactly the signature its definition has in the source;
//   - rendering is deterministic (the source is part of the cache key).
// An operator's unit holds the user's source verbatim after a `#line 1 "<name>.cu"` directive.
#include <set>

#include "coop/v1/coop.pb.h"
#include "server/catalog/render.h"
#include "server/catalog/spec.h"
#include "server/catalog/user_op.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_toolchain.h"

namespace {

bool IsPrintableLines(const std::string& s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c != '\n' && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

}  // namespace

[[maybe_unused]] static const bool quiet_protobuf = coopd::fuzz::QuietProtobufLog();

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  coop::v1::SpecializeBundleRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return -1;
  static const coopd::TargetInfo target = coopd::fuzz::FixedToolchain().Target();

  std::vector<coop::v1::PrimitiveSpec> specs;
  std::set<std::string> encodings;
  for (const auto& in : request.specs()) {
    auto spec = coopd::Canonicalize(in, target);
    if (!spec.ok()) continue;
    if (!specs.empty() && spec->arch() != specs[0].arch()) continue;
    if (!encodings.insert(coopd::CanonicalEncoding(*spec)).second) continue;
    // A source operator's own unit.
    for (const auto& [req, resolved] :
         {std::pair{&in.op().user(), spec->op().has_user() ? &spec->op().user() : nullptr},
          std::pair{&in.prefix_callback(),
                    spec->has_prefix_callback() ? &spec->prefix_callback() : nullptr}}) {
      if (resolved == nullptr || !coopd::UserOperatorIsSource(*resolved)) continue;
      const std::string unit = coopd::RenderOperatorUnit(*req, *resolved);
      FUZZ_CHECK(unit.find(req->source()) != std::string::npos,
                 "the operator unit does not hold the user's source");
      FUZZ_CHECK(unit.find("#line 1 \"" + resolved->name() + ".cu\"") != std::string::npos,
                 "the operator unit has no #line directive for %s", resolved->name().c_str());
      FUZZ_CHECK(IsIdentifier(coopd::UserOperatorSymbol(*resolved)), "operator symbol \"%s\"",
                 coopd::UserOperatorSymbol(*resolved).c_str());
    }
    specs.push_back(std::move(*spec));
  }
  if (specs.empty()) return 0;

  const coopd::RenderedUnit unit = coopd::Render(specs);
  FUZZ_CHECK(unit.parts.size() == specs.size(), "%zu parts for %zu specs", unit.parts.size(),
             specs.size());
  FUZZ_CHECK(IsPrintableLines(unit.source), "the unit holds a byte outside printable ASCII");
  std::set<std::string> symbols;
  for (const auto& part : unit.parts) {
    FUZZ_CHECK(IsIdentifier(part.symbol_base), "symbol \"%s\"", part.symbol_base.c_str());
    FUZZ_CHECK(unit.source.find("COOP_LAYOUT(" + part.symbol_base + ", ") != std::string::npos,
               "%s has no layout globals in the unit", part.symbol_base.c_str());
    // COOP_LAYOUT (coop/device/prelude.cuh) pastes these names.
    FUZZ_CHECK(part.temp_bytes_symbol == part.symbol_base + "__temp_bytes" &&
                   part.temp_align_symbol == part.symbol_base + "__temp_align",
               "layout symbols %s, %s", part.temp_bytes_symbol.c_str(),
               part.temp_align_symbol.c_str());
    FUZZ_CHECK(!part.entries.empty(), "a part without entries: %s", part.symbol_base.c_str());
    for (const auto& e : part.entries) {
      FUZZ_CHECK(IsIdentifier(e.symbol), "entry symbol \"%s\"", e.symbol.c_str());
      FUZZ_CHECK(symbols.insert(e.symbol).second, "entry symbol %s twice", e.symbol.c_str());
      FUZZ_CHECK(!e.declaration.empty() && e.declaration.back() == ';', "declaration \"%s\"",
                 e.declaration.c_str());
      const std::string definition = e.declaration.substr(0, e.declaration.size() - 1) + "\n{\n";
      FUZZ_CHECK(unit.source.find(definition) != std::string::npos,
                 "the declaration of %s is not its definition's signature", e.symbol.c_str());
    }
  }
  FUZZ_CHECK(coopd::Render(specs).source == unit.source, "rendering is not deterministic");
  return 0;
}
