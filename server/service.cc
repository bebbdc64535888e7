#include "server/service.h"

#include <spdlog/spdlog.h>

#include "server/cache_key.h"
#include "server/render.h"
#include "server/spec.h"
#include "server/strings.h"

namespace coopd {

using coop::v1::Artifact;

Service::Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, ServiceOptions options)
    : toolchain_(std::move(toolchain)), cache_(std::move(cache)), options_(std::move(options)) {}

absl::StatusOr<Artifact> Service::Specialize(const coop::v1::SpecializeRequest& request,
                                             uint64_t request_id) {
  ++requests_;
  auto spec = Canonicalize(request.spec(), toolchain_.Target());
  if (!spec.ok()) {
    ++invalid_;
    spdlog::info("[req {}] invalid request: {}", request_id, std::string(spec.status().message()));
    return spec.status();
  }
  const RenderedUnit unit = Render(*spec);
  const std::vector<std::string> options =
      SemanticOptions(toolchain_, spec->arch(), unit.needs_cuda_include);
  const KeyComponents key = ComputeKey(CanonicalEncoding(*spec), unit.source, options, toolchain_);

  if (auto hit = cache_->Get(key.key)) {
    Artifact artifact;
    // A value that does not parse, or names another key, is never served: recompile instead.
    if (artifact.ParseFromString(hit->value) && artifact.key() == key.key) {
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
      spdlog::info("[req {}] {} {} {} hit ({}) key {}", request_id, spec->family(), spec->method(),
                   spec->dtype(), artifact.origin() == coop::v1::ORIGIN_MEMORY ? "memory" : "disk",
                   key.key.substr(0, 16));
      return artifact;
    }
    spdlog::warn("[req {}] cache value for {} does not parse as its artifact; recompiling",
                 request_id, key.key.substr(0, 16));
  }
  ++misses_;
  return Compile(*spec, unit, options, key.key, request_id);
}

absl::StatusOr<Artifact> Service::Compile(const coop::v1::PrimitiveSpec& spec,
                                          const RenderedUnit& unit,
                                          const std::vector<std::string>& options,
                                          const std::string& key, uint64_t request_id) {
  absl::StatusOr<CompileOutput> out;
  absl::StatusOr<Layout> layout;
  {
    std::lock_guard<std::mutex> lock(compile_mu_);
    // Another request may have compiled this key while we waited for the lock.
    if (auto hit = cache_->Get(key)) {
      Artifact artifact;
      if (artifact.ParseFromString(hit->value) && artifact.key() == key) {
        ++memory_hits_;
        artifact.set_origin(coop::v1::ORIGIN_MEMORY);
        return artifact;
      }
    }
    spdlog::info("[req {}] compiling {} {} {} block {}x{}x{} items {} {} key {}", request_id,
                 spec.family(), spec.method(), spec.dtype(), spec.block().x(), spec.block().y(),
                 spec.block().z(), spec.items_per_thread(), spec.arch(), key.substr(0, 16));
    out = CompileToLtoIr(toolchain_, unit.source, options, options_.compile);
    if (out.ok()) {
      layout = QueryLayout(out->ltoir, spec.arch(), unit.temp_bytes_symbol, unit.temp_align_symbol);
    }
  }
  if (!out.ok() || !layout.ok()) {
    ++compile_failures_;
    absl::Status s = out.ok() ? layout.status() : out.status();
    spdlog::error("[req {}] compile failed: {}", request_id, std::string(s.message()));
    // A valid spec that does not compile is our bug or a toolchain problem, not the caller's.
    return absl::InternalError(StrCat(spec.family(), ": ", s.message()));
  }
  ++compiles_;
  compile_us_total_ += static_cast<uint64_t>(out->compile_ms * 1000);
  spdlog::info("[req {}] compiled in {:.0f} ms ({} bytes LTO-IR, PCH {}), temp storage {}/{}",
               request_id, out->compile_ms, out->ltoir.size(), out->pch_status, layout->bytes,
               layout->align);

  Artifact artifact;
  artifact.set_key(key);
  artifact.set_ltoir(std::move(out->ltoir));
  for (const auto& e : unit.entries) {
    auto* entry = artifact.add_entries();
    entry->set_symbol(e.symbol);
    entry->set_declaration(e.declaration);
    entry->set_description(e.description);
  }
  artifact.mutable_temp_storage()->set_bytes(layout->bytes);
  artifact.mutable_temp_storage()->set_align(layout->align);
  artifact.set_arch(spec.arch());
  auto* tc = artifact.mutable_toolchain();
  tc->set_nvrtc_version(toolchain_.NvrtcVersion());
  tc->set_nvjitlink_version(toolchain_.NvJitLinkVersion());
  tc->set_cccl_version(toolchain_.cccl_version);
  tc->set_header_digest(toolchain_.header_digest);
  *artifact.mutable_spec() = spec;
  artifact.set_compile_ms(out->compile_ms);
  artifact.set_compile_log(out->log);
  artifact.set_source(unit.source);

  cache_->Put(key, artifact.SerializeAsString(),
              EntryMeta{spec.family(), spec.dtype(), spec.arch()});
  artifact.set_origin(coop::v1::ORIGIN_COMPILED);
  return artifact;
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
  auto* tc = s.mutable_toolchain();
  tc->set_nvrtc_version(toolchain_.NvrtcVersion());
  tc->set_nvjitlink_version(toolchain_.NvJitLinkVersion());
  tc->set_cccl_version(toolchain_.cccl_version);
  tc->set_header_digest(toolchain_.header_digest);
  s.set_cache_path(options_.cache_path);
  return s;
}

}  // namespace coopd
