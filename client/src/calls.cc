// calls.cc: coop::Client's calls (Specialize, SpecializeBundle, Link, Plan, Explain, the cache's
// and the daemon's calls, Health, Stop) and ClientAccess's calls on the wire messages for the C
// ABI: each builds its request, makes the call through Client::Impl (client_impl.h) and converts
// the reply.
#include <optional>
#include <string>
#include <vector>

#include "client_impl.h"
#include "client_internal.h"
#include "coop/client.h"
#include "coop/v1/coop.grpc.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto_convert.h"
#include "reply_decode.h"
#include "reply_reader.h"

namespace coop {

using internal::CheckFamilyOptions;
using internal::FromGrpc;
using internal::FromProto;
using internal::FromReply;
using internal::ToProto;

namespace {

template <class Request>
void SetFormats(Formats formats, Request* req) {
  if (formats != Formats::kBitcode) req->add_formats(v1::FORMAT_LTOIR);
  if (formats != Formats::kLtoIr) req->add_formats(v1::FORMAT_BITCODE);
}

}  // namespace

Result<Artifact> Client::Specialize(const Spec& spec, Formats formats) {
  if (auto e = CheckFamilyOptions(spec, "spec")) return *e;
  v1::SpecializeRequest req;
  *req.mutable_spec() = ToProto(spec);
  SetFormats(formats, &req);
  std::shared_ptr<const internal::Reply> reply;
  if (auto e = impl_->SpecializeCached(*impl_->specialize_method, std::move(req), &reply)) {
    return *e;
  }
  return FromReply(reply);
}

Result<Artifact> Client::SpecializeBundle(const std::vector<Spec>& specs, Formats formats) {
  v1::SpecializeBundleRequest req;
  SetFormats(formats, &req);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (auto e = CheckFamilyOptions(specs[i], "specs[" + std::to_string(i) + "]")) return *e;
    *req.add_specs() = ToProto(specs[i]);
  }
  std::shared_ptr<const internal::Reply> reply;
  if (auto e = impl_->SpecializeCached(*impl_->bundle_method, std::move(req), &reply)) {
    return *e;
  }
  return FromReply(reply);
}

Result<LinkResult> Client::Link(const LinkRequest& request) {
  v1::LinkRequest req;
  req.set_arch(request.arch);
  for (const auto& m : request.modules) {
    auto* pm = req.add_modules();
    pm->set_kind(m.kind == LinkInputKind::kPtx ? v1::LinkModule::KIND_PTX
                                               : v1::LinkModule::KIND_LTOIR);
    pm->set_name(m.name);
    pm->set_data(m.data);
  }
  for (const auto& k : request.artifact_keys) req.add_artifact_keys(k);
  for (const auto& o : request.options) req.add_options(o);
  req.set_keep_unused_variables(request.keep_unused_variables);
  req.set_client(impl_->options.client_name);
  v1::LinkResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Link, req, &resp)) return *e;
  LinkResult out;
  out.cubin = resp.cubin();
  out.key = resp.key();
  out.origin = FromProto(resp.origin());
  out.link_ms = resp.link_ms();
  out.options.assign(resp.options().begin(), resp.options().end());
  return out;
}

Result<Stats> Client::GetStats() {
  v1::Stats resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::GetStats, v1::GetStatsRequest(), &resp)) return *e;
  return FromProto(resp);
}

Result<Stats> Client::ResetStats() {
  v1::Stats resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::ResetStats, v1::GetStatsRequest(), &resp)) return *e;
  return FromProto(resp);
}

Result<Explanation> Client::Explain(const Spec& spec, Formats format) {
  if (auto e = CheckFamilyOptions(spec, "spec")) return *e;
  v1::SpecializeRequest req;
  *req.mutable_spec() = ToProto(spec);
  SetFormats(format, &req);
  req.set_client(impl_->options.client_name);
  v1::ExplainResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Explain, req, &resp)) return *e;
  Explanation out;
  out.key = resp.key();
  out.cached = resp.cached();
  for (const auto& c : resp.components())
    out.components.push_back({c.name(), c.value(), c.digest()});
  for (const auto& o : resp.others()) {
    out.others.push_back({o.key(),
                          std::vector<std::string>(o.differing().begin(), o.differing().end()),
                          o.created_at()});
  }
  if (resp.has_auto_choice()) {
    const v1::AutoExplanation& a = resp.auto_choice();
    AutoExplanation x;
    x.choice = FromProto(a.choice());
    x.eligible.assign(a.eligible().begin(), a.eligible().end());
    x.filtered_out.assign(a.filtered_out().begin(), a.filtered_out().end());
    x.baseline = a.baseline();
    x.dtype_size = a.dtype_size();
    x.threads = a.threads();
    x.items_per_thread = a.items_per_thread();
    x.measured_method = a.measured_method();
    x.table_arch = a.table_arch();
    x.rule = a.rule();
    x.cell_family = a.cell().family();
    x.cell_method = a.cell().method();
    x.cell_run = a.cell().run();
    x.cell_choice = a.cell().choice();
    x.cell_dtype_size = a.cell().dtype_size();
    x.cell_threads = a.cell().threads();
    x.cell_items_per_thread = a.cell().items_per_thread();
    x.distance = a.distance();
    for (const auto& m : a.measured()) {
      x.measured.push_back(
          {m.algorithm(), m.median_gbps(), m.min_gbps(), m.max_gbps(), m.n(), m.eligible()});
    }
    out.auto_choice = std::move(x);
  }
  return out;
}

Result<std::vector<CacheEntry>> Client::ListEntries(const CacheFilter& filter, uint32_t limit,
                                                    bool with_specs) {
  v1::ListEntriesRequest req;
  *req.mutable_filter() = ToProto(filter);
  req.set_limit(limit);
  req.set_with_specs(with_specs);
  v1::ListEntriesResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::ListEntries, req, &resp)) return *e;
  std::vector<CacheEntry> out;
  for (const auto& e : resp.entries()) {
    CacheEntry entry;
    entry.key = e.key();
    entry.family = e.family();
    entry.dtype = e.dtype();
    entry.arch = e.arch();
    entry.raw_bytes = e.raw_bytes();
    entry.stored_bytes = e.stored_bytes();
    entry.created_at = e.created_at();
    entry.last_access = e.last_access();
    for (const auto& s : e.specs()) entry.specs.push_back(FromProto(s));
    entry.format = e.format() == v1::FORMAT_BITCODE ? Formats::kBitcode : Formats::kLtoIr;
    out.push_back(std::move(entry));
  }
  return out;
}

Result<uint64_t> Client::Purge(const CacheFilter& filter, bool all) {
  v1::PurgeRequest req;
  *req.mutable_filter() = ToProto(filter);
  req.set_all(all);
  v1::PurgeResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Purge, req, &resp)) return *e;
  return resp.entries_removed();
}

Result<VerifyReport> Client::Verify() {
  v1::VerifyResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Verify, v1::VerifyRequest(), &resp)) return *e;
  return VerifyReport{resp.entries_checked(), resp.blobs_checked(), resp.bad_removed(),
                      std::vector<std::string>(resp.bad_keys().begin(), resp.bad_keys().end()),
                      resp.totals_corrected()};
}

Result<Catalog> Client::GetCatalog() {
  return GetCatalog("");
}

Result<Catalog> Client::GetCatalog(const std::string& cccl) {
  v1::CatalogRequest req;
  req.set_cccl(cccl);
  v1::CatalogResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Catalog, req, &resp)) return *e;
  return FromProto(resp);
}

Result<VacuumReport> Client::Vacuum() {
  v1::VacuumResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Vacuum, v1::VacuumRequest(), &resp)) return *e;
  return VacuumReport{resp.file_bytes_before(), resp.file_bytes_after()};
}

namespace {

// grpc.health.v1's two messages on the wire. The client encodes them itself rather than linking
// generated code for health.proto: a frontend that embeds this library may link its own copy
// of that code, and protobuf aborts a process that registers one .proto file twice.
//   HealthCheckRequest  { string service = 1; }   HealthCheckResponse { ServingStatus status = 1; }
std::string EncodeHealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;  // proto3: the default is not written
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  google::protobuf::internal::WireFormatLite::WriteString(1, service, &coded);
  coded.Trim();
  return out;
}

// The status field of a HealthCheckResponse; nullopt when the bytes are not one.
std::optional<int> DecodeHealthStatus(const std::string& in) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(in.data()),
                                               static_cast<int>(in.size()));
  int status = 0;  // proto3: an absent field is UNKNOWN
  while (const uint32_t tag = coded.ReadTag()) {
    if (tag == WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_VARINT)) {
      uint32_t v = 0;
      if (!coded.ReadVarint32(&v)) return std::nullopt;
      status = static_cast<int>(v);
    } else if (!WireFormatLite::SkipField(&coded, tag)) {
      return std::nullopt;
    }
  }
  if (!coded.ConsumedEntireMessage()) return std::nullopt;
  return status;
}

}  // namespace

Result<HealthStatus> Client::Health(const std::string& service) {
  if (impl_->setup_error) return *impl_->setup_error;
  if (auto e = impl_->CheckSocket()) return *e;
  grpc::ClientContext ctx;
  std::string bytes;
  const grpc::Status s = impl_->GenericCall("/grpc.health.v1.Health/Check",
                                            EncodeHealthRequest(service), &ctx, &bytes);
  if (!s.ok()) {
    Error e = FromGrpc(s, ctx, impl_->where());
    // The health service is gRPC's own: its answers carry no coopd trailer.
    if (e.code != ErrorCode::kUnavailable) e.from_server = true;
    if (e.code == ErrorCode::kNotFound) {
      e.message = "coopd has no service \"" + service + "\" (ask for \"\" or \"coop.v1.Coop\")";
    }
    return e;
  }
  const std::optional<int> status = DecodeHealthStatus(bytes);
  if (!status || *status < 0 || *status > 3) {
    Error e;
    e.code = ErrorCode::kInternal;
    e.message = "the health service's answer is not a HealthCheckResponse";
    e.from_server = true;
    return e;
  }
  return static_cast<HealthStatus>(*status);
}

Result<bool> Client::Stop() {
  if (impl_->setup_error) return *impl_->setup_error;
  if (auto e = impl_->CheckSocket()) return *e;
  grpc::ClientContext ctx;
  std::string reply;
  // Served outside coop.proto (server/rpc/stop_service.h): an empty request and reply.
  const grpc::Status s = impl_->GenericCall("/coop.v1.Lifecycle/Stop", "", &ctx, &reply);
  if (!s.ok()) {
    Error e = FromGrpc(s, ctx, impl_->where());
    if (e.code == ErrorCode::kUnimplemented) {
      e.message =
          "this coopd has no Stop call (it is older than coopctl stop): stop it with "
          "SIGTERM or systemctl stop";
    }
    return e;
  }
  return true;
}

std::optional<Error> ClientAccess::Specialize(Client& client, v1::SpecializeRequest request,
                                              v1::SpecializeResponse* response) {
  return client.impl_->SpecializeToMessage(*client.impl_->specialize_method, std::move(request),
                                           response);
}

std::optional<Error> ClientAccess::SpecializeBundle(Client& client,
                                                    v1::SpecializeBundleRequest request,
                                                    v1::SpecializeResponse* response) {
  return client.impl_->SpecializeToMessage(*client.impl_->bundle_method, std::move(request),
                                           response);
}

std::optional<Error> ClientAccess::Link(Client& client, v1::LinkRequest request,
                                        v1::LinkResponse* response) {
  request.set_client(client.impl_->options.client_name);
  return client.impl_->Unary(&v1::Coop::Stub::Link, request, response);
}

std::optional<Error> ClientAccess::Catalog(Client& client, v1::CatalogResponse* response) {
  return client.impl_->Unary(&v1::Coop::Stub::Catalog, v1::CatalogRequest(), response);
}

std::optional<Error> ClientAccess::GetStats(Client& client, v1::Stats* response) {
  return client.impl_->Unary(&v1::Coop::Stub::GetStats, v1::GetStatsRequest(), response);
}

const PlanRegion* PlanResult::Find(const std::string& name) const {
  for (const auto* list : {&uses, &reservations}) {
    for (const PlanRegion& r : *list) {
      if (r.name == name) return &r;
    }
  }
  return nullptr;
}

Result<PlanResult> Client::Plan(const PlanRequest& request) {
  v1::PlanRequest req;
  for (const PlanUse& u : request.uses) {
    v1::PlanUse* pu = req.add_uses();
    pu->set_name(u.name);
    if (u.spec) {
      if (auto e = CheckFamilyOptions(
              *u.spec, "uses[" + std::to_string(req.uses_size() - 1) + "] \"" + u.name + "\"")) {
        return *e;
      }
      *pu->mutable_spec() = ToProto(*u.spec);
    } else {
      pu->mutable_temp_storage()->set_bytes(u.bytes);
      pu->mutable_temp_storage()->set_align(u.align);
    }
    pu->set_first(u.first);
    pu->set_last(u.last);
    pu->set_count(u.count);
  }
  for (const PlanReservation& r : request.reservations) {
    v1::PlanReservation* pr = req.add_reservations();
    pr->set_name(r.name);
    pr->set_bytes(r.bytes);
    pr->set_align(r.align);
    pr->set_count(r.count);
  }
  req.set_base_offset(request.base_offset);
  req.set_client(impl_->options.client_name);
  v1::PlanResponse resp;
  if (auto e = impl_->Unary(&v1::Coop::Stub::Plan, req, &resp)) return *e;
  PlanResult out;
  for (const auto& r : resp.reservations()) out.reservations.push_back(FromProto(r));
  for (const auto& r : resp.uses()) out.uses.push_back(FromProto(r));
  out.dynamic_shared_bytes = resp.dynamic_shared_bytes();
  out.base_align = resp.base_align();
  out.reserved_bytes = resp.reserved_bytes();
  out.no_reuse_bytes = resp.no_reuse_bytes();
  return out;
}

}  // namespace coop
