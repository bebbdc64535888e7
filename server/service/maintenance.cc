// maintenance.cc: Cache maintenance on the disk tier: ListEntries, Purge, Verify and Vacuum.
#include <spdlog/spdlog.h>

#include "server/service/service.h"
#include "server/service/service_internal.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::LinkResponse;

absl::StatusOr<coop::v1::ListEntriesResponse> Service::ListEntries(
    const coop::v1::ListEntriesRequest& request) {
  if (disk_ == nullptr) return absl::FailedPreconditionError("ls: coopd runs without a disk cache");
  CacheFilter filter{request.filter().family(), request.filter().dtype(), request.filter().arch()};
  auto entries = disk_->List(filter, request.limit(), request.with_specs());
  if (!entries.ok()) return entries.status();
  coop::v1::ListEntriesResponse out;
  for (const auto& e : *entries) {
    auto* pe = out.add_entries();
    pe->set_key(e.key);
    pe->set_family(e.meta.family);
    pe->set_dtype(e.meta.dtype);
    pe->set_arch(e.meta.arch);
    pe->set_raw_bytes(e.raw_bytes);
    pe->set_stored_bytes(e.stored_bytes);
    pe->set_created_at(e.created_at);
    pe->set_last_access(e.last_access);
    Artifact artifact;  // a link result's record holds a LinkResponse instead
    if (request.with_specs() && e.meta.family != "link" && artifact.ParseFromString(e.value_meta)) {
      for (const auto& part : artifact.parts()) *pe->add_specs() = part.spec();
      pe->set_format(artifact.has_bitcode() ? coop::v1::FORMAT_BITCODE : coop::v1::FORMAT_LTOIR);
    }
  }
  return out;
}

absl::StatusOr<coop::v1::PurgeResponse> Service::Purge(const coop::v1::PurgeRequest& request) {
  CacheFilter filter{request.filter().family(), request.filter().dtype(), request.filter().arch()};
  if (filter.empty() && !request.all()) {
    return absl::InvalidArgumentError(
        "purge: give a filter (family, dtype, arch) or set all to purge everything");
  }
  auto removed = cache_->Purge(filter);
  if (!removed.ok()) {
    spdlog::warn("purge (family \"{}\", dtype \"{}\", arch \"{}\") failed: {}", filter.family,
                 filter.dtype, filter.arch, std::string(removed.status().message()));
    return removed.status();
  }
  coop::v1::PurgeResponse out;
  out.set_entries_removed(*removed);
  spdlog::info("purged {} entries (family \"{}\", dtype \"{}\", arch \"{}\")",
               out.entries_removed(), filter.family, filter.dtype, filter.arch);
  return out;
}

absl::StatusOr<coop::v1::VerifyResponse> Service::Verify() {
  if (disk_ == nullptr) {
    return absl::FailedPreconditionError("verify: coopd runs without a disk cache");
  }
  auto report = disk_->Verify();
  if (!report.ok()) {
    spdlog::warn("verify failed: {}", std::string(report.status().message()));
    return report.status();
  }
  // A bad disk record may have been promoted into memory before it went bad on disk: drop the
  // memory copies of the removed keys too (cheapest: drop the whole memory tier if any).
  if (report->bad_removed > 0) {
    if (CacheTier* memory = cache_->tier(CacheOrigin::kMemory)) {
      memory->Purge(CacheFilter{}).IgnoreError();
    }
  }
  coop::v1::VerifyResponse out;
  out.set_entries_checked(report->entries_checked);
  out.set_blobs_checked(report->blobs_checked);
  out.set_bad_removed(report->bad_removed);
  for (const auto& k : report->bad_keys) out.add_bad_keys(k);
  out.set_totals_corrected(report->totals_corrected);
  spdlog::info("verify: {} entries and {} blobs checked, {} bad entries removed",
               out.entries_checked(), out.blobs_checked(), out.bad_removed());
  return out;
}

absl::StatusOr<coop::v1::VacuumResponse> Service::Vacuum() {
  if (disk_ == nullptr) {
    return absl::FailedPreconditionError("vacuum: coopd runs without a disk cache");
  }
  auto report = disk_->Vacuum();
  if (!report.ok()) {
    spdlog::warn("vacuum failed: {}", std::string(report.status().message()));
    return report.status();
  }
  spdlog::info("vacuum: database file {} -> {} bytes", report->file_bytes_before,
               report->file_bytes_after);
  coop::v1::VacuumResponse out;
  out.set_file_bytes_before(report->file_bytes_before);
  out.set_file_bytes_after(report->file_bytes_after);
  return out;
}

}  // namespace coopd
