// service.h: coopd's request logic, independent of gRPC.
//
// Specialize() walks its stages, one file each, in this order (specialize.cc reads top down):
//   resolve.cc  validate -> canonical specs ("auto" resolved) -> formats checked
//   (specialize.cc: each distinct user operator fetched or compiled first, as a link input)
//   key.cc      render one unit -> its key (and the request memo's key)
//   fetch.cc    tiered cache -> single-flight -> farm lease (and the client's compile quota)
//   compile.cc  compile in a worker (NVRTC + layout query; clang for bitcode) -> store
//   reply.cc    digests -> the bytes the caller holds left out -> artifact
// A request for LLVM bitcode (FORMAT_BITCODE) does the same under the bitcode key with clang,
// next to the LTO-IR (cached or compiled at the same time on another worker), whose layouts the
// bitcode's must equal; each format is a cache entry of its own, and a request for both gets one
// reply. A memoized request whose artifacts are in memory is answered on the gRPC thread
// (SpecializeFromMemory, reply.cc).
// Link() (link.cc): fetch artifacts by key -> key over every input -> cache -> single-flight ->
// nvJitLink in a worker -> store -> cubin.
// Plan() (plan.cc): check the request -> resolve each spec use's temp storage through
// Specialize (a cache hit once the frontend has specialized it) -> lay out (plan/planner.h).
// Stats, Explain and the Catalog: stats.cc; ListEntries, Purge, Verify, Vacuum: maintenance.cc;
// construction and pre-warming: service.cc. Helpers shared by these files: service_internal.h.
//
// Errors are absl::Status values with the codes of BRIEF.md section 5; the gRPC layer converts
// them in one place. Thread-safe. Specialize() and Link() do cache I/O on the calling thread
// (call them from an executor, not a gRPC thread) and deliver their result through `done`,
// exactly once, possibly on a worker-pool thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "prometheus/histogram.h"
#include "server/cache/cache.h"
#include "server/cache/cache_key.h"
#include "server/cache/remote_cache.h"
#include "server/cache/sqlite_cache.h"
#include "server/catalog/tuning.h"
#include "server/engine/compiler.h"
#include "server/engine/worker_pool.h"
#include "server/service/client_quotas.h"
#include "server/service/memory_reply.h"
#include "server/service/request_memo.h"
#include "server/toolchain/toolchain.h"
#include "server/util/cancel_token.h"
#include "server/util/single_flight.h"

namespace coopd {

// Per-request limits (daemon flags; docs/security.md). Requests over one get INVALID_ARGUMENT
// naming the field, the limit and the flag: the same request never passes on this daemon.
struct RequestLimits {
  size_t op_source_bytes = size_t{1} << 20;  // each user operator's source (--max-op-source-kb)
  size_t bundle_specs = 64;                  // SpecializeBundle's specs (--max-bundle)
  size_t plan_specs = 1024;                  // a Plan's uses given by spec (--max-plan-specs)
  size_t user_ops = 16;  // distinct user operators in one request (--max-user-ops)
};

struct ServiceOptions {
  RequestLimits limits;
  CompileSettings compile;  // PCH on/off and heap size, sent to the workers
  std::string cache_path;   // reported in stats
  // The daemon's ClangWorkspace (engine/bitcode.h); empty when it has none (no clang).
  std::string clang_workspace;
  // The farm tier (also in the TieredCache), for its distributed single-flight and stats; null
  // without --remote-cache. Must outlive the service's requests (it lives in the cache).
  RemoteCache* remote = nullptr;
  // A file that remembers the archs requests compiled for (one per line, most recent first), so
  // that the next start pre-warms them by default (ReadPrewarmHistory); empty: none.
  std::string prewarm_history;
  // Per-client quotas on compiles and cache bytes (client_quotas.h); off by default.
  ClientQuotaOptions quotas;
  // Its contents when the daemon started (ReadPrewarmHistory of it, read once by the daemon,
  // which also pre-warms them): where the service's updates of the file start from.
  std::vector<std::string> prewarm_history_archs;
};

// The archs `path` remembers (at most kPrewarmHistoryArchs, most recent first); none when it is
// missing or unreadable. Lines that are not arch names ("sm_90", "sm_90a") are skipped.
inline constexpr size_t kPrewarmHistoryArchs = 4;
std::vector<std::string> ReadPrewarmHistory(const std::string& path);

// Who a request is for, besides its role. The gRPC edge fills it in; a default one is never
// cancelled and spends no quota.
struct RequestScope {
  // Cancelled when the caller stops waiting (it cancelled, or its deadline passed): the request
  // then gets the token's status at once, leaves the compiles it joined, and a compile that no
  // other request waits for is dropped from the queue or stopped (single_flight.h,
  // worker_pool.h). Null: never.
  std::shared_ptr<CancelToken> cancel;
  // The client the quotas count against (ClientQuotas); empty: none.
  std::string client;
};

class Service {
 public:
  using ArtifactDone = std::function<void(absl::StatusOr<coop::v1::Artifact>)>;
  using LinkDone = std::function<void(absl::StatusOr<coop::v1::LinkResponse>)>;
  using PlanDone = std::function<void(absl::StatusOr<coop::v1::PlanResponse>)>;

  // `pool` must outlive the service. `disk` is the cache's disk tier (for maintenance), or
  // nullptr when coopd runs without one.
  // `toolchains`: one per CCCL (toolchain.h ProbeToolchains), the default first; not empty.
  Service(std::vector<Toolchain> toolchains, std::unique_ptr<TieredCache> cache, SqliteCache* disk,
          WorkerPool* pool, ServiceOptions options);
  Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, SqliteCache* disk,
          WorkerPool* pool, ServiceOptions options);

  // One spec (`bundle` false: errors are prefixed by the family) or a bundle (errors are
  // prefixed by "specs[i]: "). `formats` are the request's coop::v1::Format values (empty: LTO-IR);
  // bitcode without a usable clang is FAILED_PRECONDITION. `request_id` tags log lines.
  // Without `may_compile` (a caller whose role is `read`, rpc/access.h) only cached entries
  // are served: a miss, of the primitive or of a source operator, is PERMISSION_DENIED, and
  // nothing is compiled or joined. Link and Plan take it the same way.
  //
  // `have` (SpecializeRequest.have): the artifacts the caller holds. When every format of the
  // reply is among them with the same key and digest, the reply leaves the bytes out
  // (Artifact.bytes_omitted; OmitHeldBytes). Every reply carries its bytes' digests.
  //
  // A repeated request (the same specs and formats, byte for byte, no user operator) takes its
  // keys from the request memo (request_memo.h) and goes straight to the cache; on a miss there
  // it takes the whole path.
  //
  // What SpecializeFromMemory learnt of the memo, when it could not answer: the request's memo
  // key (computed once per request) and its entry, or that the memo lacks it. Specialize goes on
  // from there instead of looking the request up again, so each request counts one memo hit or
  // one memo miss.
  struct MemoProbe {
    std::string key;                                  // empty: the memo was not consulted
    std::shared_ptr<const RequestMemo::Entry> entry;  // null (with a key): a miss, not counted
  };
  void Specialize(const std::vector<coop::v1::PrimitiveSpec>& specs, bool bundle,
                  const std::vector<int>& formats, const std::string& request_id, ArtifactDone done,
                  bool may_compile = true, const std::vector<coop::v1::HeldArtifact>& have = {},
                  MemoProbe probe = {}, const RequestScope& caller = {});
  // A memory hit as SpecializeFromMemory gives it: the encoded reply (memory_reply.h), whose
  // pieces are `head`, the LTO-IR (the blob of `ltoir`), `bitcode_framing` and the bitcode (the
  // blob of `bitcode`). `ltoir` and `bitcode` are the memory tier's shared values, null where
  // the reply carries no such bytes (not asked for, or left out: a digest-only reply is `head`
  // alone). The gRPC edge sends the blobs without copying (server/rpc/reply_writer.h).
  struct MemoryHit {
    std::shared_ptr<const MemoryReply> reply;  // owns `head` and `bitcode_framing`
    std::string_view head, bitcode_framing;
    std::shared_ptr<const CacheValue> ltoir, bitcode;
  };
  // Specialize's fastest path, for the gRPC thread itself: a memoized request whose artifacts
  // are all in the memory tier is answered here, with no I/O, no compile and no waiting (the
  // reply as Specialize would give it, counted the same, its large bytes shared, not copied);
  // nullopt when it is not (call Specialize then, from an executor, handing it `probe`, which
  // this fills whenever it consulted the memo). The reply is built once per memo entry and
  // cached value and kept with the memo entry (MemoryReply): a repeat parses, merges and
  // serializes nothing.
  std::optional<MemoryHit> SpecializeFromMemory(const std::vector<coop::v1::PrimitiveSpec>& specs,
                                                bool bundle, const std::vector<int>& formats,
                                                const std::string& request_id,
                                                const std::vector<coop::v1::HeldArtifact>& have,
                                                MemoProbe* probe = nullptr);
  void Link(const coop::v1::LinkRequest& request, const std::string& request_id, LinkDone done,
            bool may_compile = true, const RequestScope& caller = {});
  // Errors name the use or reservation ("plan: uses[2] \"scan\": ..."); a spec's error keeps
  // its code (a compile that times out is still DEADLINE_EXCEEDED).
  void Plan(const coop::v1::PlanRequest& request, const std::string& request_id, PlanDone done,
            bool may_compile = true, const RequestScope& caller = {});
  coop::v1::Stats GetStats();
  // Stats as they were, then every counter zeroed.
  coop::v1::Stats ResetStats();

  // Cache maintenance. These run on the calling thread (an executor thread).
  // The key of one format (`formats` names at most one; empty: LTO-IR).
  absl::StatusOr<coop::v1::ExplainResponse> Explain(const coop::v1::PrimitiveSpec& spec,
                                                    const std::vector<int>& formats = {});
  absl::StatusOr<coop::v1::ListEntriesResponse> ListEntries(
      const coop::v1::ListEntriesRequest& request);
  absl::StatusOr<coop::v1::PurgeResponse> Purge(const coop::v1::PurgeRequest& request);
  absl::StatusOr<coop::v1::VerifyResponse> Verify();
  absl::StatusOr<coop::v1::VacuumResponse> Vacuum();

  // Shutdown, first step: stops disk eviction and interrupts long maintenance (which then
  // returns UNAVAILABLE); requests waiting for another replica's compile compile here. Requests
  // still get answers.
  void BeginShutdown() {
    if (disk_ != nullptr) disk_->BeginShutdown();
    if (options_.remote != nullptr) options_.remote->AbandonWaits();
  }

  // Queues a background PCH build for each arch on every worker (never delays requests).
  void Prewarm(const std::vector<std::string>& archs);
  // Probes the CCCLs of `which` (indices into toolchains()) for `arch` in the background
  // (cccl_probe.cc): each family's specs (catalog/probe_specs.h) compiled on it, a background
  // job per family spread over the workers. A family that fails is refused on that CCCL with the
  // compiler's first error; Catalog and Stats show what was found (CcclInfo.probe).
  void ProbeCccls(const std::vector<size_t>& which, const std::string& arch);

  // The default CCCL's toolchain (what every CCCL shares: NVRTC, nvJitLink, clang, the CUDA
  // headers, is the same in each).
  const Toolchain& toolchain() const { return toolchain_; }
  const std::vector<Toolchain>& toolchains() const { return toolchains_; }
  // The CCCL a request names (PrimitiveSpec.cccl, CatalogRequest.cccl): "" is the default; else
  // a name, or a version or version prefix ("3.5") that exactly one CCCL has. INVALID_ARGUMENT
  // naming `field` and listing the CCCLs otherwise.
  absl::StatusOr<const Toolchain*> FindCccl(const std::string& requested,
                                            const std::string& field) const;
  // The CCCL of a canonical spec (its `cccl` is a configured name, set by Validate).
  const Toolchain& ToolchainOf(const coop::v1::PrimitiveSpec& canonical) const;
  // Every CCCL as Catalog and Stats describe it.
  void DescribeCcclsTo(google::protobuf::RepeatedPtrField<coop::v1::CcclInfo>* out) const;
  // Whether per-client quotas are on (the edge then names each caller's client in RequestScope).
  bool quotas_enabled() const { return quotas_.enabled(); }

  // Hook for algorithm resolution (`algorithm: "auto"` resolved from a tuning table before the
  // key is computed): a string that changes whenever resolution may give another answer, e.g.
  // the tuning table's digest. It is part of every request memo key, so a new table never
  // serves keys resolved by the old one. It is the digest of the tuning tables in use
  // (tuning::ActiveTableDigest(), docs/tuning.md).
  std::string ResolutionEpoch() const { return tuning::ActiveTableDigest(); }

  // Latency histograms for the /metrics endpoint (server/metrics/); ResetStats leaves them.
  // Compile time: each successful compile's NVRTC or clang time as the worker measured it.
  const prometheus::Histogram& compile_seconds() const { return compile_seconds_; }
  // Hit latency: a cache lookup that hit `tier`, until its artifact is decoded and checked (a
  // memory hit served from its memo entry's MemoryReply: the lookup alone).
  const prometheus::Histogram& hit_seconds(CacheOrigin tier) const {
    return hit_seconds_[static_cast<int>(tier)];
  }
  // The catalogue, with the archs bitcode requests may name (or why there are none).
  // For the CCCL `cccl` names (FindCccl; "" the default): INVALID_ARGUMENT for an unknown one.
  absl::StatusOr<coop::v1::CatalogResponse> Catalog(const std::string& cccl = "") const;

 private:
  // The formats a request asks for (CheckFormats).
  struct Formats {
    bool ltoir = false;
    bool bitcode = false;
  };

  // --- specialize.cc: the walk, and the user operators it resolves first.
  // A distinct user operator of a request, before it is compiled (source) or taken (LTO-IR).
  struct PendingOperator {
    coop::v1::UserOperator request;   // with its source or LTO-IR
    coop::v1::UserOperator resolved;  // from Canonicalize()
    std::string symbol;
    std::string arch;
    std::string context;            // error prefix: "block_reduce" or "specs[2]: block_scan"
    const Toolchain* tc = nullptr;  // the specs' CCCL (the operator compiles against it too)
  };
  using OperatorsDone =
      std::function<void(absl::StatusOr<std::vector<coop::v1::ArtifactLinkInput>>)>;
  // Delivers one link input per operator, in order (with its bitcode too when `bitcode`), or the
  // first error.
  void ResolveOperators(std::vector<PendingOperator> ops, bool bitcode,
                        const std::string& request_id, bool may_compile, OperatorsDone done,
                        const RequestScope& caller);
  // The rest of Specialize, once the operators' LTO-IR is at hand.
  void SpecializeResolved(const std::vector<coop::v1::PrimitiveSpec>& specs,
                          const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                          const Formats& formats, const std::string& request_id, bool may_compile,
                          ArtifactDone done, const RequestScope& caller,
                          const std::string& memo_key = "",
                          const std::vector<coop::v1::AlgorithmChoice>& choices = {});

  // --- resolve.cc: validate, canonicalize, auto; the request limits; the formats.
  // Canonical specs ("auto" resolved). With `autos`, it gets one explanation per spec (the
  // choice's `requested` is empty for a spec that did not ask for "auto").
  absl::StatusOr<std::vector<coop::v1::PrimitiveSpec>> Validate(
      const std::vector<coop::v1::PrimitiveSpec>& specs, bool bundle,
      std::vector<coop::v1::AutoExplanation>* autos = nullptr);
  // The request limits that concern user operators: each source's size, and how many distinct
  // operators `specs` hold (`where(i)` prefixes errors about specs[i]).
  absl::Status CheckUserOperators(const std::vector<const coop::v1::PrimitiveSpec*>& specs,
                                  const std::function<std::string(size_t)>& where) const;
  // The request's formats, checked (and, for bitcode, clang, the archs and the operators).
  absl::StatusOr<Formats> CheckFormats(const std::vector<int>& formats,
                                       const std::vector<coop::v1::PrimitiveSpec>& specs,
                                       bool bundle) const;

  // --- key.cc: a compile's key, and the request memo's key.
  // What one backend's compile of a unit is keyed by: its semantic options and the key over the
  // encoding, the source, those options and the toolchain.
  struct Keyed {
    std::vector<std::string> options;
    KeyComponents key;
  };
  // `encoding` is the canonical request (BundleEncoding, OperatorEncoding), `source` the unit;
  // FORMAT_BITCODE keys clang's compile, anything else NVRTC's.
  Keyed KeyFor(const Toolchain& tc, const std::string& encoding, const std::string& source,
               const std::string& arch, coop::v1::Format format) const;
  // The request memo's key for a request (request_memo.h): MemoEpoch(), then the request's bytes.
  std::string MemoKey(const std::vector<coop::v1::PrimitiveSpec>& specs, bool bundle,
                      const std::vector<int>& formats) const;
  // Everything besides the request that its keys depend on: the toolchain's identity (fixed for
  // this service's life) and ResolutionEpoch().
  std::string MemoEpoch() const;

  // --- fetch.cc: tiers, single-flight, farm lease, quotas.
  // The artifact stored under `key`, counted as a hit; nullopt when absent, damaged, or (with
  // `expected`) of the other format.
  std::optional<coop::v1::Artifact> LookupArtifact(const std::string& key,
                                                   std::optional<coop::v1::Format> expected);
  // Counts a hit from `tier` (Stats' memory, disk or remote hits; the hit latency histogram).
  void CountHit(CacheOrigin tier, double lookup_seconds);
  // The artifact a cached value holds, as a hit from `origin` serves it (its digests set, its
  // large bytes copied in only `with_blob`); nullopt (logged) when the value does not parse,
  // names another key, or holds another format than `expected`.
  static std::optional<coop::v1::Artifact> ArtifactFromValue(
      const CacheValue& value, const std::string& key, std::optional<coop::v1::Format> expected,
      coop::v1::Origin origin, bool with_blob);
  // Serves `key` from the cache, else joins its compile in flight, else (when the caller's
  // compile quota allows) runs `start` with the flight's token, which the compile must honour
  // and hand to compiles_in_flight_.Complete for `key`. Without `may_compile`, a miss is
  // PERMISSION_DENIED; over its quota, RESOURCE_EXHAUSTED. The caller's cancellation makes it
  // leave the flight (single_flight.h).
  using Start = std::function<void(const std::shared_ptr<CancelToken>& flight)>;
  void Fetch(const std::string& key, coop::v1::Format format, const std::string& description,
             const std::string& request_id, bool may_compile, ArtifactDone done, const Start& start,
             const RequestScope& caller);

  // --- compile.cc: NVRTC and clang jobs.
  void FillClangJob(coop::worker::v1::CompileJob* job) const;
  // A primitive unit's compile job for either backend: source, options, PCH, arch, layouts.
  coop::worker::v1::Request PrimitiveJob(const std::vector<coop::v1::PrimitiveSpec>& specs,
                                         const RenderedUnit& unit,
                                         const std::vector<std::string>& options) const;
  void StartOperatorCompile(const PendingOperator& op, const std::string& unit,
                            const std::vector<std::string>& options, const KeyComponents& key,
                            const std::string& request_id,
                            const std::shared_ptr<CancelToken>& flight);
  void StartCompile(const std::vector<coop::v1::PrimitiveSpec>& specs, const RenderedUnit& unit,
                    const std::vector<std::string>& options, const KeyComponents& key,
                    const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                    const std::string& request_id, const std::shared_ptr<CancelToken>& flight);
  // Leads the bitcode key's flight: clang in one worker while `ltoir` delivers the reference
  // artifact (waiting as the flight, so abandoning the flight leaves the LTO-IR's too), then the
  // layout check, the store, and the flight's completion.
  void StartBitcodeCompile(const std::vector<coop::v1::PrimitiveSpec>& specs,
                           const RenderedUnit& unit, const std::vector<std::string>& options,
                           const KeyComponents& key,
                           const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                           const std::string& request_id,
                           const std::function<void(ArtifactDone, const RequestScope&)>& ltoir,
                           const std::shared_ptr<CancelToken>& flight);
  void RecordCompileTime(double ms);

  // --- reply.cc: digests, held artifacts, choices, memoized and memory replies.
  // A memory hit's reply for `entry`, made from the memory tier's values (null for a format the
  // entry does not name); null when a value is not its artifact.
  std::shared_ptr<const MemoryReply> BuildMemoryReply(
      const RequestMemo::Entry& entry, const std::shared_ptr<const CacheValue>& ltoir,
      const std::shared_ptr<const CacheValue>& bitcode) const;
  // Serves a memoized request from the cache alone; false (nothing delivered) when an artifact
  // is not cached as it was.
  bool ServeMemoized(const RequestMemo::Entry& entry, const std::string& request_id,
                     ArtifactDone& done);
  // Sets the digests of the bytes `a` carries where they are not set yet, and clears the LTO-IR
  // digest of an artifact that carries no LTO-IR.
  static void SetDigests(coop::v1::Artifact* a);
  // Puts each spec's algorithm "auto" choice into its part (and, for one spec, the artifact);
  // specs whose `requested` is empty get none.
  static void AttachChoices(const std::vector<coop::v1::AlgorithmChoice>& choices,
                            coop::v1::Artifact* a);
  // Leaves out the bytes of `a` when `have` holds every format it carries (same key and
  // digest), and counts the reply. True when it left them out.
  bool OmitHeldBytes(coop::v1::Artifact* a, const std::vector<coop::v1::HeldArtifact>& have);
  // What a caller must hold for a reply of `a` to leave its bytes out (one per format).
  static std::vector<HeldNeed> HeldNeeds(const coop::v1::Artifact& a);
  // A digest-only reply's artifact: clears the bytes (and, with `keyed_metadata`, what the key
  // fixes: the entries, specs and toolchain, for a caller that keeps the whole artifact) and
  // sets bytes_omitted. Returns the bytes it left out.
  static uint64_t StripHeld(coop::v1::Artifact* a, bool keyed_metadata);

  const std::vector<Toolchain> toolchains_;
  const Toolchain& toolchain_ = toolchains_.front();  // the default
  // What the probe compiles found on each CCCL (by index in toolchains_; ProbeCccls).
  struct CcclProbe {
    std::string state = "off";  // "pending", "ok", "failed", "off"
    // Families the CCCL's headers lack ("family: why"; Canonicalize refuses their specs).
    std::vector<std::string> refused;
    // Families whose probe compile failed, with the compiler's first error (CheckProbed).
    std::vector<std::pair<std::string, std::string>> failed;
  };
  CcclProbe ProbeOf(size_t index) const;
  // FAILED_PRECONDITION naming the CCCL and the compiler's error when its probe found that the
  // spec's family does not compile on it.
  absl::Status CheckProbed(const Toolchain& tc, const coop::v1::PrimitiveSpec& spec) const;
  mutable std::mutex probe_mu_;
  std::vector<CcclProbe> probes_ ABSL_GUARDED_BY(probe_mu_);
  const std::unique_ptr<TieredCache> cache_;
  SqliteCache* const disk_;
  WorkerPool* const pool_;
  const ServiceOptions options_;
  ClientQuotas quotas_{options_.quotas};
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  SingleFlight<coop::v1::Artifact> compiles_in_flight_;
  SingleFlight<coop::v1::LinkResponse> links_in_flight_;
  RequestMemo memo_;
  std::string toolchain_identity_;  // MemoEpoch()'s toolchain part, computed once
  std::atomic<uint64_t> digest_only_replies_{0}, bytes_omitted_{0};

  std::atomic<uint64_t> requests_{0}, invalid_{0}, memory_hits_{0}, disk_hits_{0}, misses_{0},
      compiles_{0}, compile_failures_{0}, pch_warm_{0}, links_{0}, link_failures_{0}, link_hits_{0},
      bundles_{0}, bitcode_compiles_{0}, remote_hits_{0}, auto_resolutions_{0};
  std::atomic<uint64_t> compile_us_total_{0};
  std::mutex times_mu_;
  // Remembers `arch` at the front of options_.prewarm_history (rewritten only on a change).
  void RememberArch(const std::string& arch);
  std::mutex history_mu_;
  std::vector<std::string> history_;  // the file's contents, most recent first
  std::deque<double> recent_compile_ms_ ABSL_GUARDED_BY(times_mu_);  // last 1024
  prometheus::Histogram compile_seconds_{{0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 4, 8, 16, 32, 64, 128}};
  prometheus::Histogram hit_seconds_[3] = {  // by CacheOrigin
      prometheus::Histogram{kHitBuckets}, prometheus::Histogram{kHitBuckets},
      prometheus::Histogram{kHitBuckets}};
  static inline const prometheus::Histogram::BucketBoundaries kHitBuckets = {
      1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 1e-1};
};

}  // namespace coopd
