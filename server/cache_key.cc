#include "server/cache_key.h"

#include "server/sha256.h"
#include "server/strings.h"

namespace coopd {

KeyComponents ComputeKey(const std::string& canonical_request, const std::string& source,
                         const std::vector<std::string>& options, const Toolchain& tc) {
  KeyComponents k;
  k.schema = kKeySchema;
  k.canonical_request = canonical_request;
  k.source_digest = Sha256::Hex(source);
  k.options = StrJoin(options, " ");
  k.nvrtc_version = tc.NvrtcVersion();
  k.nvjitlink_version = tc.NvJitLinkVersion();
  k.header_digest = tc.header_digest;

  Sha256 h;
  h.UpdateField(k.schema);
  h.UpdateField(k.canonical_request);
  h.UpdateField(source);
  h.UpdateField(std::to_string(options.size()));
  for (const auto& o : options) h.UpdateField(o);
  h.UpdateField(k.nvrtc_version);
  h.UpdateField(k.nvjitlink_version);
  h.UpdateField(k.header_digest);
  k.key = h.FinishHex();
  return k;
}

}  // namespace coopd
