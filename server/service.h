// service.h: coopd's request logic, independent of gRPC.
//
// Specialize(): validate -> canonical spec -> render -> key -> tiered cache -> compile ->
// layout query -> store -> artifact. Errors are absl::Status values with the codes of BRIEF.md
// section 5; the gRPC layer (grpc_service.cc) converts them in one place.
//
// Thread-safe. Compiles are serialized inside this process (NVRTC serializes them anyway); the
// compile engine's worker pool replaces this with parallel worker processes.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "coop/v1/coop.pb.h"
#include "server/cache/cache.h"
#include "server/compiler.h"
#include "server/toolchain.h"

namespace coopd {

struct ServiceOptions {
  CompileSettings compile;
  std::string cache_path;  // reported in stats
};

class Service {
 public:
  Service(Toolchain toolchain, std::unique_ptr<TieredCache> cache, ServiceOptions options);

  // `request_id` tags log lines.
  absl::StatusOr<coop::v1::Artifact> Specialize(const coop::v1::SpecializeRequest& request,
                                                uint64_t request_id);
  coop::v1::Stats GetStats();
  const Toolchain& toolchain() const { return toolchain_; }

 private:
  absl::StatusOr<coop::v1::Artifact> Compile(const coop::v1::PrimitiveSpec& spec,
                                             const RenderedUnit& unit,
                                             const std::vector<std::string>& options,
                                             const std::string& key, uint64_t request_id);

  const Toolchain toolchain_;
  const std::unique_ptr<TieredCache> cache_;
  const ServiceOptions options_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex compile_mu_;  // serializes NVRTC within this process

  std::atomic<uint64_t> requests_{0}, invalid_{0}, memory_hits_{0}, disk_hits_{0}, misses_{0},
      compiles_{0}, compile_failures_{0};
  std::atomic<uint64_t> compile_us_total_{0};
};

}  // namespace coopd
