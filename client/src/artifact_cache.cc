#include "artifact_cache.h"

#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace coop::internal {

std::string ArtifactCache::Deterministic(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

uint64_t ArtifactCache::Size(const Reply& r) {
  const coop::v1::Artifact& a = r.artifact;
  uint64_t n = r.ltoir.size() + a.source().size() + a.compile_log().size() +
               a.bitcode().data().size() + a.bitcode().compile_log().size();
  for (const auto& in : a.link_inputs()) n += in.ltoir().size() + in.bitcode().size();
  return n;
}

std::shared_ptr<const Reply> ArtifactCache::Find(const std::string& request) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<const Reply>* held = lru_.Find(request);
  return held != nullptr ? *held : nullptr;
}

void ArtifactCache::Store(const std::string& request, std::shared_ptr<const Reply> reply) {
  if (!reply || reply->bytes_from) return;
  const coop::v1::Artifact& artifact = reply->artifact;
  if (!enabled() || artifact.bytes_omitted() || artifact.formats().empty()) return;
  for (int f : artifact.formats()) {
    const bool bitcode = f == coop::v1::FORMAT_BITCODE;
    if ((bitcode ? artifact.bitcode().digest() : artifact.digest()).empty()) return;
  }
  const uint64_t size = Size(*reply);
  if (size > max_bytes_) return;
  std::vector<std::shared_ptr<const Reply>> released;  // freed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  lru_.Put(request, std::move(reply), size, &released);
}

size_t ArtifactCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

uint64_t ArtifactCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.bytes();
}

bool ArtifactCache::Matches(const Reply& reply_held, const coop::v1::Artifact& reply) {
  const coop::v1::Artifact& held = reply_held.artifact;
  return reply.bytes_omitted() && reply.key() == held.key() && reply.digest() == held.digest() &&
         reply.bitcode().key() == held.bitcode().key() &&
         reply.bitcode().digest() == held.bitcode().digest() &&
         reply.link_inputs_size() == held.link_inputs_size() &&
         reply.parts_size() == held.parts_size();
}

void ArtifactCache::ToMessage(const Reply& reply, coop::v1::Artifact* out) {
  *out = reply.artifact;
  const Reply& bytes = reply.bytes();
  out->set_ltoir(bytes.ltoir.data(), bytes.ltoir.size());
  if (reply.bytes_from) {
    const coop::v1::Artifact& held = bytes.artifact;
    out->set_source(held.source());
    out->set_compile_log(held.compile_log());
    if (held.has_bitcode()) {
      out->mutable_bitcode()->set_data(held.bitcode().data());
      out->mutable_bitcode()->set_compile_log(held.bitcode().compile_log());
    }
    for (int i = 0; i < held.link_inputs_size() && i < out->link_inputs_size(); ++i) {
      out->mutable_link_inputs(i)->set_ltoir(held.link_inputs(i).ltoir());
      out->mutable_link_inputs(i)->set_bitcode(held.link_inputs(i).bitcode());
    }
    // What the key fixes (left out of a digest-only reply too).
    *out->mutable_entries() = held.entries();
    if (held.has_spec()) *out->mutable_spec() = held.spec();
    if (held.has_toolchain()) *out->mutable_toolchain() = held.toolchain();
    out->set_type_definitions(held.type_definitions());
    for (int i = 0; i < held.parts_size() && i < out->parts_size(); ++i) {
      *out->mutable_parts(i)->mutable_entries() = held.parts(i).entries();
      if (held.parts(i).has_spec()) *out->mutable_parts(i)->mutable_spec() = held.parts(i).spec();
    }
    out->set_bytes_omitted(false);
  }
}

}  // namespace coop::internal
