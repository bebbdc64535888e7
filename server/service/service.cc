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
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

namespace wv1 = coop::worker::v1;

namespace {

// What every CCCL's keys depend on besides the request, for the memo: versions and digests.
std::string ToolchainIdentity(const std::vector<Toolchain>& toolchains) {
  const Toolchain& tc = toolchains.front();
  std::string out = StrCat("nvrtc=", tc.NvrtcVersion(), "\nnvjitlink=", tc.NvJitLinkVersion(),
                           "\nclang=", tc.clang.version, " at ", tc.clang.path);
  for (const Toolchain& t : toolchains) {
    StrAppend(&out, "\ncccl ", t.cccl_name, "=", t.cccl_version, " headers=", t.header_digest);
  }
  return out;
}

std::vector<Toolchain> One(Toolchain tc) {
  if (tc.cccl_name.empty()) tc.cccl_name = "default";
  std::vector<Toolchain> out;
  out.push_back(std::move(tc));
  return out;
}

}  // namespace

Service::Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, SqliteCache* disk,
                 WorkerPool* pool, ServiceOptions options)
    : Service(One(std::move(toolchain)), std::move(cache), disk, pool, std::move(options)) {}

Service::Service(std::vector<Toolchain> toolchains, std::unique_ptr<TieredCache> cache,
                 SqliteCache* disk, WorkerPool* pool, ServiceOptions options)
    : toolchains_(std::move(toolchains)),
      cache_(std::move(cache)),
      disk_(disk),
      pool_(pool),
      options_(std::move(options)),
      toolchain_identity_(ToolchainIdentity(toolchains_)),
      history_(options_.prewarm_history.empty() ? std::vector<std::string>()
                                                : options_.prewarm_history_archs) {
  std::lock_guard<std::mutex> lock(probe_mu_);
  probes_.resize(toolchains_.size());
}

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

absl::StatusOr<const Toolchain*> Service::FindCccl(const std::string& requested,
                                                   const std::string& field) const {
  if (requested.empty()) return &toolchain_;
  for (const Toolchain& t : toolchains_) {
    if (t.cccl_name == requested) return &t;
  }
  // A version, or a prefix of one that ends at a dot ("3.5" names 3.5.0, not 3.50.0).
  std::vector<const Toolchain*> matches;
  for (const Toolchain& t : toolchains_) {
    const std::string& v = t.cccl_version;
    if (v == requested ||
        (v.size() > requested.size() && v.compare(0, requested.size(), requested) == 0 &&
         v[requested.size()] == '.')) {
      matches.push_back(&t);
    }
  }
  if (matches.size() == 1) return matches[0];
  std::vector<std::string> known;
  for (const Toolchain& t : toolchains_) {
    known.push_back(
        StrCat(t.cccl_name, " (", t.cccl_version, &t == &toolchain_ ? ", default" : "", ")"));
  }
  return absl::InvalidArgumentError(StrCat(
      field, " must name one of this coopd's CCCLs, by name or version: ", StrJoin(known, ", "),
      matches.empty() ? "; got " : "; the version matches several, name one of them; got ",
      QuoteValue(requested), matches.empty() ? " (coopd --cccl NAME=DIR serves another)" : ""));
}

const Toolchain& Service::ToolchainOf(const coop::v1::PrimitiveSpec& canonical) const {
  for (const Toolchain& t : toolchains_) {
    if (t.cccl_name == canonical.cccl()) return t;
  }
  return toolchain_;
}

void Service::DescribeCcclsTo(google::protobuf::RepeatedPtrField<coop::v1::CcclInfo>* out) const {
  for (size_t i = 0; i < toolchains_.size(); ++i) {
    const Toolchain& t = toolchains_[i];
    coop::v1::CcclInfo* info = out->Add();
    info->set_name(t.cccl_name);
    info->set_version(t.cccl_version);
    info->set_include(t.cccl_include);
    info->set_digest(t.cccl_digest);
    info->set_is_default(i == 0);
    info->set_origin(t.cccl_origin);
    const CcclProbe probe = ProbeOf(i);
    info->set_probe(probe.state);
    for (const auto& r : probe.refused) info->add_unavailable(r);
    for (const auto& [family, error] : probe.failed) info->add_unavailable(family + ": " + error);
  }
}

}  // namespace coopd
