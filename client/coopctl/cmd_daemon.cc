// cmd_daemon.cc: the commands about coopd itself: health (for scripts and probes, with
// grpc_health_probe's exit statuses on request), stop, and catalog (what it accepts).
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "coopctl/commands.h"
#include "coopctl/output.h"

namespace coopctl {
namespace {

// grpc_health_probe's exit statuses (its README): what `health --probe-exit-codes` returns.
enum ProbeExit {
  kProbeServing = 0,
  kProbeInvalidArguments = 1,
  kProbeConnectionFailure = 2,
  kProbeRpcFailure = 3,
  kProbeUnhealthy = 4,
};

}  // namespace

int ProbeExitStatus(int coopctl_status, bool answered_not_serving) {
  if (answered_not_serving) return kProbeUnhealthy;
  switch (coopctl_status) {
    case coopctl::kExitOk:
      return kProbeServing;
    case coopctl::kExitUsage:
      return kProbeInvalidArguments;
    case coopctl::kExitUnreachable:
      return kProbeConnectionFailure;
    default:
      return kProbeRpcFailure;
  }
}

int Health(coop::Client& client, const std::string& service) {
  auto print_json = [&client](const char* status) {
    Print({{"status", status}, {"socket", Where(client)}});
  };
  auto h = client.Health(service);
  if (!h && h.error().code == coop::ErrorCode::kUnavailable && !h.error().from_server) {
    if (g_json) print_json("NOT_RUNNING");
    CommandError e(
        coopctl::kExitUnreachable, "UNAVAILABLE",
        "coopd is not running on " + Where(client) + " (coopctl health never starts it)");
    e.json_printed = true;
    throw e;
  }
  // Every other answer but SERVING is exit status 1, as for probes.
  if (!h) {
    CommandError e(coopctl::kExitFailed, coop::ErrorCodeName(h.error().code),
                   std::string(coop::ErrorCodeName(h.error().code)) + ": " + ErrorText(h.error()));
    throw e;
  }
  // An --insecure TCP listener is said on every health check (when the stats can be read).
  if (auto stats = client.GetStats()) {
    for (const auto& l : stats->listeners) {
      if (l.insecure) std::cerr << "warning: coopd serves " << ListenerText(l) << "\n";
    }
  }
  const char* name = coop::HealthStatusName(*h);
  if (g_json) {
    print_json(name);
  } else {
    std::cout << name << " (" << Where(client) << ")\n";
  }
  return *h == coop::HealthStatus::kServing ? 0 : 1;
}

int Stop(coop::Client& client, bool wait) {
  auto accepted = client.Stop();
  if (!accepted && accepted.error().code == coop::ErrorCode::kUnavailable &&
      !accepted.error().from_server) {
    throw CommandError(coopctl::kExitUnreachable, "UNAVAILABLE",
                       "coopd is not running on " + Where(client));
  }
  if (!accepted) FailWith(accepted.error());
  // Stopped once it no longer answers at all (while it drains, health says NOT_SERVING).
  const auto deadline = std::chrono::steady_clock::now() + g_global.ToOptions().timeout;
  bool stopped = !wait;
  while (wait && !stopped) {
    auto h = client.Health();
    stopped = !h && h.error().code == coop::ErrorCode::kUnavailable && !h.error().from_server;
    if (stopped || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!stopped) {
    throw CommandError(coopctl::kExitBusy, "DEADLINE_EXCEEDED",
                       "coopd on " + Where(client) + " accepted the stop but still answers (it " +
                           "drains for up to its shutdown grace; raise --timeout to wait longer)");
  }
  if (g_json) {
    Print({{"status", wait ? "STOPPED" : "STOPPING"}, {"socket", Where(client)}});
  } else {
    std::cout << (wait ? "stopped" : "stopping") << " (" << Where(client) << ")\n";
  }
  return 0;
}

int CatalogCommand(coop::Client& client, const std::string& cccl) {
  auto c = client.GetCatalog(cccl);
  if (!c) FailWith(c.error());
  if (g_json) {
    Json families = Json::array();
    for (const auto& f : c->families) {
      Json methods = Json::array();
      for (const auto& m : f.methods) {
        methods.push_back({{"name", m.name},
                           {"needs_op", m.needs_op},
                           {"op_kind", m.op_kind},
                           {"description", m.description}});
      }
      Json fj = Json::object();
      fj["name"] = f.name;
      fj["description"] = f.description;
      fj["methods"] = std::move(methods);
      fj["algorithms"] = f.algorithms;
      fj["default_algorithm"] = f.default_algorithm;
      fj["warp"] = f.warp;
      fj["max_items_per_thread"] = f.max_items_per_thread;
      fj["scan_options"] = f.scan_options;
      fj["warp_multiple_algorithms"] = f.warp_multiple_algorithms;
      fj["exchange_options"] = f.exchange_options;
      fj["family_options"] = f.family_options;
      fj["dtypes"] = f.dtypes;
      fj["power_of_two_threads"] = f.power_of_two_threads;
      fj["available"] = f.available;
      fj["requires"] = f.requires;
      fj["auto_algorithms"] = f.auto_algorithms;
      fj["auto_baseline"] = f.auto_baseline;
      fj["auto_measured_method"] = f.auto_measured_method;
      families.push_back(std::move(fj));
    }
    Json kinds = Json::array();
    for (const auto& k : c->op_kinds) {
      kinds.push_back({{"name", k.name}, {"signature", k.signature}, {"builtins", k.builtins}});
    }
    Json j = Json::object();
    j["families"] = std::move(families);
    j["dtypes"] = c->dtypes;
    j["builtin_ops"] = c->builtin_ops;
    j["op_kinds"] = std::move(kinds);
    j["archs"] = c->archs;
    j["calling_conventions"] = c->calling_conventions;
    j["bitcode_archs"] = c->bitcode_archs;
    j["bitcode_unavailable"] = c->bitcode_unavailable;
    j["cccls"] = CcclsJson(c->cccls);
    j["cccl"] = c->cccl;
    Print(j);
    return 0;
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  for (const auto& f : c->families) {
    std::cout << f.name << ": " << f.description << "\n";
    if (!f.available) std::cout << "  UNAVAILABLE here: needs " << f.requires << "\n";
    for (size_t i = 0; i < f.methods.size(); ++i) {
      const auto& m = f.methods[i];
      std::cout << "  --method " << m.name << (i == 0 ? " (default)" : "")
                << (m.needs_op ? " --op " + m.op_kind : "") << ": " << m.description << "\n";
    }
    if (!f.algorithms.empty()) {
      std::cout << "  --algorithm " << join(f.algorithms)
                << (f.default_algorithm.empty() ? " (required)"
                                                : " (default " + f.default_algorithm + ")")
                << (f.auto_algorithms.empty() ? "" : ", or auto") << "\n";
      if (!f.auto_algorithms.empty()) {
        std::cout << "  --algorithm auto: the fastest of " << join(f.auto_algorithms)
                  << " for the spec, from the tuning table (" << f.auto_measured_method
                  << " measured; fallback " << f.auto_baseline << ")\n";
      }
    }
    std::cout << (f.warp                   ? "  --warp-threads 1, 2, 4, 8, 16, 32 (default 32)\n"
                  : f.power_of_two_threads ? "  --threads X[,Y[,Z]] (x*y*z a power of two)\n"
                                           : "  --threads X[,Y[,Z]] (1..1024 in all)\n");
    if (f.dtypes.size() != c->dtypes.size()) std::cout << "  --dtype " << join(f.dtypes) << "\n";
    std::cout << "  --items 1.." << f.max_items_per_thread << "\n";
    if (f.scan_options) std::cout << "  --with-aggregate\n";
    if (f.exchange_options) std::cout << "  --warp-time-slicing\n";
    if (f.family_options == "radix_sort" || f.family_options == "merge_sort" ||
        f.family_options == "top_k") {
      std::cout << "  --value-dtype T (key-value pairs; default keys only)\n";
    }
    if (f.family_options == "top_k") {
      std::cout << "  --valid-items (an entry taking num_valid: partial tiles; CCCL 3.5+)\n";
    }
    if (f.family_options == "radix_sort") std::cout << "  --radix-bits 1..8 (default 4)\n";
    if (f.family_options == "histogram") std::cout << "  --bins 1..65536 (required)\n";
    if (f.family_options == "radix_rank") std::cout << "  --radix-bits 1..8 (required)\n";
    if (f.family_options == "run_length_decode") {
      std::cout << "  --items N: runs per thread; --decoded-items 1..64 (required)\n";
    }
  }
  std::cout << "dtypes: " << join(c->dtypes) << "\n";
  for (const auto& k : c->op_kinds) {
    std::cout << "operators, " << k.name << " " << k.signature << ": " << join(k.builtins) << "\n";
  }
  std::cout << "archs: " << join(c->archs) << "\n"
            << "bitcode archs (--format bitcode): "
            << (c->bitcode_archs.empty() ? "none: " + c->bitcode_unavailable
                                         : join(c->bitcode_archs))
            << "\n"
            << "abi: " << join(c->calling_conventions) << "\n";
  if (!c->cccls.empty()) {
    std::cout << "families above: as CCCL " << (c->cccl.empty() ? "(default)" : c->cccl)
              << " sees them (--cccl NAME|VERSION: another's)\n";
    PrintCcclsText(c->cccls);
  }
  return 0;
}

}  // namespace coopctl
