// service.cc: the Service's life: construction, the pre-warm history, and pre-warming workers.
#include "server/service/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <mutex>

#include "server/catalog/render.h"
#include "server/engine/bitcode.h"
#include "server/service/service_internal.h"
#include "server/util/strings.h"

namespace coopd {

namespace wv1 = coop::worker::v1;

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

}  // namespace coopd
