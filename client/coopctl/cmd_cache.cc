// cmd_cache.cc: the cache's commands: explain (a spec's key, and why it misses), stats (the
// daemon's counters), ls, purge, verify and vacuum.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "coopctl/commands.h"
#include "coopctl/output.h"

namespace coopctl {
namespace {

Json AutoJson(const coop::AutoExplanation& a) {
  Json measured = Json::array();
  for (const auto& m : a.measured) {
    measured.push_back({{"algorithm", m.algorithm},
                        {"median_gbps", m.median_gbps},
                        {"min_gbps", m.min_gbps},
                        {"max_gbps", m.max_gbps},
                        {"n", m.n},
                        {"eligible", m.eligible}});
  }
  Json j = {{"choice", ChoiceJson(a.choice)},
            {"eligible", a.eligible},
            {"filtered_out", a.filtered_out},
            {"baseline", a.baseline},
            {"dtype_size", a.dtype_size},
            {"threads", a.threads},
            {"items_per_thread", a.items_per_thread},
            {"measured_method", a.measured_method},
            {"table_arch", a.table_arch},
            {"rule", a.rule},
            {"measured", measured}};
  if (!a.cell_family.empty()) {
    j["cell"] = {{"family", a.cell_family},
                 {"method", a.cell_method},
                 {"dtype_size", a.cell_dtype_size},
                 {"threads", a.cell_threads},
                 {"items_per_thread", a.cell_items_per_thread},
                 {"run", a.cell_run},
                 {"choice", a.cell_choice}};
  }
  if (a.rule == "nearest") j["distance"] = a.distance;
  return j;
}

void PrintAuto(const coop::AutoExplanation& a) {
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  std::cout << "algorithm auto: " << a.choice.chosen << "\n"
            << "  reason:    " << a.choice.reason << "\n"
            << "  eligible:  " << join(a.eligible) << " (baseline, CUB's default: " << a.baseline
            << ")\n";
  for (const auto& f : a.filtered_out) std::cout << "  excluded:  " << f << "\n";
  std::cout << "  looked up: " << a.measured_method << " cells at S=" << a.dtype_size
            << " T=" << a.threads << " N=" << a.items_per_thread << "\n";
  if (a.table_arch.empty()) {
    std::cout << "  table:     none for this arch\n";
  } else {
    std::cout << "  table:     " << a.table_arch << " version " << a.choice.table_version
              << " sha256 " << a.choice.table_digest.substr(0, 16) << "\n";
  }
  if (!a.cell_family.empty()) {
    char dist[32];
    std::snprintf(dist, sizeof(dist), "%.2f", a.distance);
    std::cout << "  cell:      " << a.cell_family << "/" << a.cell_method
              << " S=" << a.cell_dtype_size << " T=" << a.cell_threads
              << " N=" << a.cell_items_per_thread << " (run " << a.cell_run << "; "
              << (a.rule == "exact" ? std::string("exact match")
                                    : "nearest, distance " + std::string(dist))
              << ")\n";
    std::cout << "  measured (median GB/s, min..max, n):\n";
    for (const auto& m : a.measured) {
      char line[160];
      std::snprintf(line, sizeof(line), "    %-26s %9.1f  %.1f..%.1f  n=%u%s%s",
                    m.algorithm.c_str(), m.median_gbps, m.min_gbps, m.max_gbps, m.n,
                    m.algorithm == a.choice.chosen ? "  <- chosen" : "",
                    m.eligible ? "" : "  (not eligible)");
      std::cout << line << "\n";
    }
  }
}

}  // namespace

int Explain(coop::Client& client, std::vector<coop::Spec> specs, const OutputArgs& output) {
  if (specs.size() > 1) UsageFail("explain: takes one spec (no \"+\" bundles)");
  coopctl::RouteSortFlags(client, &specs);
  auto e = client.Explain(specs[0], ParseFormats(output.format));
  if (!e) FailWith(e.error());
  if (g_json) {
    Json components = Json::array();
    for (const auto& c : e->components) {
      components.push_back({{"name", c.name}, {"value", c.value}, {"digest", c.digest}});
    }
    Json others = Json::array();
    for (const auto& o : e->others) {
      others.push_back({{"key", o.key},
                        {"created_at", static_cast<uint64_t>(o.created_at)},
                        {"differing", o.differing}});
    }
    Json j = {
        {"key", e->key}, {"cached", e->cached}, {"components", components}, {"others", others}};
    if (e->auto_choice) j["auto"] = AutoJson(*e->auto_choice);
    Print(j);
    return 0;
  }
  if (e->auto_choice) PrintAuto(*e->auto_choice);
  std::cout << "key:    " << e->key << (e->cached ? "  (cached)" : "  (not cached)") << "\n";
  for (const auto& c : e->components) {
    std::string value = c.value;
    for (auto& ch : value) {
      if (ch == '\n') ch = ' ';
    }
    std::cout << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ')
              << c.digest.substr(0, 16) << (value.empty() ? "" : "  " + value) << "\n";
  }
  if (e->others.empty() && !e->cached) {
    std::cout << "no other entries for this request: it has never been compiled with this cache\n";
  }
  for (const auto& o : e->others) {
    std::cout << "other key " << o.key.substr(0, 16) << " for the same request differs in: ";
    for (size_t k = 0; k < o.differing.size(); ++k) {
      std::cout << (k ? ", " : "") << o.differing[k];
    }
    std::cout << "\n";
  }
  return 0;
}

int Stats(coop::Client& client, bool zero) {
  // --zero prints the counters as they were, then zeroes them.
  auto s = zero ? client.ResetStats() : client.GetStats();
  if (!s) FailWith(s.error());
  if (g_json) {
    Json j = Json::object();
    j["requests"] = s->requests;
    j["invalid_requests"] = s->invalid_requests;
    j["memory_hits"] = s->memory_hits;
    j["disk_hits"] = s->disk_hits;
    j["misses"] = s->misses;
    j["compiles"] = s->compiles;
    j["compile_failures"] = s->compile_failures;
    j["compile_ms_total"] = s->compile_ms_total;
    j["memory_entries"] = s->memory_entries;
    j["memory_bytes"] = s->memory_bytes;
    j["disk_entries"] = s->disk_entries;
    j["disk_bytes"] = s->disk_bytes;
    j["disk_write_failures"] = s->disk_write_failures;
    j["uptime_s"] = s->uptime_s;
    j["cache_path"] = s->cache_path;
    j["pch_warm_compiles"] = s->pch_warm_compiles;
    j["joined_requests"] = s->joined_requests;
    j["worker_restarts"] = s->worker_restarts;
    j["worker_crashes"] = s->worker_crashes;
    j["compile_timeouts"] = s->compile_timeouts;
    j["queue_depth"] = s->queue_depth;
    j["workers"] = s->workers;
    j["workers_busy"] = s->workers_busy;
    j["compile_ms_p50"] = s->compile_ms_p50;
    j["compile_ms_p90"] = s->compile_ms_p90;
    j["compile_ms_p99"] = s->compile_ms_p99;
    j["links"] = s->links;
    j["link_failures"] = s->link_failures;
    j["link_hits"] = s->link_hits;
    j["bundles"] = s->bundles;
    j["corruptions"] = s->corruptions;
    j["evictions"] = s->evictions;
    j["cache_degraded"] = s->cache_degraded;
    j["bitcode_compiles"] = s->bitcode_compiles;
    j["remote_hits"] = s->remote_hits;
    j["listeners"] = nlohmann::json::array();
    for (const auto& l : s->listeners) {
      nlohmann::json o = {{"address", l.address},
                          {"tls", l.tls},
                          {"client_certificates", l.client_certificates},
                          {"tokens", l.tokens},
                          {"insecure", l.insecure}};
      if (!l.mode.empty()) o["mode"] = l.mode;
      j["listeners"].emplace_back(std::move(o));
    }
    j["unauthenticated_calls"] = s->unauthenticated_calls;
    j["denied_calls"] = s->denied_calls;
    j["client_in_flight_refusals"] = s->client_in_flight_refusals;
    j["client_rate_refusals"] = s->client_rate_refusals;
    j["undecodable_requests"] = s->undecodable_requests;
    j["oversized_requests"] = s->oversized_requests;
    j["requests_cancelled"] = s->requests_cancelled;
    j["compiles_cancelled"] = s->compiles_cancelled;
    j["quota_compile_refusals"] = s->quota_compile_refusals;
    j["quota_bytes_refusals"] = s->quota_bytes_refusals;
    j["tuning_digest"] = s->tuning_digest;
    j["auto_resolutions"] = s->auto_resolutions;
    j["tuning_tables"] = nlohmann::json::array();
    for (const auto& t : s->tuning_tables) {
      j["tuning_tables"].push_back({{"arch", t.arch},
                                    {"version", t.version},
                                    {"digest", t.digest},
                                    {"source", t.source},
                                    {"device", t.device},
                                    {"cells", t.cells},
                                    {"placeholder", t.placeholder}});
    }
    j["memo"] = {{"hits", s->memo_hits},
                 {"misses", s->memo_misses},
                 {"entries", s->memo_entries},
                 {"evictions", s->memo_evictions}};
    j["digest_only_replies"] = s->digest_only_replies;
    j["bytes_omitted"] = s->bytes_omitted;
    if (s->remote.configured) {
      const auto& r = s->remote;
      j["remote"] = {{"url", r.url},
                     {"cluster", r.cluster},
                     {"read_only", r.read_only},
                     {"healthy", r.healthy},
                     {"hits", r.hits},
                     {"misses", r.misses},
                     {"errors", r.errors},
                     {"timeouts", r.timeouts},
                     {"reconnects", r.reconnects},
                     {"corruptions", r.corruptions},
                     {"writes", r.writes},
                     {"write_failures", r.write_failures},
                     {"writes_skipped", r.writes_skipped},
                     {"writes_dropped", r.writes_dropped},
                     {"redirects", r.redirects},
                     {"slot_refreshes", r.slot_refreshes},
                     {"leases_acquired", r.leases_acquired},
                     {"lease_waits", r.lease_waits},
                     {"lease_wait_hits", r.lease_wait_hits},
                     {"lease_wait_timeouts", r.lease_wait_timeouts},
                     {"lease_takeovers", r.lease_takeovers},
                     {"leases_lost", r.leases_lost}};
    }
    Json tiers = Json::array();
    for (const auto& t : s->tiers) {
      tiers.push_back({{"name", t.name},
                       {"hits", t.hits},
                       {"misses", t.misses},
                       {"entries", t.entries},
                       {"bytes", t.bytes},
                       {"raw_bytes", t.raw_bytes},
                       {"budget_bytes", t.budget_bytes},
                       {"evictions", t.evictions},
                       {"corruptions", t.corruptions},
                       {"write_failures", t.write_failures},
                       {"degraded", t.degraded}});
    }
    j["tiers"] = std::move(tiers);
    Json workers = Json::array();
    for (const auto& ws : s->worker_status) {
      workers.push_back({{"pid", static_cast<uint64_t>(ws.pid)},
                         {"busy", ws.busy},
                         {"jobs", ws.jobs},
                         {"header_set", ws.header_set}});
    }
    j["worker_status"] = std::move(workers);
    j["toolchain"] = ToolchainJson(s->toolchain);
    j["cccls"] = CcclsJson(s->cccls);
    Print(j);
  } else {
    std::cout << "requests:        " << s->requests << " (" << s->invalid_requests << " invalid)\n"
              << "hits:            " << s->memory_hits << " memory, " << s->disk_hits << " disk, "
              << s->remote_hits << " remote\n"
              << "hit path:        " << s->memo_hits << " memo hits, " << s->memo_misses
              << " memo misses (" << s->memo_entries << " entries, " << s->memo_evictions
              << " evictions); " << s->digest_only_replies << " digest-only replies ("
              << s->bytes_omitted << " bytes left out)\n"
              << "misses:          " << s->misses << "\n"
              << "compiles:        " << s->compiles << " (" << s->compile_failures << " failed), "
              << s->compile_ms_total << " ms total; " << s->bitcode_compiles << " of them clang\n"
              << "cache:           " << s->cache_path
              << (s->cache_degraded ? "  DEGRADED: cannot store, compiling without caching" : "")
              << "\n";
    for (const auto& t : s->tiers) {
      std::cout << "  " << t.name << ": " << t.entries << " entries, " << t.bytes
                << " bytes stored (" << t.raw_bytes << " raw, budget " << t.budget_bytes << "), "
                << t.hits << " hits, " << t.misses << " misses, " << t.evictions << " evictions, "
                << t.corruptions << " corruptions, " << t.write_failures << " write failures\n";
    }
    if (s->remote.configured) {
      const auto& r = s->remote;
      std::cout << "farm tier:       " << r.url << (r.cluster ? " (cluster)" : "")
                << (r.read_only ? " read-only" : "")
                << (r.healthy ? "" : "  UNHEALTHY: reconnecting") << "\n  " << r.errors
                << " errors, " << r.timeouts << " timeouts, " << r.reconnects << " reconnects, "
                << r.writes << " writes (" << r.write_failures << " failed, " << r.writes_skipped
                << " skipped), leases: " << r.leases_acquired << " taken, " << r.lease_waits
                << " waits (" << r.lease_wait_hits << " served, " << r.lease_wait_timeouts
                << " timed out)\n";
    }
    for (const auto& l : s->listeners) std::cout << "listening:       " << ListenerText(l) << "\n";
    std::cout << "access:          " << s->unauthenticated_calls << " calls unauthenticated, "
              << s->denied_calls << " denied\n";
    std::cout << "refused:         " << s->client_in_flight_refusals
              << " over a client's in-flight limit, " << s->client_rate_refusals
              << " over its rate; " << s->undecodable_requests << " requests undecodable, "
              << s->oversized_requests << " oversized\n";
    std::cout << "cancelled:       " << s->requests_cancelled << " requests stopped waiting, "
              << s->compiles_cancelled << " compiles stopped for it\n";
    std::cout << "quotas:          " << s->quota_compile_refusals
              << " compiles refused over a client's compiles per minute, "
              << s->quota_bytes_refusals << " over its cache bytes per hour\n";
    for (const auto& t : s->tuning_tables) {
      std::cout << "tuning table:    " << t.arch << " version " << t.version << " sha256 "
                << t.digest.substr(0, 16) << " (" << t.source << ", " << t.cells << " cells"
                << (t.placeholder ? ", placeholder: not measured" : "") << ")\n";
    }
    std::cout << "algorithm auto:  " << s->auto_resolutions << " specs resolved"
              << (s->tuning_tables.empty() ? " (no tuning table: CUB's defaults)" : "") << "\n";
    std::cout << "compile times:   p50 " << s->compile_ms_p50 << " ms, p90 " << s->compile_ms_p90
              << " ms, p99 " << s->compile_ms_p99 << " ms; " << s->pch_warm_compiles
              << " on a warm PCH\n"
              << "single-flight:   " << s->joined_requests
              << " requests joined a compile in flight\n"
              << "workers:         " << s->workers << " (" << s->workers_busy << " busy, queue "
              << s->queue_depth << "), " << s->worker_restarts << " restarts, " << s->worker_crashes
              << " crashes, " << s->compile_timeouts << " timeouts\n"
              << "links:           " << s->links << " (" << s->link_failures << " failed, "
              << s->link_hits << " cache hits); bundles " << s->bundles << "\n"
              << "toolchain:       NVRTC " << s->toolchain.nvrtc_version << ", CCCL "
              << s->toolchain.cccl_version
              << (s->toolchain.cccl_name.empty() ? "" : " (" + s->toolchain.cccl_name + ")")
              << "; bitcode: "
              << (s->toolchain.clang_version.empty() ? "unavailable (no clang)"
                                                     : s->toolchain.clang_version)
              << "\n"
              << "uptime:          " << s->uptime_s << " s\n";
    PrintCcclsText(s->cccls);
  }
  return 0;
}

void FilterArgs::Add(CLI::App* app) {
  app->add_option("--family", filter.family, "only entries of this family (or bundle, link)");
  app->add_option("--dtype", filter.dtype, "only entries of this dtype");
  app->add_option("--arch", filter.arch, "only entries for this arch");
}

int Ls(coop::Client& client, const coop::CacheFilter& filter, const std::string& limit,
       bool manifest) {
  const uint32_t n = limit.empty() ? 0 : coopctl::ParseUint("--limit", limit);
  auto entries = client.ListEntries(filter, n, manifest);
  if (!entries) FailWith(entries.error());
  if (manifest) {
    std::vector<std::string> left_out;
    const Json doc = coopctl::ManifestOf(*entries, &left_out);
    Print(doc);
    for (const auto& l : left_out) std::cerr << "coopctl: ls --manifest: left out " << l << "\n";
    return 0;
  }
  if (g_json) {
    Json out = Json::array();
    for (const auto& e : *entries) {
      out.push_back({{"key", e.key},
                     {"family", e.family},
                     {"dtype", e.dtype},
                     {"arch", e.arch},
                     {"raw_bytes", e.raw_bytes},
                     {"stored_bytes", e.stored_bytes},
                     {"created_at", static_cast<uint64_t>(e.created_at)},
                     {"last_access", static_cast<uint64_t>(e.last_access)}});
    }
    Print(out);
    return 0;
  }
  for (const auto& e : *entries) {
    std::cout << e.key.substr(0, 16) << "  " << e.family << " " << e.dtype << " " << e.arch << "  "
              << e.stored_bytes << " bytes stored (" << e.raw_bytes << " raw)\n";
  }
  std::cout << entries->size() << " entries\n";
  return 0;
}

int Purge(coop::Client& client, const coop::CacheFilter& filter, bool all) {
  if (!all && filter.family.empty() && filter.dtype.empty() && filter.arch.empty()) {
    UsageFail("purge: give --all, or a filter (--family, --dtype, --arch)");
  }
  auto n = client.Purge(filter, all);
  if (!n) FailWith(n.error());
  if (g_json) {
    Print({{"entries_removed", *n}});
  } else {
    std::cout << "removed " << *n << " entries\n";
  }
  return 0;
}

int Verify(coop::Client& client) {
  auto r = client.Verify();
  if (!r) FailWith(r.error());
  if (g_json) {
    Print({{"entries_checked", r->entries_checked},
           {"blobs_checked", r->blobs_checked},
           {"bad_removed", r->bad_removed},
           {"bad_keys", r->bad_keys}});
  } else {
    std::cout << "checked " << r->entries_checked << " entries and " << r->blobs_checked
              << " blobs; removed " << r->bad_removed << " bad entries\n";
    for (const auto& k : r->bad_keys) std::cout << "  removed " << k << "\n";
  }
  return 0;
}

int Vacuum(coop::Client& client) {
  auto r = client.Vacuum();
  if (!r) FailWith(r.error());
  if (g_json) {
    Print({{"file_bytes_before", r->file_bytes_before}, {"file_bytes_after", r->file_bytes_after}});
  } else {
    std::cout << "database file: " << r->file_bytes_before << " -> " << r->file_bytes_after
              << " bytes\n";
  }
  return 0;
}

}  // namespace coopctl
