// stats.cc: What the daemon reports about itself: Stats (and their reset), Explain and the Catalog.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "server/cache/cache_key.h"
#include "server/catalog/render.h"
#include "server/catalog/spec.h"
#include "server/engine/bitcode.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::PrimitiveSpec;

absl::StatusOr<coop::v1::CatalogResponse> Service::Catalog(const std::string& cccl) const {
  auto tc = FindCccl(cccl, "cccl");
  if (!tc.ok()) return tc.status();
  coop::v1::CatalogResponse out = coopd::Catalog((*tc)->Target());
  out.set_cccl((*tc)->cccl_name);
  DescribeCcclsTo(out.mutable_cccls());
  // The families its probe compile refused (cccl_probe.cc).
  const CcclProbe probe = ProbeOf(static_cast<size_t>(*tc - toolchains_.data()));
  for (auto& f : *out.mutable_families()) {
    for (const auto& [family, error] : probe.failed) {
      if (family != f.name()) continue;
      f.set_available(false);
      f.set_requires(StrCat("a CCCL on which it compiles (on this one: ", error, ")"));
    }
  }
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
  DescribeCcclsTo(s.mutable_cccls());
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
  const KeyComponents key =
      KeyFor(ToolchainOf((*specs)[0]), BundleEncoding(*specs), unit.source, (*specs)[0].arch(),
             which->bitcode ? coop::v1::FORMAT_BITCODE : coop::v1::FORMAT_LTOIR)
          .key;
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

}  // namespace coopd
