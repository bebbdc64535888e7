// key.cc: Specialize's key stage: what a compile's cache key and a request's memo key are made of.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "server/cache/cache_key.h"
#include "server/catalog/spec.h"
#include "server/engine/bitcode.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::PrimitiveSpec;

std::string BundleEncoding(const std::vector<PrimitiveSpec>& specs) {
  if (specs.size() == 1) return CanonicalEncoding(specs[0]);
  std::string out = StrCat("bundle=", specs.size(), "\n");
  for (size_t i = 0; i < specs.size(); ++i) {
    StrAppend(&out, "[", i, "]\n", CanonicalEncoding(specs[i]));
  }
  return out;
}

Service::Keyed Service::KeyFor(const Toolchain& tc, const std::string& encoding,
                               const std::string& source, const std::string& arch,
                               coop::v1::Format format) const {
  if (format == coop::v1::FORMAT_BITCODE) {
    std::vector<std::string> options = ClangSemanticOptions(tc, arch);
    KeyComponents key =
        ComputeBitcodeKey(encoding, source, options, ClangAssembleOptions(arch), tc);
    return {std::move(options), std::move(key)};
  }
  std::vector<std::string> options = SemanticOptions(tc, arch);
  KeyComponents key = ComputeKey(encoding, source, options, tc);
  return {std::move(options), std::move(key)};
}

std::string Service::MemoEpoch() const {
  return StrCat(toolchain_identity_, "\nresolution=", ResolutionEpoch(), "\n");
}

std::string Service::MemoKey(const std::vector<PrimitiveSpec>& specs, bool bundle,
                             const std::vector<int>& formats) const {
  std::string out = MemoEpoch();
  StrAppend(&out, bundle ? "bundle" : "spec", " formats=");
  for (int f : formats) StrAppend(&out, f, ",");
  for (const auto& spec : specs) {
    // Deterministic bytes, length-prefixed so that no two spec lists share an encoding.
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      spec.SerializeToCodedStream(&coded);
    }
    StrAppend(&out, "\n", bytes.size(), ":", bytes);
  }
  return out;
}

}  // namespace coopd
