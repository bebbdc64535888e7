#include "server/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/cache_key.h"
#include "server/render.h"
#include "server/sha256.h"
#include "server/spec.h"
#include "server/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::LinkResponse;
using coop::v1::PrimitiveSpec;
namespace wv1 = coop::worker::v1;

namespace {

constexpr size_t kMaxBundle = 64;
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

bool IsHexKey(const std::string& k) {
  return k.size() == 64 && std::all_of(k.begin(), k.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

Service::Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, WorkerPool* pool,
                 ServiceOptions options)
    : toolchain_(std::move(toolchain)),
      cache_(std::move(cache)),
      pool_(pool),
      options_(std::move(options)) {}

absl::StatusOr<std::vector<PrimitiveSpec>> Service::Validate(const std::vector<PrimitiveSpec>& in,
                                                             bool bundle) {
  if (in.empty() || in.size() > kMaxBundle) {
    return absl::InvalidArgumentError(
        StrCat("bundle: specs must hold 1..", kMaxBundle, " specs, got ", in.size()));
  }
  std::vector<PrimitiveSpec> out;
  std::vector<std::string> encodings;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string where = bundle ? StrCat("specs[", i, "]: ") : "";
    auto spec = Canonicalize(in[i], toolchain_.Target());
    if (!spec.ok()) return absl::InvalidArgumentError(StrCat(where, spec.status().message()));
    if (i > 0 && spec->arch() != out[0].arch()) {
      return absl::InvalidArgumentError(
          StrCat(where, "arch must match specs[0]'s \"", out[0].arch(),
                 "\" (a bundle is one LTO-IR for one arch), got \"", spec->arch(), "\""));
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

std::optional<Artifact> Service::LookupArtifact(const std::string& key) {
  auto hit = cache_->Get(key);
  if (!hit) return std::nullopt;
  Artifact artifact;
  // A value that does not parse, or names another key, is never served: recompile instead.
  if (!artifact.ParseFromString(hit->value) || artifact.key() != key) {
    spdlog::warn("cache value for {} is not its artifact; ignoring it", key.substr(0, 16));
    return std::nullopt;
  }
  switch (hit->origin) {
    case CacheOrigin::kMemory:
      ++memory_hits_;
      artifact.set_origin(coop::v1::ORIGIN_MEMORY);
      break;
    case CacheOrigin::kDisk:
      ++disk_hits_;
      artifact.set_origin(coop::v1::ORIGIN_DISK);
      break;
    case CacheOrigin::kRemote:
      artifact.set_origin(coop::v1::ORIGIN_REMOTE);
      break;
  }
  return artifact;
}

void Service::Specialize(const std::vector<PrimitiveSpec>& request_specs, bool bundle,
                         uint64_t request_id, ArtifactDone done) {
  ++requests_;
  if (bundle) ++bundles_;
  auto specs = Validate(request_specs, bundle);
  if (!specs.ok()) {
    ++invalid_;
    spdlog::info("[req {}] invalid request: {}", request_id, std::string(specs.status().message()));
    return done(specs.status());
  }
  const RenderedUnit unit = Render(*specs);
  const std::vector<std::string> options =
      SemanticOptions(toolchain_, (*specs)[0].arch(), unit.needs_cuda_include);
  const KeyComponents key = ComputeKey(BundleEncoding(*specs), unit.source, options, toolchain_);

  if (auto artifact = LookupArtifact(key.key)) {
    spdlog::info("[req {}] {} hit ({}) key {}", request_id, Describe(*specs),
                 artifact->origin() == coop::v1::ORIGIN_MEMORY ? "memory" : "disk",
                 key.key.substr(0, 16));
    return done(std::move(*artifact));
  }
  ++misses_;
  auto joined = compiles_in_flight_.Join(
      key.key, [done = std::move(done)](const absl::StatusOr<Artifact>& result) { done(result); },
      [&]() { return LookupArtifact(key.key); });
  if (joined == SingleFlight<Artifact>::Joined::kWaiter) {
    spdlog::info("[req {}] joined the compile in flight for key {}", request_id,
                 key.key.substr(0, 16));
  } else if (joined == SingleFlight<Artifact>::Joined::kLeader) {
    StartCompile(*specs, unit, options, key.key, request_id);
  }
}

void Service::StartCompile(const std::vector<PrimitiveSpec>& specs, const RenderedUnit& unit,
                           const std::vector<std::string>& options, const std::string& key,
                           uint64_t request_id) {
  wv1::Request request;
  auto* job = request.mutable_compile();
  job->set_source(unit.source);
  for (const auto& o : options) job->add_options(o);
  job->set_pch(options_.compile.pch);
  job->set_pch_heap_bytes(options_.compile.pch_heap_bytes);
  job->set_arch(specs[0].arch());
  for (const auto& part : unit.parts) {
    auto* q = job->add_layouts();
    q->set_bytes_symbol(part.temp_bytes_symbol);
    q->set_align_symbol(part.temp_align_symbol);
  }
  const std::string description = Describe(specs);
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  pool_->Submit(
      std::move(request), StrJoin(options, " "), description,
      [this, specs, unit, key, request_id, description](absl::StatusOr<wv1::Reply> reply) {
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
          return compiles_in_flight_.Complete(key, s);
        }
        if (reply->layouts_size() != static_cast<int>(unit.parts.size())) {
          ++compile_failures_;
          return compiles_in_flight_.Complete(
              key, absl::InternalError(StrCat(description, ": layout query returned ",
                                              reply->layouts_size(), " layouts for ",
                                              unit.parts.size(), " parts")));
        }
        ++compiles_;
        if (reply->pch_status() == "used") ++pch_warm_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        RecordCompileTime(reply->compile_ms());
        spdlog::info(
            "[req {}] compiled {} in {:.0f} ms + {:.0f} ms layout ({} bytes LTO-IR, PCH {})",
            request_id, description, reply->compile_ms(), reply->layout_ms(), reply->ltoir().size(),
            reply->pch_status());

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
        FillToolchain(toolchain_, artifact.mutable_toolchain());
        artifact.set_compile_ms(reply->compile_ms());
        artifact.set_compile_log(reply->log());
        artifact.set_source(unit.source);
        artifact.set_pch_status(reply->pch_status());
        artifact.set_layout_ms(reply->layout_ms());
        // Store before completing the flight, so a request arriving after the flight ends
        // finds the entry (SingleFlight's re-check relies on this order).
        cache_->Put(key, artifact.SerializeAsString(),
                    EntryMeta{specs.size() == 1 ? specs[0].family() : "bundle",
                              specs.size() == 1 ? specs[0].dtype() : "", specs[0].arch()});
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact);
      });
}

void Service::RecordCompileTime(double ms) {
  std::lock_guard<std::mutex> lock(times_mu_);
  recent_compile_ms_.push_back(ms);
  if (recent_compile_ms_.size() > 1024) recent_compile_ms_.pop_front();
}

void Service::Link(const coop::v1::LinkRequest& request, uint64_t request_id, LinkDone done) {
  ++requests_;
  auto invalid = [&](std::string message) {
    ++invalid_;
    spdlog::info("[req {}] invalid link request: {}", request_id, message);
    done(absl::InvalidArgumentError(std::move(message)));
  };
  const auto& archs = toolchain_.supported_archs;
  const std::string& arch = request.arch();
  if (arch.rfind("sm_", 0) != 0 ||
      std::none_of(archs.begin(), archs.end(), [&](int a) { return arch == StrCat("sm_", a); })) {
    std::vector<std::string> names;
    for (int a : archs) names.push_back(StrCat("sm_", a));
    return invalid(
        StrCat("link: arch must be one of ", StrJoin(names, ", "), "; got \"", arch, "\""));
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
                            "(at most 256 characters), got \"",
                            o.substr(0, 64), "\""));
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
    if (response.ParseFromString(hit->value) && response.key() == key) {
      ++link_hits_;
      response.set_origin(hit->origin == CacheOrigin::kMemory ? coop::v1::ORIGIN_MEMORY
                                                              : coop::v1::ORIGIN_DISK);
      spdlog::info("[req {}] link hit key {}", request_id, key.substr(0, 16));
      return done(std::move(response));
    }
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
  for (int i = 0; i < request.artifact_keys_size(); ++i) {
    const std::string& k = request.artifact_keys(i);
    if (!IsHexKey(k)) {
      return invalid(StrCat("link: artifact_keys[", i,
                            "] must be a 64-digit lowercase hex key, "
                            "got \"",
                            k.substr(0, 80), "\""));
    }
    auto artifact = LookupArtifact(k);
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
  }

  auto joined = links_in_flight_.Join(
      key, [done = std::move(done)](const absl::StatusOr<LinkResponse>& r) { done(r); });
  if (joined != SingleFlight<LinkResponse>::Joined::kLeader) return;
  spdlog::info("[req {}] linking {} module(s) + {} artifact(s) for {} key {}", request_id,
               request.modules_size(), request.artifact_keys_size(), arch, key.substr(0, 16));
  pool_->Submit(std::move(job_request), "link", StrCat("link for ", arch),
                [this, key, arch, options, request_id](absl::StatusOr<wv1::Reply> reply) {
                  if (!reply.ok()) {
                    ++link_failures_;
                    absl::Status s = reply.status();
                    // The inputs came from the caller: a failing link is theirs to fix, and the
                    // message carries nvJitLink's whole log.
                    if (s.code() == absl::StatusCode::kInternal) {
                      s = absl::InvalidArgumentError(StrCat("link: ", s.message()));
                    }
                    spdlog::info("[req {}] link failed: {}", request_id, std::string(s.message()));
                    return links_in_flight_.Complete(key, s);
                  }
                  ++links_;
                  LinkResponse response;
                  response.set_cubin(reply->cubin());
                  response.set_key(key);
                  response.set_link_ms(reply->link_ms());
                  for (const auto& o : options) response.add_options(o);
                  cache_->Put(key, response.SerializeAsString(), EntryMeta{"link", "", arch});
                  response.set_origin(coop::v1::ORIGIN_COMPILED);
                  links_in_flight_.Complete(key, response);
                });
}

void Service::Prewarm(const std::vector<std::string>& archs) {
  for (const std::string& arch : archs) {
    const std::vector<std::string> options = SemanticOptions(toolchain_, arch, false);
    for (int w = 0; w < pool_->size(); ++w) {
      wv1::Request request;
      auto* job = request.mutable_compile();
      // The shared prefix alone: building its PCH is the whole point.
      job->set_source("#include <coop/device/prelude.cuh>\n");
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
  }
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
  for (const auto& t : cache_->Stats()) {
    if (t.origin == CacheOrigin::kMemory) {
      s.set_memory_entries(t.stats.entries);
      s.set_memory_bytes(t.stats.bytes);
    } else if (t.origin == CacheOrigin::kDisk) {
      s.set_disk_entries(t.stats.entries);
      s.set_disk_bytes(t.stats.bytes);
      s.set_disk_write_failures(t.stats.write_failures);
    }
  }
  s.set_uptime_s(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  FillToolchain(toolchain_, s.mutable_toolchain());
  s.set_cache_path(options_.cache_path);

  s.set_pch_warm_compiles(pch_warm_);
  s.set_joined_requests(compiles_in_flight_.joined() + links_in_flight_.joined());
  s.set_links(links_);
  s.set_link_failures(link_failures_);
  s.set_link_hits(link_hits_);
  s.set_bundles(bundles_);
  PoolStats pool = pool_->Stats();
  s.set_worker_restarts(pool.restarts);
  s.set_worker_crashes(pool.crashes);
  s.set_compile_timeouts(pool.timeouts);
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

}  // namespace coopd
