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
  auto it = index_.find(request);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
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
  std::shared_ptr<const Reply> held = std::move(reply);
  std::vector<std::shared_ptr<const Reply>> released;  // freed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(request); it != index_.end()) {
    bytes_ -= Size(*it->second->second);
    released.push_back(std::move(it->second->second));
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (!lru_.empty() && (lru_.size() >= max_entries_ || bytes_ + size > max_bytes_)) {
    bytes_ -= Size(*lru_.back().second);
    released.push_back(std::move(lru_.back().second));
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(request, std::move(held));
  index_[request] = lru_.begin();
  bytes_ += size;
}

size_t ArtifactCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

uint64_t ArtifactCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool ArtifactCache::Matches(const Reply& reply_held, const coop::v1::Artifact& reply) {
  const coop::v1::Artifact& held = reply_held.artifact;
  return reply.bytes_omitted() && reply.key() == held.key() && reply.digest() == held.digest() &&
         reply.bitcode().key() == held.bitcode().key() &&
         reply.bitcode().digest() == held.bitcode().digest() &&
         reply.link_inputs_size() == held.link_inputs_size();
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
    out->set_bytes_omitted(false);
  }
}

}  // namespace coop::internal
