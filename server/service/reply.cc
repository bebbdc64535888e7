// reply.cc: Specialize's reply stage: digests, held artifacts and digest-only replies, the
// algorithm choices, formats merged into one reply, and the memory fast path
// (SpecializeFromMemory).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::PrimitiveSpec;

Artifact MergeFormats(Artifact ltoir, Artifact bitcode) {
  *ltoir.mutable_bitcode() = std::move(*bitcode.mutable_bitcode());
  ltoir.mutable_toolchain()->set_clang_version(bitcode.toolchain().clang_version());
  ltoir.clear_formats();
  ltoir.add_formats(coop::v1::FORMAT_LTOIR);
  ltoir.add_formats(coop::v1::FORMAT_BITCODE);
  for (auto& in : *ltoir.mutable_link_inputs()) {
    for (const auto& b : bitcode.link_inputs()) {
      if (b.symbol() != in.symbol()) continue;
      in.set_bitcode_key(b.bitcode_key());
      in.set_bitcode(b.bitcode());
    }
  }
  return ltoir;
}

void Service::SetDigests(Artifact* a) {
  // A bitcode artifact is made from its LTO-IR reference, whose digest it may have inherited
  // (also in its stored metadata): the digest names the LTO-IR this reply carries, or nothing.
  if (a->ltoir().empty()) {
    a->clear_digest();
  } else if (a->digest().empty()) {
    a->set_digest(Sha256::Hex(a->ltoir()));
  }
  if (a->has_bitcode() && a->bitcode().digest().empty() && !a->bitcode().data().empty()) {
    a->mutable_bitcode()->set_digest(Sha256::Hex(a->bitcode().data()));
  }
}

std::vector<HeldNeed> Service::HeldNeeds(const Artifact& a) {
  std::vector<HeldNeed> needs;
  for (int f : a.formats()) {
    if (f == coop::v1::FORMAT_BITCODE) {
      needs.push_back({coop::v1::FORMAT_BITCODE, a.bitcode().key(), a.bitcode().digest()});
    } else {
      needs.push_back({coop::v1::FORMAT_LTOIR, a.key(), a.digest()});
    }
  }
  return needs;
}

uint64_t Service::StripHeld(Artifact* a, bool keyed_metadata) {
  uint64_t omitted = a->ltoir().size() + a->source().size() + a->compile_log().size();
  a->clear_ltoir();
  a->clear_source();
  a->clear_compile_log();
  if (a->has_bitcode()) {
    omitted += a->bitcode().data().size() + a->bitcode().compile_log().size();
    a->mutable_bitcode()->clear_data();
    a->mutable_bitcode()->clear_compile_log();
  }
  for (auto& in : *a->mutable_link_inputs()) {
    omitted += in.ltoir().size() + in.bitcode().size();
    in.clear_ltoir();
    in.clear_bitcode();
  }
  // What the key fixes, and a holder that keeps the whole artifact has (holds_metadata): the
  // entries (with their declarations and descriptions), the resolved specs and the toolchain,
  // most of a digest-only reply (a BlockReduce's 993 bytes fall to 193). The reply keeps what
  // is its own: origin, timings, temp storage, the algorithm choices. A caller that did not say
  // so (an older client) gets them, as before.
  if (keyed_metadata) {
    a->clear_entries();
    a->clear_spec();
    a->clear_toolchain();
    a->clear_type_definitions();
    for (auto& part : *a->mutable_parts()) {
      part.clear_entries();
      part.clear_spec();
    }
  }
  a->set_bytes_omitted(true);
  return omitted;
}

namespace {

bool AllHoldMetadata(const std::vector<coop::v1::HeldArtifact>& have) {
  return std::all_of(have.begin(), have.end(),
                     [](const coop::v1::HeldArtifact& h) { return h.holds_metadata(); });
}

}  // namespace

bool Service::OmitHeldBytes(Artifact* a, const std::vector<coop::v1::HeldArtifact>& have) {
  // A stale or wrong digest, or any format not held: the whole reply.
  if (!HaveCovers(HeldNeeds(*a), have)) return false;
  bytes_omitted_ += StripHeld(a, AllHoldMetadata(have));
  ++digest_only_replies_;
  return true;
}

bool Service::ServeMemoized(const RequestMemo::Entry& entry, const std::string& request_id,
                            ArtifactDone& done) {
  std::optional<Artifact> ltoir, bitcode;
  if (!entry.ltoir_key.empty()) {
    ltoir = LookupArtifact(entry.ltoir_key, coop::v1::FORMAT_LTOIR);
    if (!ltoir) return false;
  }
  if (!entry.bitcode_key.empty()) {
    bitcode = LookupArtifact(entry.bitcode_key, coop::v1::FORMAT_BITCODE);
    if (!bitcode) return false;
  }
  const Artifact& first = ltoir ? *ltoir : *bitcode;
  spdlog::debug("[req {}] {} hit ({}, memo) key {}", request_id, entry.description,
                first.origin() == coop::v1::ORIGIN_MEMORY ? "memory"
                : first.origin() == coop::v1::ORIGIN_DISK ? "disk"
                                                          : "remote",
                first.key().substr(0, 16));
  Artifact artifact = ltoir && bitcode ? MergeFormats(std::move(*ltoir), std::move(*bitcode))
                                       : std::move(ltoir ? *ltoir : *bitcode);
  if (!entry.choices.empty()) {
    AttachChoices(entry.choices, &artifact);
    auto_resolutions_ += std::count_if(entry.choices.begin(), entry.choices.end(),
                                       [](const auto& c) { return !c.requested().empty(); });
  }
  done(std::move(artifact));
  return true;
}

void Service::AttachChoices(const std::vector<coop::v1::AlgorithmChoice>& choices, Artifact* a) {
  for (int i = 0; i < a->parts_size() && i < static_cast<int>(choices.size()); ++i) {
    if (!choices[i].requested().empty()) {
      *a->mutable_parts(i)->mutable_algorithm_choice() = choices[i];
    }
  }
  if (a->parts_size() == 1 && !choices.empty() && !choices[0].requested().empty()) {
    *a->mutable_algorithm_choice() = choices[0];
  }
}

std::shared_ptr<const MemoryReply> Service::BuildMemoryReply(
    const RequestMemo::Entry& entry, const std::shared_ptr<const CacheValue>& ltoir_value,
    const std::shared_ptr<const CacheValue>& bitcode_value) const {
  std::optional<Artifact> ltoir, bitcode;
  if (ltoir_value != nullptr) {
    ltoir = ArtifactFromValue(*ltoir_value, entry.ltoir_key, coop::v1::FORMAT_LTOIR,
                              coop::v1::ORIGIN_MEMORY, /*with_blob=*/false);
    if (!ltoir) return nullptr;
  }
  if (bitcode_value != nullptr) {
    bitcode = ArtifactFromValue(*bitcode_value, entry.bitcode_key, coop::v1::FORMAT_BITCODE,
                                coop::v1::ORIGIN_MEMORY, /*with_blob=*/false);
    if (!bitcode) return nullptr;
  }
  if (!ltoir && !bitcode) return nullptr;
  auto reply = std::make_shared<MemoryReply>();
  reply->description = StrCat(entry.description, " hit (memory, memo) key ",
                              (ltoir ? *ltoir : *bitcode).key().substr(0, 16));
  Artifact artifact = ltoir && bitcode ? MergeFormats(std::move(*ltoir), std::move(*bitcode))
                                       : std::move(ltoir ? *ltoir : *bitcode);
  if (!entry.choices.empty()) {
    AttachChoices(entry.choices, &artifact);
    reply->auto_resolutions = std::count_if(entry.choices.begin(), entry.choices.end(),
                                            [](const auto& c) { return !c.requested().empty(); });
  }
  // The digests come from the values; SetDigests would take the artifact's empty ltoir for "no
  // LTO-IR" and clear its digest, which is right only when there is no LTO-IR.
  if (ltoir_value == nullptr) SetDigests(&artifact);
  const size_t ltoir_size = ltoir_value != nullptr ? ltoir_value->blob.size() : 0;
  const size_t bitcode_size = bitcode_value != nullptr ? bitcode_value->blob.size() : 0;
  reply->ltoir_value = ltoir_value;
  reply->bitcode_value = bitcode_value;
  reply->full = EncodeSpecializeResponse(artifact, ltoir_size, bitcode_size);
  reply->needs = HeldNeeds(artifact);
  reply->omitted_bytes = ltoir_size + bitcode_size + StripHeld(&artifact, false);
  reply->digest_only = EncodeSpecializeResponse(artifact, 0, 0).head;
  StripHeld(&artifact, true);
  reply->digest_only_slim = EncodeSpecializeResponse(artifact, 0, 0).head;
  return reply;
}

std::optional<Service::MemoryHit> Service::SpecializeFromMemory(
    const std::vector<PrimitiveSpec>& specs, bool bundle, const std::vector<int>& formats,
    const std::string& request_id, const std::vector<coop::v1::HeldArtifact>& have,
    MemoProbe* probe) {
  CacheTier* const memory = cache_->tier(CacheOrigin::kMemory);
  if (!memo_.enabled() || memory == nullptr) return std::nullopt;
  // A miss goes on to Specialize (with the probe, or looked up again there): counted there, once.
  std::string key = MemoKey(specs, bundle, formats);
  std::shared_ptr<const RequestMemo::Entry> entry = memo_.Find(key, /*count_miss=*/false);
  if (probe != nullptr) *probe = MemoProbe{std::move(key), entry};
  if (entry == nullptr) return std::nullopt;
  // The values, from the memory tier alone (a value elsewhere means I/O: the executor's work).
  double lookup_seconds[2] = {0, 0};
  const auto get = [&](const std::string& k, std::shared_ptr<const CacheValue>* out,
                       double* seconds) {
    if (k.empty()) return true;
    const auto start = std::chrono::steady_clock::now();
    auto value = memory->GetShared(k, nullptr);
    if (!value.ok() || *value == nullptr) return false;
    *out = std::move(*value);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return true;
  };
  std::shared_ptr<const CacheValue> ltoir, bitcode;
  if (!get(entry->ltoir_key, &ltoir, &lookup_seconds[0]) ||
      !get(entry->bitcode_key, &bitcode, &lookup_seconds[1])) {
    return std::nullopt;
  }
  // The reply made from these very values, or a new one (the first hit, or the tier holds
  // another value under a key now).
  std::shared_ptr<const MemoryReply> reply = entry->reply->Load();
  if (reply == nullptr || !reply->Matches(ltoir, bitcode)) {
    reply = BuildMemoryReply(*entry, ltoir, bitcode);
    if (reply == nullptr) return std::nullopt;  // not its artifact (logged): the slow path
    entry->reply->Store(reply);
  }
  // Counted as LookupArtifact and ServeMemoized count.
  if (ltoir != nullptr) CountHit(CacheOrigin::kMemory, lookup_seconds[0]);
  if (bitcode != nullptr) CountHit(CacheOrigin::kMemory, lookup_seconds[1]);
  auto_resolutions_ += reply->auto_resolutions;
  ++requests_;
  if (bundle) ++bundles_;
  spdlog::debug("[req {}] {}", request_id, reply->description);
  MemoryHit hit;
  if (HaveCovers(reply->needs, have)) {
    hit.head = AllHoldMetadata(have) ? reply->digest_only_slim : reply->digest_only;
    ++digest_only_replies_;
    bytes_omitted_ += reply->omitted_bytes;
  } else {
    hit.head = reply->full.head;
    hit.bitcode_framing = reply->full.bitcode_framing;
    hit.ltoir = std::move(ltoir);
    hit.bitcode = std::move(bitcode);
  }
  hit.reply = std::move(reply);
  return hit;
}

}  // namespace coopd
