// proto_convert.cc: the client's conversions between coop/client.h's structs and coop.proto's
// messages (proto_convert.h), and the names of coop/client.h's enums (ErrorCodeName, OriginName,
// HealthStatusName).
#include "proto_convert.h"

#include <vector>

namespace coop::internal {
namespace {

void UserOperatorToProto(const UserOperator& in, v1::UserOperator* u) {
  u->set_name(in.name);
  u->set_source(in.source);
  u->set_ltoir(in.ltoir);
  for (const auto& d : in.operand_dtypes) u->add_operand_dtypes(d);
  u->set_result_dtype(in.result_dtype);
  u->set_stateful(in.stateful);
  u->set_digest(in.digest);
  u->set_commutative(in.commutative);
  u->set_by_pointer(in.by_pointer);
}

UserOperator UserOperatorFromProto(const v1::UserOperator& u) {
  UserOperator out;
  out.name = u.name();
  out.operand_dtypes.assign(u.operand_dtypes().begin(), u.operand_dtypes().end());
  out.result_dtype = u.result_dtype();
  out.stateful = u.stateful();
  out.digest = u.digest();
  out.commutative = u.commutative();
  out.by_pointer = u.by_pointer();
  return out;
}

// The options messages a spec sets fields in, by their proto names.
std::vector<const char*> FamilyOptionsSet(const Spec& s) {
  std::vector<const char*> set;
  if (s.scan.with_aggregate) set.push_back("scan");
  if (s.exchange.warp_time_slicing) set.push_back("exchange");
  if (!s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0) {
    set.push_back("radix_sort");
  }
  if (!s.merge_sort.value_dtype.empty()) set.push_back("merge_sort");
  if (!s.top_k.value_dtype.empty() || s.top_k.valid_items) set.push_back("top_k");
  if (s.histogram.bins != 0) set.push_back("histogram");
  if (s.run_length_decode.decoded_items_per_thread != 0) set.push_back("run_length_decode");
  if (s.radix_rank.radix_bits != 0) set.push_back("radix_rank");
  return set;
}

}  // namespace

AlgorithmChoice FromProto(const v1::AlgorithmChoice& c) {
  return {c.requested(), c.chosen(), c.reason(), c.table_version(), c.table_digest()};
}

std::optional<Error> CheckFamilyOptions(const Spec& s, const std::string& where) {
  const auto set = FamilyOptionsSet(s);
  if (set.size() <= 1) return std::nullopt;
  std::string names;
  for (const char* n : set) names += std::string(names.empty() ? "" : ", ") + n;
  return Error{ErrorCode::kInvalidArgument,
               where + ": family options set in " + names +
                   "; a spec takes one options message, the one its family's catalog entry "
                   "names (family_options)",
               false, "", ""};
}

v1::PrimitiveSpec ToProto(const Spec& s) {
  v1::PrimitiveSpec p;
  p.set_family(s.family);
  p.set_method(s.method);
  p.set_dtype(s.dtype);
  if (s.block.x != 0 || s.block.y > 1 || s.block.z > 1) {
    p.mutable_block()->set_x(s.block.x);
    p.mutable_block()->set_y(s.block.y);
    p.mutable_block()->set_z(s.block.z);
  }
  p.set_items_per_thread(s.items_per_thread);
  p.set_algorithm(s.algorithm);
  if (!s.user_op.name.empty()) {
    UserOperatorToProto(s.user_op, p.mutable_op()->mutable_user());
  } else if (!s.op.empty()) {
    p.mutable_op()->set_builtin(s.op);
  }
  p.set_warp_threads(s.warp_threads);
  p.set_arch(s.arch);
  switch (s.calling_convention) {
    case CallingConvention::kC:
      p.set_calling_convention(v1::CALLING_CONVENTION_C);
      break;
    case CallingConvention::kNumba:
      p.set_calling_convention(v1::CALLING_CONVENTION_NUMBA);
      break;
    default:
      break;
  }
  // At most one of these is set (CheckFamilyOptions); the oneof would keep only the last.
  if (s.scan.with_aggregate) p.mutable_scan()->set_with_aggregate(true);
  if (s.exchange.warp_time_slicing) p.mutable_exchange()->set_warp_time_slicing(true);
  if (!s.radix_sort.value_dtype.empty() || s.radix_sort.radix_bits != 0) {
    p.mutable_radix_sort()->set_value_dtype(s.radix_sort.value_dtype);
    p.mutable_radix_sort()->set_radix_bits(s.radix_sort.radix_bits);
  }
  if (!s.merge_sort.value_dtype.empty()) {
    p.mutable_merge_sort()->set_value_dtype(s.merge_sort.value_dtype);
  }
  if (!s.top_k.value_dtype.empty()) p.mutable_top_k()->set_value_dtype(s.top_k.value_dtype);
  if (s.top_k.valid_items) p.mutable_top_k()->set_valid_items(true);
  if (s.histogram.bins != 0) p.mutable_histogram()->set_bins(s.histogram.bins);
  if (s.run_length_decode.decoded_items_per_thread != 0) {
    p.mutable_run_length_decode()->set_decoded_items_per_thread(
        s.run_length_decode.decoded_items_per_thread);
  }
  if (s.radix_rank.radix_bits != 0) p.mutable_radix_rank()->set_radix_bits(s.radix_rank.radix_bits);
  if (!s.prefix_callback.name.empty()) {
    UserOperatorToProto(s.prefix_callback, p.mutable_prefix_callback());
  }
  if (s.user_type_size != 0 || s.user_type_align != 0) {
    p.mutable_user_type()->set_size(s.user_type_size);
    p.mutable_user_type()->set_align(s.user_type_align);
  }
  p.set_cccl(s.cccl);
  return p;
}

Spec FromProto(const v1::PrimitiveSpec& p) {
  Spec s;
  s.family = p.family();
  s.method = p.method();
  s.dtype = p.dtype();
  s.block = {p.block().x(), p.block().y(), p.block().z()};
  s.items_per_thread = p.items_per_thread();
  s.algorithm = p.algorithm();
  s.op = p.op().builtin();
  if (p.op().has_user()) s.user_op = UserOperatorFromProto(p.op().user());
  if (p.has_prefix_callback()) s.prefix_callback = UserOperatorFromProto(p.prefix_callback());
  s.warp_threads = p.warp_threads();
  s.arch = p.arch();
  s.calling_convention = p.calling_convention() == v1::CALLING_CONVENTION_NUMBA
                             ? CallingConvention::kNumba
                             : CallingConvention::kC;
  s.scan.with_aggregate = p.scan().with_aggregate();
  s.exchange.warp_time_slicing = p.exchange().warp_time_slicing();
  s.radix_sort.value_dtype = p.radix_sort().value_dtype();
  s.radix_sort.radix_bits = p.radix_sort().radix_bits();
  s.merge_sort.value_dtype = p.merge_sort().value_dtype();
  s.top_k.value_dtype = p.top_k().value_dtype();
  s.top_k.valid_items = p.top_k().valid_items();
  s.histogram.bins = p.histogram().bins();
  s.run_length_decode.decoded_items_per_thread = p.run_length_decode().decoded_items_per_thread();
  s.radix_rank.radix_bits = p.radix_rank().radix_bits();
  s.user_type_size = p.user_type().size();
  s.user_type_align = p.user_type().align();
  s.cccl = p.cccl();
  return s;
}

Toolchain FromProto(const v1::Toolchain& t) {
  Toolchain out;
  out.nvrtc_version = t.nvrtc_version();
  out.nvjitlink_version = t.nvjitlink_version();
  out.cccl_version = t.cccl_version();
  out.header_digest = t.header_digest();
  out.clang_version = t.clang_version();
  out.cccl_name = t.cccl_name();
  return out;
}

CcclInfo FromProto(const v1::CcclInfo& c) {
  return {c.name(),
          c.version(),
          c.include(),
          c.digest(),
          c.is_default(),
          c.origin(),
          std::vector<std::string>(c.unavailable().begin(), c.unavailable().end()),
          c.probe()};
}

Catalog FromProto(const v1::CatalogResponse& resp) {
  auto strings = [](const auto& field) {
    return std::vector<std::string>(field.begin(), field.end());
  };
  Catalog out;
  for (const auto& f : resp.families()) {
    CatalogFamily family;
    family.name = f.name();
    family.description = f.description();
    for (const auto& m : f.methods())
      family.methods.push_back({m.name(), m.needs_op(), m.description(), m.op_kind()});
    family.algorithms = strings(f.algorithms());
    family.default_algorithm = f.default_algorithm();
    family.warp = f.warp();
    family.max_items_per_thread = f.max_items_per_thread();
    family.scan_options = f.scan_options();
    family.warp_multiple_algorithms = strings(f.warp_multiple_algorithms());
    family.exchange_options = f.exchange_options();
    family.family_options = f.family_options();
    family.dtypes = strings(f.dtypes());
    family.power_of_two_threads = f.power_of_two_threads();
    family.available = f.available();
    family.requires = f.requires();
    family.auto_algorithms = strings(f.auto_algorithms());
    family.auto_baseline = f.auto_baseline();
    family.auto_measured_method = f.auto_measured_method();
    out.families.push_back(std::move(family));
  }
  out.dtypes = strings(resp.dtypes());
  out.builtin_ops = strings(resp.builtin_ops());
  for (const auto& k : resp.op_kinds()) {
    out.op_kinds.push_back({k.name(), k.signature(), strings(k.builtins())});
  }
  out.archs = strings(resp.archs());
  out.calling_conventions = strings(resp.calling_conventions());
  out.bitcode_archs = strings(resp.bitcode_archs());
  out.bitcode_unavailable = resp.bitcode_unavailable();
  for (const auto& c : resp.cccls()) out.cccls.push_back(FromProto(c));
  out.cccl = resp.cccl();
  return out;
}

Origin FromProto(v1::Origin o) {
  switch (o) {
    case v1::ORIGIN_COMPILED:
      return Origin::kCompiled;
    case v1::ORIGIN_MEMORY:
      return Origin::kMemory;
    case v1::ORIGIN_DISK:
      return Origin::kDisk;
    case v1::ORIGIN_REMOTE:
      return Origin::kRemote;
    default:
      return Origin::kUnspecified;
  }
}

Stats FromProto(const v1::Stats& resp) {
  Stats out;
  out.requests = resp.requests();
  out.invalid_requests = resp.invalid_requests();
  out.memory_hits = resp.memory_hits();
  out.disk_hits = resp.disk_hits();
  out.misses = resp.misses();
  out.compiles = resp.compiles();
  out.compile_failures = resp.compile_failures();
  out.compile_ms_total = resp.compile_ms_total();
  out.memory_entries = resp.memory_entries();
  out.memory_bytes = resp.memory_bytes();
  out.disk_entries = resp.disk_entries();
  out.disk_bytes = resp.disk_bytes();
  out.disk_write_failures = resp.disk_write_failures();
  out.uptime_s = resp.uptime_s();
  out.toolchain = FromProto(resp.toolchain());
  out.cache_path = resp.cache_path();
  out.pch_warm_compiles = resp.pch_warm_compiles();
  out.joined_requests = resp.joined_requests();
  out.worker_restarts = resp.worker_restarts();
  out.worker_crashes = resp.worker_crashes();
  out.compile_timeouts = resp.compile_timeouts();
  out.queue_depth = resp.queue_depth();
  out.workers = resp.workers();
  out.workers_busy = resp.workers_busy();
  out.compile_ms_p50 = resp.compile_ms_p50();
  out.compile_ms_p90 = resp.compile_ms_p90();
  out.compile_ms_p99 = resp.compile_ms_p99();
  for (const auto& w : resp.worker_status()) {
    out.worker_status.push_back({w.pid(), w.busy(), w.jobs(), w.header_set()});
  }
  out.links = resp.links();
  out.link_failures = resp.link_failures();
  out.link_hits = resp.link_hits();
  out.bundles = resp.bundles();
  for (const auto& t : resp.tiers()) {
    out.tiers.push_back({t.name(), t.hits(), t.misses(), t.entries(), t.bytes(), t.raw_bytes(),
                         t.budget_bytes(), t.evictions(), t.corruptions(), t.write_failures(),
                         t.degraded(), t.evicting()});
  }
  out.corruptions = resp.corruptions();
  out.evictions = resp.evictions();
  out.cache_degraded = resp.cache_degraded();
  out.bitcode_compiles = resp.bitcode_compiles();
  out.remote_hits = resp.remote_hits();
  if (resp.has_remote()) {
    const auto& r = resp.remote();
    out.remote.configured = true;
    out.remote.url = r.url();
    out.remote.cluster = r.cluster();
    out.remote.read_only = r.read_only();
    out.remote.healthy = r.healthy();
    out.remote.hits = r.hits();
    out.remote.misses = r.misses();
    out.remote.errors = r.errors();
    out.remote.timeouts = r.timeouts();
    out.remote.reconnects = r.reconnects();
    out.remote.corruptions = r.corruptions();
    out.remote.writes = r.writes();
    out.remote.write_failures = r.write_failures();
    out.remote.writes_skipped = r.writes_skipped();
    out.remote.writes_dropped = r.writes_dropped();
    out.remote.redirects = r.redirects();
    out.remote.slot_refreshes = r.slot_refreshes();
    out.remote.leases_acquired = r.leases_acquired();
    out.remote.lease_waits = r.lease_waits();
    out.remote.lease_wait_hits = r.lease_wait_hits();
    out.remote.lease_wait_timeouts = r.lease_wait_timeouts();
    out.remote.lease_takeovers = r.lease_takeovers();
    out.remote.leases_lost = r.leases_lost();
  }
  for (const auto& l : resp.listeners()) {
    out.listeners.push_back(
        {l.address(), l.tls(), l.client_certificates(), l.tokens(), l.insecure(), l.mode()});
  }
  out.unauthenticated_calls = resp.unauthenticated_calls();
  out.denied_calls = resp.denied_calls();
  out.client_in_flight_refusals = resp.client_in_flight_refusals();
  out.client_rate_refusals = resp.client_rate_refusals();
  out.undecodable_requests = resp.undecodable_requests();
  out.oversized_requests = resp.oversized_requests();
  out.requests_cancelled = resp.requests_cancelled();
  out.compiles_cancelled = resp.compiles_cancelled();
  out.quota_compile_refusals = resp.quota_compile_refusals();
  out.quota_bytes_refusals = resp.quota_bytes_refusals();
  for (const auto& t : resp.tuning_tables()) {
    out.tuning_tables.push_back(
        {t.arch(), t.version(), t.digest(), t.source(), t.device(), t.cells(), t.placeholder()});
  }
  out.tuning_digest = resp.tuning_digest();
  out.auto_resolutions = resp.auto_resolutions();
  out.memo_hits = resp.memo_hits();
  out.memo_misses = resp.memo_misses();
  out.memo_entries = resp.memo_entries();
  out.memo_evictions = resp.memo_evictions();
  out.digest_only_replies = resp.digest_only_replies();
  out.bytes_omitted = resp.bytes_omitted();
  for (const auto& c : resp.cccls()) out.cccls.push_back(FromProto(c));
  return out;
}

v1::CacheFilter ToProto(const CacheFilter& f) {
  v1::CacheFilter out;
  out.set_family(f.family);
  out.set_dtype(f.dtype);
  out.set_arch(f.arch);
  return out;
}

PlanRegion FromProto(const v1::PlanRegion& r) {
  return {r.name(),  r.offset(), r.bytes(), r.align(), r.padding(),
          r.count(), r.stride(), r.first(), r.last(),  r.artifact_key()};
}

}  // namespace coop::internal

namespace coop {

const char* ErrorCodeName(ErrorCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

const char* OriginName(Origin origin) {
  switch (origin) {
    case Origin::kCompiled:
      return "compiled";
    case Origin::kMemory:
      return "memory";
    case Origin::kDisk:
      return "disk";
    case Origin::kRemote:
      return "remote";
    default:
      return "unspecified";
  }
}

const char* HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

}  // namespace coop
