// cccl_probe.cc: which families each CCCL has, found by compiling them (Service::ProbeCccls).
//
// A CCCL tree coopd was pointed at may be older or newer than the families were written for: a
// header missing (Canonicalize refuses those families by name), or an API that changed under a
// header that is there. The probe compiles every family's probe specs on it, one background job
// per family, spread over the workers (each builds its PCH for that CCCL on its first). A
// family that does not compile is refused on that CCCL from then on with the compiler's first
// error, instead of failing each request with the whole log.
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>

#include "server/catalog/probe_specs.h"
#include "server/catalog/render.h"
#include "server/engine/compiler.h"
#include "server/service/service.h"
#include "server/util/strings.h"

namespace coopd {

namespace wv1 = coop::worker::v1;

namespace {

// The compiler's first error line ("... error: no instance of ..."), else the message's first.
std::string FirstError(std::string_view message) {
  size_t start = 0;
  std::string_view first;
  while (start < message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view line = message.substr(start, end - start);
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string_view::npos && line.find('(') != std::string_view::npos) {
      first = line;
      break;
    }
    start = end + 1;
  }
  std::string out(first.substr(0, 300));
  if (const size_t slash = out.rfind('/', out.find('(')); slash != std::string::npos) {
    out.erase(0, slash + 1);  // the header's path: its file name says enough
  }
  return out;
}

}  // namespace

Service::CcclProbe Service::ProbeOf(size_t index) const {
  std::lock_guard<std::mutex> lock(probe_mu_);
  return index < probes_.size() ? probes_[index] : CcclProbe{};
}

absl::Status Service::CheckProbed(const Toolchain& tc, const coop::v1::PrimitiveSpec& spec) const {
  const size_t index = static_cast<size_t>(&tc - toolchains_.data());
  std::lock_guard<std::mutex> lock(probe_mu_);
  if (index >= probes_.size()) return absl::OkStatus();
  for (const auto& [family, error] : probes_[index].failed) {
    if (family != spec.family()) continue;
    return absl::FailedPreconditionError(
        StrCat(family, ": does not compile against CCCL ", tc.cccl_version, " (\"", tc.cccl_name,
               "\" at ", tc.cccl_include, "), as coopd's probe compile of it found: ", error,
               ". Name another CCCL in cccl (coopctl catalog lists them)"));
  }
  return absl::OkStatus();
}

void Service::ProbeCccls(const std::vector<size_t>& which, const std::string& arch) {
  int next_worker = 0;
  for (const size_t index : which) {
    if (index >= toolchains_.size()) continue;
    const Toolchain& tc = toolchains_[index];
    ProbeSpecs probe = MakeProbeSpecs(tc.Target(), arch);
    // The specs, by family, in catalogue order.
    std::vector<std::vector<coop::v1::PrimitiveSpec>> groups;
    for (auto& spec : probe.specs) {
      if (groups.empty() || groups.back()[0].family() != spec.family()) groups.emplace_back();
      groups.back().push_back(std::move(spec));
    }
    {
      std::lock_guard<std::mutex> lock(probe_mu_);
      probes_[index] = CcclProbe{groups.empty() ? "ok" : "pending", probe.refused, {}};
    }
    if (groups.empty()) continue;
    spdlog::info("probing CCCL {} \"{}\" for {}: {} families in the background", tc.cccl_version,
                 tc.cccl_name, arch, groups.size());
    const std::vector<std::string> options = SemanticOptions(tc, arch);
    auto remaining = std::make_shared<std::atomic<size_t>>(groups.size());
    for (auto& specs : groups) {
      const std::string family = specs[0].family();
      wv1::Request request = PrimitiveJob(specs, Render(specs), options);
      request.mutable_compile()->set_pch_heap_bytes(options_.compile.pch_heap_bytes);
      pool_->SubmitBackground(
          next_worker++ % pool_->size(), std::move(request), StrJoin(options, " "),
          [this, index, family, remaining](absl::StatusOr<wv1::Reply> reply) {
            const Toolchain& t = toolchains_[index];
            std::lock_guard<std::mutex> lock(probe_mu_);
            CcclProbe& p = probes_[index];
            if (!reply.ok()) {
              const std::string error = FirstError(std::string(reply.status().message()));
              spdlog::warn("CCCL {} \"{}\": {} does not compile, and is refused on it: {}",
                           t.cccl_version, t.cccl_name, family, error);
              p.failed.emplace_back(family, error);
            }
            if (--*remaining > 0) return;
            p.state = p.failed.empty() ? "ok" : "failed";
            spdlog::info("CCCL {} \"{}\" probed: {}", t.cccl_version, t.cccl_name,
                         p.failed.empty() ? std::string("every family compiles")
                                          : StrCat(p.failed.size(), " families do not compile"));
          });
    }
  }
}

}  // namespace coopd
