#include "server/service/service.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>

#include "server/cache/cache_key.h"
#include "server/catalog/render.h"
#include "server/catalog/spec.h"
#include "server/catalog/user_op.h"
#include "server/engine/bitcode.h"
#include "server/plan/planner.h"
#include "server/util/escape.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::LinkResponse;
using coop::v1::PrimitiveSpec;
namespace wv1 = coop::worker::v1;

namespace {

constexpr size_t kMaxLinkModules = 16;
constexpr size_t kMaxLinkBytes = size_t{64} << 20;
constexpr size_t kMaxLinkOptions = 32;
constexpr char kLinkKeySchema[] = "coopd-link-v1";

std::string Describe(const std::vector<PrimitiveSpec>& specs) {
  if (specs.size() != 1) return StrCat("bundle of ", specs.size(), " specs for ", specs[0].arch());
  const auto& s = specs[0];
  return StrCat(s.family(), " ", s.method(), " ", s.dtype(), " ", s.arch());
}

std::string BundleEncoding(const std::vector<PrimitiveSpec>& specs) {
  if (specs.size() == 1) return CanonicalEncoding(specs[0]);
  std::string out = StrCat("bundle=", specs.size(), "\n");
  for (size_t i = 0; i < specs.size(); ++i) {
    StrAppend(&out, "[", i, "]\n", CanonicalEncoding(specs[i]));
  }
  return out;
}

void FillToolchain(const Toolchain& tc, coop::v1::Toolchain* out) {
  out->set_nvrtc_version(tc.NvrtcVersion());
  out->set_nvjitlink_version(tc.NvJitLinkVersion());
  out->set_cccl_version(tc.cccl_version);
  out->set_header_digest(tc.header_digest);
}

EntryMeta PrimitiveMeta(const std::vector<PrimitiveSpec>& specs, const KeyComponents& key) {
  return EntryMeta{specs.size() == 1 ? specs[0].family() : "bundle",
                   specs.size() == 1 ? specs[0].dtype() : "", specs[0].arch(), key.RequestDigest(),
                   key.ToProto().SerializeAsString()};
}

// Makes `a` describe the bitcode clang's `reply` holds (stored under `key`): the artifact's own
// key, compile time, log and PCH outcome are the bitcode's, and so is its one format.
void DescribeBitcode(const std::string& key, const wv1::Reply& reply, const std::string& clang,
                     Artifact* a) {
  a->set_key(key);
  a->set_compile_ms(reply.compile_ms());
  a->set_compile_log(reply.log());
  a->set_pch_status(reply.pch_status());
  a->clear_formats();
  a->add_formats(coop::v1::FORMAT_BITCODE);
  a->mutable_toolchain()->set_clang_version(clang);
  auto* module = a->mutable_bitcode();
  module->set_key(key);
  module->set_compile_ms(reply.compile_ms());
  module->set_compile_log(reply.log());
  module->set_pch_status(reply.pch_status());
}

// Gathers two results that arrive on any threads, in any order, then calls `done` once with both
// (on the thread that delivered the second).
template <class A, class B>
std::pair<std::function<void(absl::StatusOr<A>)>, std::function<void(absl::StatusOr<B>)>> Gather2(
    std::function<void(absl::StatusOr<A>, absl::StatusOr<B>)> done) {
  struct State {
    std::mutex mu;
    std::optional<absl::StatusOr<A>> a;
    std::optional<absl::StatusOr<B>> b;
    std::function<void(absl::StatusOr<A>, absl::StatusOr<B>)> done;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  // Runs `done` when both are in, outside the lock (once both are set, nothing writes them).
  auto settle = [](const std::shared_ptr<State>& st, std::unique_lock<std::mutex> lock) {
    if (!st->a || !st->b) return;
    lock.unlock();
    st->done(std::move(*st->a), std::move(*st->b));
  };
  auto first = [state, settle](absl::StatusOr<A> a) {
    std::unique_lock<std::mutex> lock(state->mu);
    state->a = std::move(a);
    settle(state, std::move(lock));
  };
  auto second = [state, settle](absl::StatusOr<B> b) {
    std::unique_lock<std::mutex> lock(state->mu);
    state->b = std::move(b);
    settle(state, std::move(lock));
  };
  return {first, second};
}

// The origin a reply names for a hit from `tier`.
coop::v1::Origin ProtoOrigin(CacheOrigin tier) {
  switch (tier) {
    case CacheOrigin::kMemory:
      return coop::v1::ORIGIN_MEMORY;
    case CacheOrigin::kDisk:
      return coop::v1::ORIGIN_DISK;
    case CacheOrigin::kRemote:
      break;
  }
  return coop::v1::ORIGIN_REMOTE;
}

// One reply carrying both formats: the LTO-IR artifact, plus the bitcode module and the
// operators' bitcode of the bitcode artifact (everything else is the same in both).
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

bool IsHexKey(const std::string& k) {
  return k.size() == 64 && std::all_of(k.begin(), k.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

Service::Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, SqliteCache* disk,
                 WorkerPool* pool, ServiceOptions options)
    : toolchain_(std::move(toolchain)),
      cache_(std::move(cache)),
      disk_(disk),
      pool_(pool),
      options_(std::move(options)),
      toolchain_identity_(
          StrCat("nvrtc=", toolchain_.NvrtcVersion(), "\nnvjitlink=", toolchain_.NvJitLinkVersion(),
                 "\ncccl=", toolchain_.cccl_version, "\nheaders=", toolchain_.header_digest,
                 "\nclang=", toolchain_.clang.version, " at ", toolchain_.clang.path)),
      history_(options_.prewarm_history.empty() ? std::vector<std::string>()
                                                : options_.prewarm_history_archs) {}

std::vector<std::string> ReadPrewarmHistory(const std::string& path) {
  std::vector<std::string> archs;
  std::ifstream in(path);
  std::string line;
  while (archs.size() < kPrewarmHistoryArchs && std::getline(in, line)) {
    const bool arch_name =
        line.size() >= 4 && line.size() <= 8 && line.rfind("sm_", 0) == 0 &&
        std::all_of(line.begin() + 3, line.end(), [](char c) { return std::isalnum(c) != 0; });
    if (arch_name && std::find(archs.begin(), archs.end(), line) == archs.end()) {
      archs.push_back(line);
    }
  }
  return archs;
}

void Service::RememberArch(const std::string& arch) {
  if (options_.prewarm_history.empty()) return;
  std::lock_guard<std::mutex> lock(history_mu_);
  if (!history_.empty() && history_.front() == arch) return;
  history_.erase(std::remove(history_.begin(), history_.end(), arch), history_.end());
  history_.insert(history_.begin(), arch);
  if (history_.size() > kPrewarmHistoryArchs) history_.resize(kPrewarmHistoryArchs);
  // Written beside and renamed over, so a reader never sees half a file. Best effort: losing it
  // only costs the next start its pre-warm.
  const std::string tmp = StrCat(options_.prewarm_history, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& a : history_) out << a << "\n";
    if (!out.flush()) {
      spdlog::debug("cannot write {}", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), options_.prewarm_history.c_str()) != 0) {
    spdlog::debug("cannot rename {} to {}", tmp, options_.prewarm_history);
  }
}

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
    auto spec = Canonicalize(in[i], toolchain_.Target(), &explanation);
    if (in[i].algorithm() == "auto" && spec.ok()) ++auto_resolutions_;
    if (autos != nullptr) autos->push_back(std::move(explanation));
    if (!spec.ok())
      return absl::Status(spec.status().code(), StrCat(where, spec.status().message()));
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

std::optional<Artifact> Service::ArtifactFromValue(const CacheValue& value, const std::string& key,
                                                   std::optional<coop::v1::Format> expected,
                                                   coop::v1::Origin origin, bool with_blob) {
  Artifact artifact;
  // A value that does not parse, names another key, or holds another format than the key's is
  // never served: recompile instead.
  const bool bitcode = artifact.ParseFromString(value.meta) && artifact.has_bitcode();
  if (artifact.key() != key || value.blob.empty() || (bitcode && artifact.bitcode().key() != key) ||
      (expected && bitcode != (*expected == coop::v1::FORMAT_BITCODE))) {
    spdlog::warn("cache value for {} is not its artifact; ignoring it", key.substr(0, 16));
    return std::nullopt;
  }
  artifact.set_origin(origin);
  const std::string digest =
      value.blob_sha256.empty() ? Sha256::Hex(value.blob) : value.blob_sha256;
  if (bitcode) {
    if (with_blob) artifact.mutable_bitcode()->set_data(value.blob);
    artifact.mutable_bitcode()->set_origin(origin);
    artifact.mutable_bitcode()->set_digest(digest);
  } else {
    if (with_blob) artifact.set_ltoir(value.blob);
    artifact.set_digest(digest);
  }
  return artifact;
}

std::optional<Artifact> Service::LookupArtifact(const std::string& key,
                                                std::optional<coop::v1::Format> expected) {
  const auto lookup_start = std::chrono::steady_clock::now();
  std::optional<CacheHit> hit = cache_->Get(key);
  if (!hit) return std::nullopt;
  // The one copy of the bytes a hit makes, after the tier's lock is released (the value is
  // shared with the memory tier: read, never moved).
  auto artifact = ArtifactFromValue(*hit->value, key, expected, ProtoOrigin(hit->origin),
                                    /*with_blob=*/true);
  if (!artifact) return std::nullopt;
  CountHit(hit->origin,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - lookup_start).count());
  return artifact;
}

void Service::CountHit(CacheOrigin tier, double lookup_seconds) {
  switch (tier) {
    case CacheOrigin::kMemory:
      ++memory_hits_;
      break;
    case CacheOrigin::kDisk:
      ++disk_hits_;
      break;
    case CacheOrigin::kRemote:
      ++remote_hits_;
      break;
  }
  hit_seconds_[static_cast<int>(tier)].Observe(lookup_seconds);
}

void Service::Fetch(const std::string& key, coop::v1::Format format, const std::string& description,
                    const std::string& request_id, bool may_compile, ArtifactDone done,
                    const Start& start, const RequestScope& caller) {
  if (auto artifact = LookupArtifact(key, format)) {
    // Per-hit lines are debug: hits are counted (Stats memory_hits, disk_hits, remote_hits).
    spdlog::debug("[req {}] {} hit ({}) key {}", request_id, description,
                  artifact->origin() == coop::v1::ORIGIN_MEMORY ? "memory"
                  : artifact->origin() == coop::v1::ORIGIN_DISK ? "disk"
                                                                : "remote",
                  key.substr(0, 16));
    return done(std::move(*artifact));
  }
  ++misses_;
  if (!may_compile) {
    spdlog::info("[req {}] {} miss key {}: not compiled (the caller's role is read)", request_id,
                 description, key.substr(0, 16));
    return done(absl::PermissionDeniedError(
        StrCat(description, " is not cached (key ", key.substr(0, 16),
               "), and this caller's token has role read, which fetches cached artifacts but "
               "cannot compile; a compile or admin token can")));
  }
  // The farm-wide lease this flight's leader holds, if any: released when the flight ends
  // (after the store), so waiting replicas find the entry, or, after a failure or when every
  // caller cancelled, take over.
  auto lease = std::make_shared<std::string>();
  // Starting a compile spends the caller's compile quota; joining one, or a hit, does not.
  const bool quota = quotas_.enabled() && !caller.client.empty();
  SingleFlight<Artifact>::JoinOptions join;
  join.recheck = [&]() { return LookupArtifact(key, format); };
  join.cancel = caller.cancel;
  if (quota) join.lead_refusal = quotas_.TakeCompile(caller.client, ClientQuotas::Clock::now());
  join.on_end = [this, key, lease] {
    if (!lease->empty()) options_.remote->Release(key, *lease);
  };
  // The leader charges the bytes its compile stored to its client's byte quota.
  auto leads = std::make_shared<bool>(false);
  std::shared_ptr<CancelToken> flight;
  auto joined = compiles_in_flight_.Join(
      key,
      [this, leads, client = quota ? caller.client : std::string(),
       done = std::move(done)](const absl::StatusOr<Artifact>& result) {
        if (*leads && !client.empty() && result.ok() &&
            result->origin() == coop::v1::ORIGIN_COMPILED) {
          quotas_.ChargeBytes(client, result->ltoir().size() + result->bitcode().data().size(),
                              ClientQuotas::Clock::now());
        }
        done(result);
      },
      std::move(join), &flight);
  if (quota && joined != SingleFlight<Artifact>::Joined::kLeader &&
      joined != SingleFlight<Artifact>::Joined::kRefused) {
    quotas_.ReturnCompile(caller.client);
  }
  if (joined == SingleFlight<Artifact>::Joined::kRefused) {
    spdlog::info("[req {}] {} miss key {}: not compiled ({})", request_id, description,
                 key.substr(0, 16), "over the client's quota");
  } else if (joined == SingleFlight<Artifact>::Joined::kWaiter) {
    spdlog::info("[req {}] joined the compile in flight for key {}", request_id, key.substr(0, 16));
  } else if (joined == SingleFlight<Artifact>::Joined::kLeader) {
    *leads = true;
    if (options_.remote == nullptr) return start(flight);
    // Across replicas: compile under the lease, or wait for the replica that holds it. A flight
    // abandoned meanwhile still compiles (or is served) here: the compile is queued with its
    // cancelled token, so the pool drops it at once, and the lease is released when the
    // flight's Complete comes.
    options_.remote->Coordinate(key, [this, key, format, lease, start, request_id, flight](
                                         RemoteCache::Turn turn, const std::string& token) {
      if (turn == RemoteCache::Turn::kReady) {
        if (auto artifact = LookupArtifact(key, format)) {
          spdlog::info("[req {}] another replica compiled key {}; served from the farm tier",
                       request_id, key.substr(0, 16));
          return compiles_in_flight_.Complete(key, *artifact, flight);
        }
      }
      *lease = token;
      start(flight);
    });
  }
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

void Service::Specialize(const std::vector<PrimitiveSpec>& request_specs, bool bundle,
                         const std::vector<int>& request_formats, const std::string& request_id,
                         ArtifactDone done, bool may_compile,
                         const std::vector<coop::v1::HeldArtifact>& have, MemoProbe probe,
                         const RequestScope& caller) {
  ++requests_;
  if (bundle) ++bundles_;
  // Every reply carries its bytes' digests (a hit's come from the cache, a compile's are hashed
  // here, once); a caller that holds the bytes gets the metadata alone.
  done = [this, have, done = std::move(done)](absl::StatusOr<Artifact> artifact) {
    if (artifact.ok()) {
      SetDigests(&*artifact);
      OmitHeldBytes(&*artifact, have);
    }
    done(std::move(artifact));
  };
  std::string memo_key;
  if (memo_.enabled()) {
    std::shared_ptr<const RequestMemo::Entry> entry;
    if (probe.key.empty()) {
      memo_key = MemoKey(request_specs, bundle, request_formats);
      entry = memo_.Find(memo_key);
    } else {
      // SpecializeFromMemory looked it up: its hit is counted, its miss is counted here.
      memo_key = std::move(probe.key);
      entry = std::move(probe.entry);
      if (!entry) memo_.CountMiss();
    }
    if (entry && ServeMemoized(*entry, request_id, done)) return;
  }
  std::vector<coop::v1::AutoExplanation> autos;
  auto specs = Validate(request_specs, bundle, &autos);
  std::vector<coop::v1::AlgorithmChoice> choices;
  for (auto& a : autos) choices.push_back(std::move(*a.mutable_choice()));
  if (specs.ok() && std::any_of(choices.begin(), choices.end(),
                                [](const auto& c) { return !c.requested().empty(); })) {
    // The choice is the request's, not the entry's: every reply that asked for "auto" says what
    // it got and why, while the cached artifact (shared with the explicit request) carries
    // none. The memo remembers it with the keys.
    done = [choices, done = std::move(done)](absl::StatusOr<Artifact> result) {
      if (result.ok()) AttachChoices(choices, &*result);
      done(std::move(result));
    };
  } else {
    choices.clear();
  }
  absl::StatusOr<Formats> formats =
      specs.ok() ? CheckFormats(request_formats, *specs, bundle) : specs.status();
  if (!formats.ok()) {
    // As before bitcode: every refused spec counts; a missing clang is not the request's fault.
    if (!specs.ok() || formats.status().code() == absl::StatusCode::kInvalidArgument) ++invalid_;
    spdlog::info("[req {}] invalid request: {}", request_id,
                 std::string(formats.status().message()));
    return done(formats.status());
  }
  // User operators come first: each distinct one given as source is compiled once and cached
  // under its own key; LTO-IR is taken as given (the primitive's layout query links it).
  std::vector<PendingOperator> ops;
  for (size_t i = 0; i < specs->size(); ++i) {
    const PrimitiveSpec& s = (*specs)[i];
    // The operator and the block-prefix callback, each with its request (source or LTO-IR).
    const std::pair<const coop::v1::UserOperator*, const coop::v1::UserOperator*> users[] = {
        {s.op().has_user() ? &s.op().user() : nullptr, &request_specs[i].op().user()},
        {s.has_prefix_callback() ? &s.prefix_callback() : nullptr,
         &request_specs[i].prefix_callback()}};
    for (const auto& [resolved, request] : users) {
      if (resolved == nullptr) continue;
      const std::string symbol = UserOperatorSymbol(*resolved);
      if (std::any_of(ops.begin(), ops.end(),
                      [&](const PendingOperator& p) { return p.symbol == symbol; })) {
        continue;
      }
      ops.push_back({*request, *resolved, symbol, s.arch(),
                     StrCat(bundle ? StrCat("specs[", i, "]: ") : "", s.family())});
    }
  }
  if (ops.empty()) {
    return SpecializeResolved(*specs, {}, *formats, request_id, may_compile, std::move(done),
                              caller, memo_key, choices);
  }
  ResolveOperators(
      std::move(ops), formats->bitcode, request_id, may_compile,
      [this, specs = *specs, formats = *formats, request_id, may_compile, caller,
       done = std::move(done)](
          absl::StatusOr<std::vector<coop::v1::ArtifactLinkInput>> inputs) mutable {
        if (!inputs.ok()) {
          // Not the request's fault: a read token, a quota, a caller that stopped waiting.
          const auto code = inputs.status().code();
          const bool cancelled = caller.cancel && caller.cancel->cancelled();
          if (code != absl::StatusCode::kPermissionDenied &&
              code != absl::StatusCode::kResourceExhausted && !cancelled) {
            ++invalid_;
          }
          return done(inputs.status());
        }
        SpecializeResolved(specs, *inputs, formats, request_id, may_compile, std::move(done),
                           caller);
      },
      caller);
}

void Service::ResolveOperators(std::vector<PendingOperator> ops, bool bitcode,
                               const std::string& request_id, bool may_compile, OperatorsDone done,
                               const RequestScope& caller) {
  struct Gather {
    std::mutex mu;
    size_t remaining;
    std::vector<coop::v1::ArtifactLinkInput> inputs;
    absl::Status status;
    OperatorsDone done;
  };
  auto gather = std::make_shared<Gather>();
  // One delivery per operator and format; a bitcode request also compiles each operator with
  // clang (LTO-IR operators were refused by CheckFormats).
  gather->remaining = ops.size() * (bitcode ? 2 : 1);
  gather->inputs.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) gather->inputs[i].set_symbol(ops[i].symbol);
  gather->done = std::move(done);
  auto finish = [gather](size_t i, const absl::StatusOr<Artifact>& compiled) {
    OperatorsDone done;
    {
      std::lock_guard<std::mutex> lock(gather->mu);
      if (!compiled.ok()) {
        if (gather->status.ok()) gather->status = compiled.status();
      } else if (compiled->has_bitcode()) {
        gather->inputs[i].set_bitcode_key(compiled->bitcode().key());
        gather->inputs[i].set_bitcode(compiled->bitcode().data());
      } else {
        gather->inputs[i].set_key(compiled->key());
        gather->inputs[i].set_ltoir(compiled->ltoir());
      }
      if (--gather->remaining > 0) return;
      done = std::move(gather->done);
    }
    if (gather->status.ok()) return done(std::move(gather->inputs));
    done(gather->status);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const PendingOperator& op = ops[i];
    if (!UserOperatorIsSource(op.resolved)) {
      Artifact given;  // the frontend's LTO-IR, as given
      given.set_ltoir(op.request.ltoir());
      finish(i, given);
      continue;
    }
    const std::string unit = RenderOperatorUnit(op.request, op.resolved);
    const std::string encoding = OperatorEncoding(op.resolved, op.arch);
    const std::string description = StrCat("operator ", op.resolved.name(), " for ", op.arch);
    const std::vector<std::string> options = SemanticOptions(toolchain_, op.arch);
    const KeyComponents key = ComputeKey(encoding, unit, options, toolchain_);
    Fetch(
        key.key, coop::v1::FORMAT_LTOIR, description, request_id, may_compile,
        [finish, i](absl::StatusOr<Artifact> a) { finish(i, a); },
        [this, op, unit, options, key, request_id](const std::shared_ptr<CancelToken>& flight) {
          StartOperatorCompile(op, unit, options, key, request_id, flight);
        },
        caller);
    if (!bitcode) continue;
    const std::vector<std::string> clang_options = ClangSemanticOptions(toolchain_, op.arch);
    const KeyComponents bkey =
        ComputeBitcodeKey(encoding, unit, clang_options, ClangAssembleOptions(op.arch), toolchain_);
    Fetch(
        bkey.key, coop::v1::FORMAT_BITCODE, description + " (bitcode)", request_id, may_compile,
        [finish, i](absl::StatusOr<Artifact> a) { finish(i, a); },
        [this, op, unit, clang_options, bkey,
         request_id](const std::shared_ptr<CancelToken>& flight) {
          StartOperatorCompile(op, unit, clang_options, bkey, request_id, flight);
        },
        caller);
  }
}

void Service::FillClangJob(coop::worker::v1::CompileJob* job) const {
  job->set_backend(wv1::CompileJob::CLANG);
  job->mutable_clang()->set_program(toolchain_.clang.path);
  job->mutable_clang()->set_identity(toolchain_.clang.Identity());
  job->mutable_clang()->set_workspace(options_.clang_workspace);
}

void Service::StartOperatorCompile(const PendingOperator& op, const std::string& unit,
                                   const std::vector<std::string>& options,
                                   const KeyComponents& components, const std::string& request_id,
                                   const std::shared_ptr<CancelToken>& flight) {
  const std::string key = components.key;
  const bool bitcode = components.format == "bitcode";
  EntryMeta meta{"operator", op.resolved.operand_dtypes(0), op.arch, components.RequestDigest(),
                 components.ToProto().SerializeAsString()};
  wv1::Request request;
  auto* job = request.mutable_compile();
  job->set_source(unit);
  for (const auto& o : options) job->add_options(o);
  // Off: an operator's include prefix is not the prelude, and a PCH built for it would replace
  // the worker's warm prelude PCH. Operators compile in well under a second without one.
  job->set_pch(false);
  job->set_arch(op.arch);
  if (bitcode) {
    FillClangJob(job);
    job->add_entries(op.symbol);
  }
  const std::string description =
      StrCat("operator ", op.resolved.name(), " for ", op.arch, bitcode ? " (bitcode)" : "");
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  pool_->Submit(
      std::move(request), bitcode ? "" : StrJoin(options, " ") + " operator", description,
      [this, op, unit, key, meta, bitcode, request_id, description,
       flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok()) {
          absl::Status s = reply.status();
          // The compiler's verdict on the frontend's source is the caller's to fix; the log's
          // line numbers are the source's own (the unit puts it under #line 1 "<name>.cu").
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InvalidArgumentError(
                StrCat(op.context, ": op.user.source (", op.resolved.name(), ") does not compile",
                       bitcode ? " with clang" : "", " for ", op.arch, ":\n", s.message()));
          }
          spdlog::info("[req {}] {} failed: {}", request_id, description, std::string(s.message()));
          return compiles_in_flight_.Complete(key, s, flight);
        }
        ++compiles_;
        if (bitcode) ++bitcode_compiles_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        compile_seconds_.Observe(reply->compile_ms() / 1000.0);  // operators: not in percentiles
        spdlog::info("[req {}] compiled {} in {:.0f} ms ({} bytes {})", request_id, description,
                     reply->compile_ms(), bitcode ? reply->bitcode().size() : reply->ltoir().size(),
                     bitcode ? "bitcode" : "LTO-IR");
        Artifact artifact;
        artifact.set_key(key);
        artifact.set_arch(op.arch);
        FillToolchain(toolchain_, artifact.mutable_toolchain());
        artifact.set_compile_ms(reply->compile_ms());
        artifact.set_compile_log(reply->log());
        artifact.set_source(unit);
        CacheValue value;
        if (bitcode) {
          DescribeBitcode(key, *reply, toolchain_.clang.Identity(), &artifact);
          value.blob = reply->bitcode();
        } else {
          artifact.add_formats(coop::v1::FORMAT_LTOIR);
          value.blob = reply->ltoir();
        }
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        if (bitcode) {
          artifact.mutable_bitcode()->set_data(std::move(value.blob));
          artifact.mutable_bitcode()->set_origin(coop::v1::ORIGIN_COMPILED);
        } else {
          artifact.set_ltoir(std::move(value.blob));
        }
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      },
      flight);
}

void Service::SpecializeResolved(const std::vector<PrimitiveSpec>& specs,
                                 const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                                 const Formats& formats, const std::string& request_id,
                                 bool may_compile, ArtifactDone done, const RequestScope& caller,
                                 const std::string& memo_key,
                                 const std::vector<coop::v1::AlgorithmChoice>& choices) {
  const RenderedUnit unit = Render(specs);
  const std::string& arch = specs[0].arch();
  const std::string encoding = BundleEncoding(specs);
  const std::string description = Describe(specs);
  const std::vector<std::string> options = SemanticOptions(toolchain_, arch);
  const KeyComponents key = ComputeKey(encoding, unit.source, options, toolchain_);

  // The LTO-IR: asked for, or (for bitcode alone) the reference the bitcode's layouts must match.
  auto ltoir = [this, specs, unit, options, key, link_inputs, request_id, description, may_compile](
                   ArtifactDone done, const RequestScope& caller) {
    Fetch(
        key.key, coop::v1::FORMAT_LTOIR, description, request_id, may_compile, std::move(done),
        [this, specs, unit, options, key, link_inputs,
         request_id](const std::shared_ptr<CancelToken>& flight) {
          StartCompile(specs, unit, options, key, link_inputs, request_id, flight);
        },
        caller);
  };
  auto remember = [&](const std::string& bitcode_key) {
    if (!memo_key.empty()) {
      memo_.Remember(memo_key, {formats.ltoir ? key.key : "", bitcode_key, description, choices});
    }
  };
  if (!formats.bitcode) {
    remember("");
    return ltoir(std::move(done), caller);
  }

  const std::vector<std::string> clang_options = ClangSemanticOptions(toolchain_, arch);
  const KeyComponents bkey = ComputeBitcodeKey(encoding, unit.source, clang_options,
                                               ClangAssembleOptions(arch), toolchain_);
  remember(bkey.key);
  auto bitcode = [this, specs, unit, clang_options, bkey, link_inputs, request_id, description,
                  ltoir, may_compile](ArtifactDone done, const RequestScope& caller) {
    Fetch(
        bkey.key, coop::v1::FORMAT_BITCODE, description + " (bitcode)", request_id, may_compile,
        std::move(done),
        [this, specs, unit, clang_options, bkey, link_inputs, request_id,
         ltoir](const std::shared_ptr<CancelToken>& flight) {
          StartBitcodeCompile(specs, unit, clang_options, bkey, link_inputs, request_id, ltoir,
                              flight);
        },
        caller);
  };
  if (!formats.ltoir) return bitcode(std::move(done), caller);
  auto both = Gather2<Artifact, Artifact>(
      [done = std::move(done)](absl::StatusOr<Artifact> l, absl::StatusOr<Artifact> b) {
        if (!l.ok()) return done(l.status());
        if (!b.ok()) return done(b.status());
        done(MergeFormats(std::move(*l), std::move(*b)));
      });
  ltoir(both.first, caller);
  bitcode(both.second, caller);
}

wv1::Request Service::PrimitiveJob(const std::vector<PrimitiveSpec>& specs,
                                   const RenderedUnit& unit,
                                   const std::vector<std::string>& options) const {
  wv1::Request request;
  auto* job = request.mutable_compile();
  job->set_source(unit.source);
  for (const auto& o : options) job->add_options(o);
  job->set_pch(options_.compile.pch);
  job->set_arch(specs[0].arch());
  for (const auto& part : unit.parts) {
    auto* q = job->add_layouts();
    q->set_bytes_symbol(part.temp_bytes_symbol);
    q->set_align_symbol(part.temp_align_symbol);
  }
  return request;
}

void Service::StartBitcodeCompile(
    const std::vector<PrimitiveSpec>& specs, const RenderedUnit& unit,
    const std::vector<std::string>& options, const KeyComponents& components,
    const std::vector<coop::v1::ArtifactLinkInput>& link_inputs, const std::string& request_id,
    const std::function<void(ArtifactDone, const RequestScope&)>& ltoir,
    const std::shared_ptr<CancelToken>& flight) {
  const std::string key = components.key;
  const EntryMeta meta = PrimitiveMeta(specs, components);
  wv1::Request request = PrimitiveJob(specs, unit, options);
  auto* job = request.mutable_compile();
  FillClangJob(job);
  for (const auto& part : unit.parts) {
    for (const auto& e : part.entries) job->add_entries(e.symbol);
  }
  const std::string description = Describe(specs) + " (bitcode)";
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  // The clang compile and the LTO-IR (cached, in flight or compiled now, on another worker) run
  // side by side; the bitcode is stored once both are in and their layouts agree.
  auto both = Gather2<Artifact, wv1::Reply>(
      [this, unit, key, meta, link_inputs, request_id, description, flight](
          absl::StatusOr<Artifact> reference, absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          return compiles_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++compile_failures_;
          absl::Status s = reply.status();
          spdlog::error("[req {}] compile of {} failed: {}", request_id, description,
                        std::string(s.message()));
          // As for NVRTC: a valid spec that clang cannot compile is coopd's bug or a toolchain
          // problem. Pool errors (worker died, timeout, shutting down) keep their codes.
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InternalError(StrCat(description, ": ", s.message()));
          }
          return compiles_in_flight_.Complete(key, s, flight);
        }
        if (!reference.ok()) return compiles_in_flight_.Complete(key, reference.status(), flight);
        std::vector<Layout> nvrtc, clang;
        for (const auto& part : reference->parts()) {
          nvrtc.push_back(Layout{part.temp_storage().bytes(), part.temp_storage().align()});
        }
        for (const auto& l : reply->layouts()) clang.push_back(Layout{l.bytes(), l.align()});
        if (absl::Status s = CompareLayouts(description, nvrtc, clang); !s.ok()) {
          ++compile_failures_;
          spdlog::error("[req {}] {}", request_id, std::string(s.message()));
          return compiles_in_flight_.Complete(key, s, flight);
        }
        ++compiles_;
        ++bitcode_compiles_;
        if (reply->pch_status() == "used") ++pch_warm_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        RecordCompileTime(reply->compile_ms());
        spdlog::info(
            "[req {}] compiled {} in {:.0f} ms ({} bytes bitcode, PCH {}, {} internalized)",
            request_id, description, reply->compile_ms(), reply->bitcode().size(),
            reply->pch_status(), reply->internalized_size());

        // The reference's description of the unit (parts, entries, layouts, spec, source) is the
        // bitcode's too: both compilers compiled the same rendered unit.
        Artifact artifact = std::move(*reference);
        artifact.clear_ltoir();
        artifact.clear_origin();
        artifact.clear_link_inputs();
        artifact.set_layout_ms(0);
        DescribeBitcode(key, *reply, toolchain_.clang.Identity(), &artifact);
        auto* module = artifact.mutable_bitcode();
        for (const auto& in : link_inputs) {
          auto* op = artifact.add_link_inputs();
          op->set_symbol(in.symbol());
          op->set_bitcode_key(in.bitcode_key());
          op->set_bitcode(in.bitcode());
        }
        CacheValue value;
        value.blob = reply->bitcode();
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        module->set_data(std::move(value.blob));
        module->set_origin(coop::v1::ORIGIN_COMPILED);
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      });
  // The reference is fetched for the flight, not for any one caller: it is wanted while the
  // flight is, and its compile stops when only this flight waited for it. No quota: the
  // request that led this flight has paid for it.
  ltoir(both.first, RequestScope{flight, ""});
  pool_->Submit(std::move(request), "", description, both.second, flight);
}

void Service::StartCompile(const std::vector<PrimitiveSpec>& specs, const RenderedUnit& unit,
                           const std::vector<std::string>& options, const KeyComponents& components,
                           const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                           const std::string& request_id,
                           const std::shared_ptr<CancelToken>& flight) {
  const std::string& key = components.key;
  const EntryMeta meta = PrimitiveMeta(specs, components);
  wv1::Request request = PrimitiveJob(specs, unit, options);
  auto* job = request.mutable_compile();
  job->set_pch_heap_bytes(options_.compile.pch_heap_bytes);
  std::vector<coop::v1::UserOperator> frontend_ltoir;  // must prove they define their symbol
  for (const auto& s : specs) {
    if (s.op().has_user() && !UserOperatorIsSource(s.op().user())) {
      frontend_ltoir.push_back(s.op().user());
    }
    if (s.has_prefix_callback() && !UserOperatorIsSource(s.prefix_callback())) {
      frontend_ltoir.push_back(s.prefix_callback());
    }
  }
  for (const auto& in : link_inputs) {
    auto* extra = job->add_layout_inputs();
    extra->set_kind(wv1::LinkInput::LTOIR);
    extra->set_name(StrCat("operator ", in.symbol()));
    extra->set_data(in.ltoir());
    job->add_required_symbols(in.symbol());
  }
  if (!frontend_ltoir.empty()) job->set_probe_source(RenderOperatorProbe(frontend_ltoir));
  const std::string description = Describe(specs);
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  pool_->Submit(
      std::move(request), StrJoin(options, " "), description,
      [this, specs, unit, key, meta, link_inputs, request_id, description,
       flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          // Every caller left (they have their answers): not a failure.
          return compiles_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++compile_failures_;
          spdlog::error("[req {}] compile of {} failed: {}", request_id, description,
                        std::string(reply.status().message()));
          absl::Status s = reply.status();
          // A valid spec that does not compile is our bug or a toolchain problem, not the
          // caller's: report it as INTERNAL, with the compiler log. Pool errors (worker died,
          // timeout, shutting down) keep their own codes.
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InternalError(StrCat(description, ": ", s.message()));
          }
          return compiles_in_flight_.Complete(key, s, flight);
        }
        if (reply->layouts_size() != static_cast<int>(unit.parts.size())) {
          ++compile_failures_;
          return compiles_in_flight_.Complete(
              key,
              absl::InternalError(StrCat(description, ": layout query returned ",
                                         reply->layouts_size(), " layouts for ", unit.parts.size(),
                                         " parts")),
              flight);
        }
        ++compiles_;
        if (reply->pch_status() == "used") ++pch_warm_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        RecordCompileTime(reply->compile_ms());
        RememberArch(specs[0].arch());
        spdlog::info(
            "[req {}] compiled {} in {:.0f} ms + {:.0f} ms layout ({} bytes LTO-IR, PCH {})",
            request_id, description, reply->compile_ms(), reply->layout_ms(), reply->ltoir().size(),
            reply->pch_status());
        if (reply->pch_status().rfind("not created", 0) == 0) {
          // Every later compile on this worker stays cold (about 5x slower) until this is fixed.
          spdlog::warn(
              "[req {}] NVRTC could not build its precompiled header ({}); compiles on "
              "this worker stay cold",
              request_id, reply->pch_status());
        }

        Artifact artifact;
        artifact.set_key(key);
        artifact.set_ltoir(reply->ltoir());
        for (size_t i = 0; i < unit.parts.size(); ++i) {
          auto* part = artifact.add_parts();
          *part->mutable_spec() = specs[i];
          part->mutable_temp_storage()->set_bytes(reply->layouts(static_cast<int>(i)).bytes());
          part->mutable_temp_storage()->set_align(reply->layouts(static_cast<int>(i)).align());
          for (const auto& e : unit.parts[i].entries) {
            auto* entry = part->add_entries();
            entry->set_symbol(e.symbol);
            entry->set_declaration(e.declaration);
            entry->set_description(e.description);
            *artifact.add_entries() = *entry;
          }
        }
        if (artifact.parts_size() == 1) {
          *artifact.mutable_temp_storage() = artifact.parts(0).temp_storage();
          *artifact.mutable_spec() = artifact.parts(0).spec();
        }
        artifact.set_arch(specs[0].arch());
        artifact.add_formats(coop::v1::FORMAT_LTOIR);
        FillToolchain(toolchain_, artifact.mutable_toolchain());
        artifact.set_compile_ms(reply->compile_ms());
        artifact.set_compile_log(reply->log());
        artifact.set_source(unit.source);
        artifact.set_type_definitions(unit.type_definitions);
        artifact.set_pch_status(reply->pch_status());
        artifact.set_layout_ms(reply->layout_ms());
        for (const auto& in : link_inputs) *artifact.add_link_inputs() = in;
        // Store before completing the flight, so a request arriving after the flight ends
        // finds the entry (SingleFlight's re-check relies on this order).
        CacheValue value;
        value.blob = std::move(*artifact.mutable_ltoir());
        artifact.clear_ltoir();
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        artifact.set_ltoir(std::move(value.blob));
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      },
      flight);
}

void Service::RecordCompileTime(double ms) {
  compile_seconds_.Observe(ms / 1000.0);
  std::lock_guard<std::mutex> lock(times_mu_);
  recent_compile_ms_.push_back(ms);
  if (recent_compile_ms_.size() > 1024) recent_compile_ms_.pop_front();
}

void Service::Link(const coop::v1::LinkRequest& request, const std::string& request_id,
                   LinkDone done, bool may_compile, const RequestScope& caller) {
  ++requests_;
  auto invalid = [&](std::string message) {
    ++invalid_;
    spdlog::info("[req {}] invalid link request: {}", request_id, message);
    done(absl::InvalidArgumentError(std::move(message)));
  };
  const std::vector<std::string> archs = ArchNames(toolchain_.supported_archs);
  const std::string& arch = request.arch();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
    return invalid(
        StrCat("link: arch must be one of ", StrJoin(archs, ", "), "; got ", QuoteValue(arch)));
  }
  if (request.modules_size() < 1 || request.modules_size() > static_cast<int>(kMaxLinkModules)) {
    return invalid(StrCat("link: modules must hold 1..", kMaxLinkModules,
                          " kernel modules (LTO-IR or PTX), got ", request.modules_size()));
  }
  size_t total = 0;
  for (int i = 0; i < request.modules_size(); ++i) {
    const auto& m = request.modules(i);
    if (m.data().empty()) return invalid(StrCat("link: modules[", i, "].data is empty"));
    total += m.data().size();
  }
  if (total > kMaxLinkBytes) {
    return invalid(StrCat("link: modules hold ", total, " bytes, more than the ", kMaxLinkBytes,
                          "-byte limit"));
  }
  if (request.options_size() > static_cast<int>(kMaxLinkOptions)) {
    return invalid(
        StrCat("link: at most ", kMaxLinkOptions, " options, got ", request.options_size()));
  }
  std::vector<std::string> options;
  if (!request.keep_unused_variables()) options.push_back("-optimize-unused-variables");
  for (int i = 0; i < request.options_size(); ++i) {
    const std::string& o = request.options(i);
    if (o.size() < 2 || o[0] != '-' || o.size() > 256) {
      return invalid(StrCat("link: options[", i,
                            "] must be an nvJitLink option starting with '-' "
                            "(at most 256 characters), got ",
                            QuoteValue(o)));
    }
    if (o.rfind("-arch", 0) == 0 || o == "-ptx" || o == "-lto") {
      return invalid(StrCat("link: options[", i, "] \"", o,
                            "\" is set by coopd (it links with -arch from `arch`, -lto, to a "
                            "cubin); remove it"));
    }
    options.push_back(o);
  }

  // Every input goes into the key: the modules' bytes, the artifacts (by their own content
  // keys), the options, the arch and the linker's version.
  Sha256 h;
  h.UpdateField(kLinkKeySchema);
  h.UpdateField(arch);
  h.UpdateField(toolchain_.NvJitLinkVersion());
  h.UpdateField(std::to_string(options.size()));
  for (const auto& o : options) h.UpdateField(o);
  h.UpdateField(std::to_string(request.modules_size()));
  for (const auto& m : request.modules()) {
    h.UpdateField(m.kind() == coop::v1::LinkModule::KIND_PTX ? "ptx" : "ltoir");
    h.UpdateField(Sha256::Hex(m.data()));
  }
  h.UpdateField(std::to_string(request.artifact_keys_size()));
  for (const auto& k : request.artifact_keys()) h.UpdateField(k);
  const std::string key = h.FinishHex();

  if (auto hit = cache_->Get(key)) {
    LinkResponse response;
    if (response.ParseFromString(hit->value->meta) && response.key() == key &&
        !hit->value->blob.empty()) {
      response.set_cubin(hit->value->blob);
      ++link_hits_;
      response.set_origin(ProtoOrigin(hit->origin));
      spdlog::info("[req {}] link hit key {}", request_id, key.substr(0, 16));
      return done(std::move(response));
    }
  }

  if (!may_compile) {
    spdlog::info("[req {}] link miss key {}: not linked (the caller's role is read)", request_id,
                 key.substr(0, 16));
    return done(absl::PermissionDeniedError(
        StrCat("link: this link is not cached (key ", key.substr(0, 16),
               "), and this caller's token has role read, which fetches cached results but "
               "cannot link; a compile or admin token can")));
  }
  // Gather the artifacts' LTO-IR (a miss here is the caller's to fix: Specialize first).
  wv1::Request job_request;
  auto* job = job_request.mutable_link();
  job->set_arch(arch);
  for (const auto& o : options) job->add_options(o);
  for (const auto& m : request.modules()) {
    auto* in = job->add_inputs();
    in->set_kind(m.kind() == coop::v1::LinkModule::KIND_PTX ? wv1::LinkInput::PTX
                                                            : wv1::LinkInput::LTOIR);
    in->set_name(m.name().empty() ? "kernel" : m.name());
    in->set_data(m.data());
  }
  std::vector<std::string> operator_symbols;
  for (int i = 0; i < request.artifact_keys_size(); ++i) {
    const std::string& k = request.artifact_keys(i);
    if (!IsHexKey(k)) {
      return invalid(StrCat("link: artifact_keys[", i,
                            "] must be a 64-digit lowercase hex key, "
                            "got ",
                            QuoteValue(k)));
    }
    auto artifact = LookupArtifact(k, std::nullopt);
    if (artifact && artifact->has_bitcode()) {
      return invalid(StrCat("link: artifact_keys[", i, "] ", k,
                            " is an LLVM bitcode artifact; Link links LTO-IR (give the key of the "
                            "FORMAT_LTOIR artifact, Artifact.key)"));
    }
    if (!artifact) {
      return done(absl::NotFoundError(StrCat("link: artifact_keys[", i, "] ", k,
                                             " is not in this coopd's cache; request it with "
                                             "Specialize first")));
    }
    if (artifact->arch() != arch) {
      return invalid(
          StrCat("link: artifact_keys[", i, "] was built for ", artifact->arch(), ", not ", arch));
    }
    auto* in = job->add_inputs();
    in->set_kind(wv1::LinkInput::LTOIR);
    in->set_name(StrCat("artifact ", k.substr(0, 16)));
    in->set_data(artifact->ltoir());
    // The user operators it calls, each once however many artifacts share it.
    for (const auto& op : artifact->link_inputs()) {
      if (std::find(operator_symbols.begin(), operator_symbols.end(), op.symbol()) !=
          operator_symbols.end()) {
        continue;
      }
      operator_symbols.push_back(op.symbol());
      auto* extra = job->add_inputs();
      extra->set_kind(wv1::LinkInput::LTOIR);
      extra->set_name(StrCat("operator ", op.symbol()));
      extra->set_data(op.ltoir());
    }
  }

  // As Fetch does for compiles: leaving on cancellation, a link quota'd like a compile.
  const bool quota = quotas_.enabled() && !caller.client.empty();
  SingleFlight<LinkResponse>::JoinOptions join;
  join.cancel = caller.cancel;
  if (quota) join.lead_refusal = quotas_.TakeCompile(caller.client, ClientQuotas::Clock::now());
  auto leads = std::make_shared<bool>(false);
  std::shared_ptr<CancelToken> flight;
  auto joined = links_in_flight_.Join(
      key,
      [this, leads, client = quota ? caller.client : std::string(),
       done = std::move(done)](const absl::StatusOr<LinkResponse>& r) {
        if (*leads && !client.empty() && r.ok() && r->origin() == coop::v1::ORIGIN_COMPILED) {
          quotas_.ChargeBytes(client, r->cubin().size(), ClientQuotas::Clock::now());
        }
        done(r);
      },
      std::move(join), &flight);
  if (quota && joined == SingleFlight<LinkResponse>::Joined::kWaiter) {
    quotas_.ReturnCompile(caller.client);
  }
  if (joined != SingleFlight<LinkResponse>::Joined::kLeader) return;
  *leads = true;
  spdlog::info("[req {}] linking {} module(s) + {} artifact(s) for {} key {}", request_id,
               request.modules_size(), request.artifact_keys_size(), arch, key.substr(0, 16));
  pool_->Submit(
      std::move(job_request), "link", StrCat("link for ", arch),
      [this, key, arch, options, request_id, flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          return links_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++link_failures_;
          absl::Status s = reply.status();
          // The inputs came from the caller: a failing link is theirs to fix, and the
          // message carries nvJitLink's whole log.
          if (s.code() == absl::StatusCode::kInternal) {
            s = absl::InvalidArgumentError(StrCat("link: ", s.message()));
          }
          spdlog::info("[req {}] link failed: {}", request_id, std::string(s.message()));
          return links_in_flight_.Complete(key, s, flight);
        }
        ++links_;
        LinkResponse response;
        response.set_cubin(reply->cubin());
        response.set_key(key);
        response.set_link_ms(reply->link_ms());
        for (const auto& o : options) response.add_options(o);
        CacheValue value;
        value.blob = response.cubin();
        response.clear_cubin();
        value.meta = response.SerializeAsString();
        response.set_cubin(value.blob);
        cache_->Put(key, value, EntryMeta{"link", "", arch, "", ""});
        response.set_origin(coop::v1::ORIGIN_COMPILED);
        links_in_flight_.Complete(key, response, flight);
      },
      flight);
}

namespace {

void FillRegion(const PlacedRegion& placed, const std::string& name, coop::v1::PlanRegion* out) {
  out->set_name(name);
  out->set_offset(placed.offset);
  out->set_bytes(placed.bytes);
  out->set_align(placed.align);
  out->set_padding(placed.padding);
  out->set_count(placed.count);
  out->set_stride(placed.stride);
}

// "plan: uses[2] \"scan\": ", the start of an error about one use.
std::string UseContext(int i, const std::string& name) {
  return StrCat("plan: uses[", i, "] \"", name, "\": ");
}

}  // namespace

void Service::Plan(const coop::v1::PlanRequest& request, const std::string& request_id,
                   PlanDone done, bool may_compile, const RequestScope& caller) {
  auto invalid = [&](const absl::Status& status) {
    ++invalid_;
    spdlog::info("[req {}] invalid plan request: {}", request_id, std::string(status.message()));
    done(status);
  };
  PlanInput input;
  input.base_offset = request.base_offset();
  for (const auto& r : request.reservations()) {
    input.reservations.push_back({r.name(), r.bytes(), r.align(), r.count(), 0, 0, true});
  }
  std::vector<int> spec_uses;  // indices of the uses whose size comes from their spec
  for (int i = 0; i < request.uses_size(); ++i) {
    const coop::v1::PlanUse& u = request.uses(i);
    if (u.has_spec()) spec_uses.push_back(i);
    input.uses.push_back({u.name(), u.temp_storage().bytes(), u.temp_storage().align(), u.count(),
                          u.first(), u.last(), u.has_temp_storage()});
  }
  if (absl::Status s = CheckPlanInput(input); !s.ok()) return invalid(s);
  if (spec_uses.size() > options_.limits.plan_specs) {
    return invalid(absl::InvalidArgumentError(
        StrCat("plan: at most ", options_.limits.plan_specs,
               " uses may be given by spec (--max-plan-specs, COOPD_MAX_PLAN_SPECS), got ",
               spec_uses.size())));
  }
  {
    std::vector<const PrimitiveSpec*> specs;
    for (int i : spec_uses) specs.push_back(&request.uses(i).spec());
    if (absl::Status s = CheckUserOperators(specs,
                                            [&](size_t k) {
                                              const int i = spec_uses[k];
                                              return StrCat(UseContext(i, request.uses(i).name()),
                                                            "spec: ");
                                            });
        !s.ok()) {
      return invalid(s);
    }
  }
  for (int i = 0; i < request.uses_size(); ++i) {
    if (!request.uses(i).has_spec() && !request.uses(i).has_temp_storage()) {
      return invalid(absl::InvalidArgumentError(
          StrCat(UseContext(i, request.uses(i).name()),
                 "give spec (a primitive whose temp storage coopd resolves) or "
                 "temp_storage (bytes and align)")));
    }
  }
  // One kernel, one arch: a spec for another is a mistake the layout would hide.
  for (int i : spec_uses) {
    const std::string& arch = request.uses(i).spec().arch();
    const std::string& first = request.uses(spec_uses[0]).spec().arch();
    if (arch != first) {
      return invalid(absl::InvalidArgumentError(StrCat(
          UseContext(i, request.uses(i).name()), "spec.arch must be uses[", spec_uses[0], "]'s ",
          QuoteValue(first), " (a plan is for one kernel), got ", QuoteValue(arch))));
    }
  }

  // What the plan keeps of each spec's artifact (not its LTO-IR: a plan may name 1024 specs).
  struct Resolved {
    coop::v1::TempStorage temp_storage;
    std::string key;
  };
  struct Gather {
    std::mutex mu;
    size_t remaining = 0;
    std::vector<absl::StatusOr<Resolved>> resolved;  // by position in spec_uses
  };
  auto gather = std::make_shared<Gather>();
  gather->remaining = spec_uses.size();
  gather->resolved.resize(spec_uses.size(), absl::UnknownError("not resolved"));
  auto finish = [this, request_id, input = std::move(input), spec_uses, gather,
                 done = std::move(done)]() mutable {
    std::vector<std::string> keys(input.uses.size());
    // The first failing use in request order, whatever order the answers came in.
    for (size_t k = 0; k < spec_uses.size(); ++k) {
      const int i = spec_uses[k];
      const auto& r = gather->resolved[k];
      if (!r.ok()) {
        spdlog::info("[req {}] plan: uses[{}] failed: {}", request_id, i,
                     std::string(r.status().message()));
        return done(absl::Status(r.status().code(), StrCat(UseContext(i, input.uses[i].name),
                                                           "spec: ", r.status().message())));
      }
      input.uses[i].bytes = r->temp_storage.bytes();
      input.uses[i].align = r->temp_storage.align();
      input.uses[i].sized = true;
      keys[i] = r->key;
    }
    auto layout = LayOutPlan(input);
    if (!layout.ok()) {
      ++invalid_;
      spdlog::info("[req {}] invalid plan request: {}", request_id,
                   std::string(layout.status().message()));
      return done(layout.status());
    }
    coop::v1::PlanResponse out;
    for (size_t i = 0; i < layout->reservations.size(); ++i) {
      FillRegion(layout->reservations[i], input.reservations[i].name, out.add_reservations());
    }
    for (size_t i = 0; i < layout->uses.size(); ++i) {
      auto* region = out.add_uses();
      FillRegion(layout->uses[i], input.uses[i].name, region);
      region->set_first(input.uses[i].first);
      region->set_last(input.uses[i].last);
      region->set_artifact_key(keys[i]);
    }
    out.set_dynamic_shared_bytes(layout->total);
    out.set_base_align(layout->base_align);
    out.set_reserved_bytes(layout->reserved_bytes);
    out.set_no_reuse_bytes(layout->no_reuse_bytes);
    spdlog::info("[req {}] plan: {} uses ({} by spec), {} reservations: {} bytes (no reuse: {})",
                 request_id, input.uses.size(), spec_uses.size(), input.reservations.size(),
                 layout->total, layout->no_reuse_bytes);
    done(std::move(out));
  };
  if (spec_uses.empty()) return finish();
  // Each spec as Specialize takes it, so it hits the entry the frontend's own request made;
  // identical specs join one compile.
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  for (size_t k = 0; k < spec_uses.size(); ++k) {
    Specialize(
        {request.uses(spec_uses[k]).spec()}, /*bundle=*/false, /*formats=*/{}, request_id,
        [gather, k, shared_finish](absl::StatusOr<Artifact> artifact) {
          {
            std::lock_guard<std::mutex> lock(gather->mu);
            if (artifact.ok()) {
              gather->resolved[k] = Resolved{artifact->parts(0).temp_storage(), artifact->key()};
            } else {
              gather->resolved[k] = artifact.status();
            }
            if (--gather->remaining > 0) return;
          }
          (*shared_finish)();
        },
        may_compile, {}, {}, caller);
  }
}

void Service::Prewarm(const std::vector<std::string>& archs) {
  for (const std::string& arch : archs) {
    const std::vector<std::string> options = SemanticOptions(toolchain_, arch);
    for (int w = 0; w < pool_->size(); ++w) {
      wv1::Request request;
      auto* job = request.mutable_compile();
      // The shared prefix alone: building its PCH is the whole point.
      job->set_source(kPreludeUnit);
      for (const auto& o : options) job->add_options(o);
      job->set_pch(options_.compile.pch);
      job->set_pch_heap_bytes(options_.compile.pch_heap_bytes);
      job->set_arch(arch);
      pool_->SubmitBackground(w, std::move(request), StrJoin(options, " "),
                              [w, arch](absl::StatusOr<wv1::Reply> r) {
                                if (r.ok()) {
                                  spdlog::info("worker {} pre-warmed for {} in {:.0f} ms (PCH {})",
                                               w, arch, r->compile_ms(), r->pch_status());
                                } else {
                                  spdlog::warn("worker {} pre-warm for {} failed: {}", w, arch,
                                               std::string(r.status().message()));
                                }
                              });
    }
    // clang's precompiled header is one per daemon (the workers share it): one job builds it.
    const std::vector<std::string> bitcode_archs = BitcodeArchs(toolchain_);
    if (!options_.clang_workspace.empty() &&
        std::find(bitcode_archs.begin(), bitcode_archs.end(), arch) != bitcode_archs.end()) {
      wv1::Request request;
      auto* job = request.mutable_compile();
      job->set_source(kPreludeUnit);
      for (const auto& o : ClangSemanticOptions(toolchain_, arch)) job->add_options(o);
      job->set_pch(options_.compile.pch);
      job->set_arch(arch);
      FillClangJob(job);
      pool_->SubmitBackground(0, std::move(request), "", [arch](absl::StatusOr<wv1::Reply> r) {
        if (r.ok()) {
          spdlog::info("clang pre-warmed for {} in {:.0f} ms (PCH {})", arch, r->compile_ms(),
                       r->pch_status());
        } else {
          spdlog::warn("clang pre-warm for {} failed: {}", arch, std::string(r.status().message()));
        }
      });
    }
  }
}

coop::v1::CatalogResponse Service::Catalog() const {
  coop::v1::CatalogResponse out = coopd::Catalog(toolchain_.Target());
  for (const auto& a : BitcodeArchs(toolchain_)) out.add_bitcode_archs(a);
  if (!toolchain_.clang.available()) {
    out.set_bitcode_unavailable(toolchain_.clang.UnavailableMessage());
  } else if (options_.clang_workspace.empty()) {
    out.clear_bitcode_archs();
    out.set_bitcode_unavailable(
        "bitcode: coopd could not create its clang workspace (see its log)");
  }
  return out;
}

coop::v1::Stats Service::GetStats() {
  coop::v1::Stats s;
  s.set_requests(requests_);
  s.set_invalid_requests(invalid_);
  s.set_memory_hits(memory_hits_);
  s.set_disk_hits(disk_hits_);
  s.set_misses(misses_);
  s.set_compiles(compiles_);
  s.set_compile_failures(compile_failures_);
  s.set_compile_ms_total(static_cast<double>(compile_us_total_) / 1000.0);
  {
    const RequestMemo::Counters memo = memo_.Stats();
    s.set_memo_hits(memo.hits);
    s.set_memo_misses(memo.misses);
    s.set_memo_entries(memo.entries);
    s.set_memo_evictions(memo.evictions);
  }
  s.set_digest_only_replies(digest_only_replies_);
  s.set_bytes_omitted(bytes_omitted_);
  for (const auto& t : cache_->Stats()) {
    if (t.origin == CacheOrigin::kMemory) {
      s.set_memory_entries(t.stats.entries);
      s.set_memory_bytes(t.stats.bytes);
    } else if (t.origin == CacheOrigin::kDisk) {
      s.set_disk_entries(t.stats.entries);
      s.set_disk_bytes(t.stats.bytes);
      s.set_disk_write_failures(t.stats.write_failures);
      s.set_cache_degraded(t.stats.degraded);
    }
    auto* ts = s.add_tiers();
    ts->set_name(t.name);
    ts->set_hits(t.stats.hits);
    ts->set_misses(t.stats.misses);
    ts->set_entries(t.stats.entries);
    ts->set_bytes(t.stats.bytes);
    ts->set_raw_bytes(t.stats.raw_bytes);
    ts->set_budget_bytes(t.stats.budget_bytes);
    ts->set_evictions(t.stats.evictions);
    ts->set_corruptions(t.stats.corruptions);
    ts->set_write_failures(t.stats.write_failures);
    ts->set_degraded(t.stats.degraded);
    ts->set_evicting(t.stats.evicting);
    s.set_corruptions(s.corruptions() + t.stats.corruptions);
    s.set_evictions(s.evictions() + t.stats.evictions);
  }
  s.set_uptime_s(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  FillToolchain(toolchain_, s.mutable_toolchain());
  if (toolchain_.clang.available())
    s.mutable_toolchain()->set_clang_version(toolchain_.clang.Identity());
  s.set_cache_path(options_.cache_path);
  if (disk_ == nullptr) s.set_cache_degraded(true);  // running without a disk tier

  s.set_pch_warm_compiles(pch_warm_);
  s.set_joined_requests(compiles_in_flight_.joined() + links_in_flight_.joined());
  s.set_links(links_);
  s.set_link_failures(link_failures_);
  s.set_link_hits(link_hits_);
  s.set_bundles(bundles_);
  s.set_bitcode_compiles(bitcode_compiles_);
  s.set_remote_hits(remote_hits_);
  s.set_auto_resolutions(auto_resolutions_);
  {
    const auto tables = tuning::ActiveTables();
    tuning::FillTableInfo(*tables, s.mutable_tuning_tables());
    s.set_tuning_digest(tables->digest);
  }
  if (options_.remote != nullptr) {
    const RemoteStats r = options_.remote->remote_stats();
    auto* rs = s.mutable_remote();
    rs->set_url(r.url);
    rs->set_cluster(r.cluster);
    rs->set_read_only(r.read_only);
    rs->set_healthy(r.client.healthy);
    rs->set_hits(r.hits);
    rs->set_misses(r.misses);
    rs->set_errors(r.client.errors);
    rs->set_timeouts(r.client.timeouts);
    rs->set_reconnects(r.client.reconnects);
    rs->set_corruptions(r.corruptions);
    rs->set_writes(r.writes);
    rs->set_write_failures(r.write_failures);
    rs->set_writes_skipped(r.writes_skipped);
    rs->set_writes_dropped(r.writes_dropped);
    rs->set_redirects(r.client.redirects);
    rs->set_slot_refreshes(r.client.slot_refreshes);
    rs->set_leases_acquired(r.leases_acquired);
    rs->set_lease_waits(r.lease_waits);
    rs->set_lease_wait_hits(r.lease_wait_hits);
    rs->set_lease_wait_timeouts(r.lease_wait_timeouts);
    rs->set_lease_takeovers(r.lease_takeovers);
    rs->set_leases_lost(r.leases_lost);
  }
  PoolStats pool = pool_->Stats();
  s.set_worker_restarts(pool.restarts);
  s.set_worker_crashes(pool.crashes);
  s.set_compile_timeouts(pool.timeouts);
  s.set_requests_cancelled(compiles_in_flight_.left() + links_in_flight_.left());
  s.set_compiles_cancelled(pool.cancelled);
  s.set_quota_compile_refusals(quotas_.refused_compiles());
  s.set_quota_bytes_refusals(quotas_.refused_bytes());
  s.set_queue_depth(pool.queue_depth);
  s.set_workers(static_cast<uint32_t>(pool.workers));
  s.set_workers_busy(static_cast<uint32_t>(pool.busy));
  for (const auto& w : pool.info) {
    auto* ws = s.add_worker_status();
    ws->set_pid(w.pid);
    ws->set_busy(w.busy);
    ws->set_jobs(w.jobs);
    ws->set_header_set(w.affinity);
  }
  std::vector<double> times;
  {
    std::lock_guard<std::mutex> lock(times_mu_);
    times.assign(recent_compile_ms_.begin(), recent_compile_ms_.end());
  }
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    auto pct = [&](double p) {
      size_t i = static_cast<size_t>(p * static_cast<double>(times.size() - 1) + 0.5);
      return times[std::min(i, times.size() - 1)];
    };
    s.set_compile_ms_p50(pct(0.50));
    s.set_compile_ms_p90(pct(0.90));
    s.set_compile_ms_p99(pct(0.99));
  }
  return s;
}

coop::v1::Stats Service::ResetStats() {
  coop::v1::Stats before = GetStats();
  for (auto* c : {&requests_, &invalid_, &memory_hits_, &disk_hits_, &misses_, &compiles_,
                  &compile_failures_, &pch_warm_, &bitcode_compiles_, &links_, &link_failures_,
                  &link_hits_, &bundles_, &compile_us_total_, &remote_hits_, &digest_only_replies_,
                  &bytes_omitted_, &auto_resolutions_}) {
    *c = 0;
  }
  memo_.ZeroStats();
  {
    std::lock_guard<std::mutex> lock(times_mu_);
    recent_compile_ms_.clear();
  }
  compiles_in_flight_.ZeroStats();
  links_in_flight_.ZeroStats();
  quotas_.ZeroStats();
  cache_->ZeroStats();
  pool_->ZeroStats();
  spdlog::info("stats zeroed");
  return before;
}

absl::StatusOr<coop::v1::ExplainResponse> Service::Explain(const PrimitiveSpec& request_spec,
                                                           const std::vector<int>& formats) {
  std::vector<coop::v1::AutoExplanation> autos;
  auto specs = Validate({request_spec}, /*bundle=*/false, &autos);
  if (!specs.ok()) return specs.status();
  auto which = CheckFormats(formats, *specs, /*bundle=*/false);
  if (!which.ok()) return which.status();
  if (which->ltoir && which->bitcode) {
    return absl::InvalidArgumentError(
        "explain: formats must name one format (each has its own key), got both");
  }
  const RenderedUnit unit = Render(*specs);
  const std::string& arch = (*specs)[0].arch();
  const KeyComponents key = which->bitcode
                                ? ComputeBitcodeKey(BundleEncoding(*specs), unit.source,
                                                    ClangSemanticOptions(toolchain_, arch),
                                                    ClangAssembleOptions(arch), toolchain_)
                                : ComputeKey(BundleEncoding(*specs), unit.source,
                                             SemanticOptions(toolchain_, arch), toolchain_);
  coop::v1::ExplainResponse out;
  out.set_key(key.key);
  const coop::v1::KeyComponents mine = key.ToProto();
  *out.mutable_components() = mine.components();
  // Peek without counting a hit or promoting: the memory tier first, then the disk index.
  bool cached = false;
  if (disk_ != nullptr) {
    auto stored = disk_->FindByRequest(key.RequestDigest());
    if (!stored.ok()) return stored.status();
    for (const auto& other : *stored) {
      if (other.key == key.key) {
        cached = true;
        continue;
      }
      coop::v1::KeyComponents theirs;
      theirs.ParseFromString(other.components);
      auto* o = out.add_others();
      o->set_key(other.key);
      o->set_created_at(other.created_at);
      for (const auto& name : DifferingComponents(mine, theirs)) o->add_differing(name);
    }
  }
  out.set_cached(cached);
  if (!autos[0].choice().requested().empty()) *out.mutable_auto_choice() = std::move(autos[0]);
  return out;
}

absl::StatusOr<coop::v1::ListEntriesResponse> Service::ListEntries(
    const coop::v1::ListEntriesRequest& request) {
  if (disk_ == nullptr) return absl::FailedPreconditionError("ls: coopd runs without a disk cache");
  CacheFilter filter{request.filter().family(), request.filter().dtype(), request.filter().arch()};
  auto entries = disk_->List(filter, request.limit(), request.with_specs());
  if (!entries.ok()) return entries.status();
  coop::v1::ListEntriesResponse out;
  for (const auto& e : *entries) {
    auto* pe = out.add_entries();
    pe->set_key(e.key);
    pe->set_family(e.meta.family);
    pe->set_dtype(e.meta.dtype);
    pe->set_arch(e.meta.arch);
    pe->set_raw_bytes(e.raw_bytes);
    pe->set_stored_bytes(e.stored_bytes);
    pe->set_created_at(e.created_at);
    pe->set_last_access(e.last_access);
    Artifact artifact;  // a link result's record holds a LinkResponse instead
    if (request.with_specs() && e.meta.family != "link" && artifact.ParseFromString(e.value_meta)) {
      for (const auto& part : artifact.parts()) *pe->add_specs() = part.spec();
      pe->set_format(artifact.has_bitcode() ? coop::v1::FORMAT_BITCODE : coop::v1::FORMAT_LTOIR);
    }
  }
  return out;
}

absl::StatusOr<coop::v1::PurgeResponse> Service::Purge(const coop::v1::PurgeRequest& request) {
  CacheFilter filter{request.filter().family(), request.filter().dtype(), request.filter().arch()};
  if (filter.empty() && !request.all()) {
    return absl::InvalidArgumentError(
        "purge: give a filter (family, dtype, arch) or set all to purge everything");
  }
  auto removed = cache_->Purge(filter);
  if (!removed.ok()) {
    spdlog::warn("purge (family \"{}\", dtype \"{}\", arch \"{}\") failed: {}", filter.family,
                 filter.dtype, filter.arch, std::string(removed.status().message()));
    return removed.status();
  }
  coop::v1::PurgeResponse out;
  out.set_entries_removed(*removed);
  spdlog::info("purged {} entries (family \"{}\", dtype \"{}\", arch \"{}\")",
               out.entries_removed(), filter.family, filter.dtype, filter.arch);
  return out;
}

absl::StatusOr<coop::v1::VerifyResponse> Service::Verify() {
  if (disk_ == nullptr) {
    return absl::FailedPreconditionError("verify: coopd runs without a disk cache");
  }
  auto report = disk_->Verify();
  if (!report.ok()) {
    spdlog::warn("verify failed: {}", std::string(report.status().message()));
    return report.status();
  }
  // A bad disk record may have been promoted into memory before it went bad on disk: drop the
  // memory copies of the removed keys too (cheapest: drop the whole memory tier if any).
  if (report->bad_removed > 0) {
    if (CacheTier* memory = cache_->tier(CacheOrigin::kMemory)) {
      memory->Purge(CacheFilter{}).IgnoreError();
    }
  }
  coop::v1::VerifyResponse out;
  out.set_entries_checked(report->entries_checked);
  out.set_blobs_checked(report->blobs_checked);
  out.set_bad_removed(report->bad_removed);
  for (const auto& k : report->bad_keys) out.add_bad_keys(k);
  out.set_totals_corrected(report->totals_corrected);
  spdlog::info("verify: {} entries and {} blobs checked, {} bad entries removed",
               out.entries_checked(), out.blobs_checked(), out.bad_removed());
  return out;
}

absl::StatusOr<coop::v1::VacuumResponse> Service::Vacuum() {
  if (disk_ == nullptr) {
    return absl::FailedPreconditionError("vacuum: coopd runs without a disk cache");
  }
  auto report = disk_->Vacuum();
  if (!report.ok()) {
    spdlog::warn("vacuum failed: {}", std::string(report.status().message()));
    return report.status();
  }
  spdlog::info("vacuum: database file {} -> {} bytes", report->file_bytes_before,
               report->file_bytes_after);
  coop::v1::VacuumResponse out;
  out.set_file_bytes_before(report->file_bytes_before);
  out.set_file_bytes_after(report->file_bytes_after);
  return out;
}

}  // namespace coopd
