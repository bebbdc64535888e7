// coop/client.h: the C++ client of coopd, for JIT frontends.
//
// This header and the others under coop/ are the whole public API. They expose no gRPC or
// protobuf types, so a frontend can embed the client without those headers.
//
//   coop::Client client;                              // default socket (coop/paths.h)
//   coop::Spec spec;
//   spec.family = "block_reduce"; spec.dtype = "float32"; spec.block = {256};
//   spec.arch = "sm_90";
//   coop::Result<coop::Artifact> a = client.Specialize(spec);
//   if (!a) { std::cerr << a.error().message; ... }
//   // a->ltoir: link with nvJitLink; a->entries[0].declaration: paste into the kernel source;
//   // a->temp_storage.bytes/align: reserve shared memory.
//   // client.Specialize(spec, coop::Formats::kBitcode)->bitcode.data: LLVM bitcode (clang),
//   // for frontends that link bitcode libraries (CuTe DSL).
//
// Thread safety: a Client may be used from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace coop {

// The codes of google.rpc.Code, which coopd uses with these meanings:
//   kInvalidArgument: the request is wrong (the message names the field and allowed values);
//   kUnavailable: coopd is not reachable or busy, retry;  kDeadlineExceeded: a compile timed out;
//   kFailedPrecondition: the daemon's toolchain is missing;  kResourceExhausted: a limit was hit;
//   kInternal: the compiler failed on a valid request (the message holds its log).
enum class ErrorCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "INVALID_ARGUMENT" etc.
const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kUnknown;
  std::string message;
  // True when coopd itself produced this error (it answered the call); false when the call
  // never reached a running coopd (no socket, connection refused, deadline before an answer).
  // Only a kUnavailable that is not from the server says "coopd is not reachable".
  bool from_server = false;
  // coopd bounds status messages (they travel in gRPC's metadata): an error whose message is
  // longer, such as a compiler log of megabytes, has `message` = its first lines and how many
  // bytes were left out. With ClientOptions::full_errors, `details` holds the whole message
  // then; otherwise, and for every error that was not cut, it is empty.
  std::string details;
  // The request id coopd gave the call (the x-request-id trailer): its log lines about the call
  // carry it ("[req ID]", or request_id with --log-format json). Empty when coopd did not answer.
  std::string request_id;
  // The whole message: `details` when set, else `message`.
  const std::string& full_message() const { return details.empty() ? message : details; }
};

// A value or an Error. `if (r)` tests for a value; `*r` / `r->` reach it; `r.error()` the error.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  explicit operator bool() const { return v_.index() == 0; }
  bool ok() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Dim3 {
  uint32_t x = 0;
  uint32_t y = 1;
  uint32_t z = 1;
};

enum class CallingConvention { kDefault, kC, kNumba };

enum class Origin { kUnspecified, kCompiled, kMemory, kDisk, kRemote };

// An artifact's bytes (LTO-IR, bitcode): immutable, and shared by every copy instead of
// copied. Copying a Bytes, or an Artifact, copies a reference; the bytes live as long as any
// copy does. The client hands out the bytes it received without copying them again: a memory
// hit's LTO-IR is the reply's own buffer, and an artifact served from the client's artifact
// cache (ClientOptions::artifact_cache_*) shares the cached one. Reads like a std::string_view
// (data, size, empty, begin, end, comparisons); converts to a std::string (a copy: str(), or
// implicitly, for code that takes strings).
class Bytes {
 public:
  Bytes() = default;
  // Takes the string's bytes (no copy).
  Bytes(std::string bytes);  // NOLINT(google-explicit-constructor): a string is bytes
  Bytes(const char* text) : Bytes(std::string(text)) {}  // NOLINT(google-explicit-constructor)
  // A view of memory that `owner` keeps alive (the view must stay valid while owner lives).
  Bytes(std::shared_ptr<const void> owner, std::string_view view)
      : owner_(std::move(owner)), view_(view) {}

  const char* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  const char* begin() const { return view_.data(); }
  const char* end() const { return view_.data() + view_.size(); }
  char operator[](size_t i) const { return view_[i]; }
  std::string_view view() const { return view_; }
  operator std::string_view() const { return view_; }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view_); }
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  // Drops this reference (the bytes are freed with the last one).
  void clear() { *this = Bytes(); }

  friend bool operator==(const Bytes& a, const Bytes& b) { return a.view_ == b.view_; }
  friend bool operator==(const Bytes& a, std::string_view b) { return a.view_ == b; }
  friend bool operator==(std::string_view a, const Bytes& b) { return a == b.view_; }
  friend bool operator==(const Bytes& a, const std::string& b) { return a.view_ == b; }
  friend bool operator==(const std::string& a, const Bytes& b) { return a == b.view_; }
  friend bool operator==(const Bytes& a, const char* b) { return a.view_ == b; }
  friend bool operator!=(const Bytes& a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, std::string_view b) { return !(a == b); }
  friend bool operator!=(std::string_view a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, const std::string& b) { return !(a == b); }
  friend bool operator!=(const std::string& a, const Bytes& b) { return !(a == b); }
  friend bool operator!=(const Bytes& a, const char* b) { return !(a == b); }

 private:
  std::shared_ptr<const void> owner_;
  std::string_view view_;
};
// For test frameworks (GoogleTest finds it): the size and the first bytes in hex, not 135 KB of
// binary. To write the bytes themselves: out.write(bytes.data(), bytes.size()).
void PrintTo(const Bytes& bytes, std::ostream* out);

// A frontend-supplied operator (proto coop.v1.UserOperator has the whole contract): a
// __device__ function `name` given as CUDA C++ source, or LTO-IR defining extern "C" `name`.
struct UserOperator {
  std::string name;
  std::string source;                       // or
  std::string ltoir;                        // bytes
  std::vector<std::string> operand_dtypes;  // empty: the spec's dtype, twice
  std::string result_dtype;                 // empty: what the method needs
  bool stateful = false;  // takes a leading void* state; entries then take `void* op_state`
  std::string digest;     // resolved specs: coopd's content digest (requests leave it empty)
  // op(a, b) == op(b, a): lets block_reduce's algorithm "auto" consider
  // raking_commutative_only. Not part of the key (resolved specs drop it).
  bool commutative = false;
  // LTO-IR operators: `void name([void* state,] R* result, const T* a, const T* b)` instead of
  // by value (what Numba compiles for records; needed on user types). Part of the digest.
  bool by_pointer = false;
};

// The messages of PrimitiveSpec's `family_options` oneof (proto/coop/v1/coop.proto has their
// whole contract). All-default means "not set".
struct ScanOptions {
  bool with_aggregate = false;  // also emit the `_aggregate` entry
};
struct ExchangeOptions {
  bool warp_time_slicing = false;  // CUB's WARP_TIME_SLICING
};
struct RadixSortOptions {
  std::string value_dtype;  // values sorted along with the keys; empty sorts keys only
  uint32_t radix_bits = 0;  // bits per pass, 1..8; 0 means 4
};
struct MergeSortOptions {
  std::string value_dtype;  // values sorted along with the keys; empty sorts keys only
};
struct TopKOptions {
  std::string value_dtype;  // values selected along with the keys; empty selects keys only
};
struct HistogramOptions {
  uint32_t bins = 0;  // number of counters (required, >= 1)
};
struct RunLengthDecodeOptions {
  // decoded items per thread per window (required, 1..64); items_per_thread is the runs per
  // thread
  uint32_t decoded_items_per_thread = 0;
};
struct RadixRankOptions {
  uint32_t radix_bits = 0;  // the digit's bits, 1..8 (required)
};

// A primitive specialization request; see proto/coop/v1/coop.proto for every field's allowed
// values. Empty / zero fields take coopd's documented defaults.
struct Spec {
  std::string family;  // "block_reduce", "block_scan", "warp_reduce"
  std::string method;  // "sum", "inclusive_sum", ... (empty: the family's default)
  std::string dtype;   // "float32", "int32", ...
  Dim3 block;          // block_* families
  uint32_t items_per_thread = 0;
  std::string algorithm;  // empty: CUB's default
  std::string op;         // builtin operator for methods that take one: "sum", "max", ...
  UserOperator user_op;   // instead of `op` when user_op.name is set
  // block_scan *_prefix methods: a stateful `T name(void* state, T block_aggregate)` instead
  // of the running total, when prefix_callback.name is set (the entry takes void* prefix_state).
  UserOperator prefix_callback;
  uint32_t warp_threads = 0;  // warp_* families; 0 means 32
  std::string arch;           // "sm_90"
  CallingConvention calling_convention = CallingConvention::kDefault;
  // dtype "user": an opaque struct of this many bytes and this alignment (power of two, 0 = 1).
  uint32_t user_type_size = 0;
  uint32_t user_type_align = 0;
  // Family options, one member per message of the proto's `family_options` oneof. A family
  // takes the one its Catalog entry names (CatalogFamily::family_options); set fields in at
  // most one of them (a spec that sets two is refused with INVALID_ARGUMENT before it is sent).
  ScanOptions scan;
  ExchangeOptions exchange;
  RadixSortOptions radix_sort;
  MergeSortOptions merge_sort;
  TopKOptions top_k;
  HistogramOptions histogram;
  RunLengthDecodeOptions run_length_decode;
  RadixRankOptions radix_rank;
};

struct Entry {
  std::string symbol;
  std::string declaration;
  std::string description;
};

struct Toolchain {
  std::string nvrtc_version;
  std::string nvjitlink_version;
  std::string cccl_version;
  std::string header_digest;
  // The clang that made the bitcode (artifacts carrying bitcode; in Stats, the daemon's clang, or
  // empty when it has none): "Debian clang version 22.1.8 (1~deb12u1) at /usr/bin/clang++-22".
  std::string clang_version;
};

// The formats a request asks for. LTO-IR (NVRTC -dlto) links with nvJitLink; LLVM bitcode
// (clang, the same unit compiled as CUDA) links as a bitcode library (CuTe DSL). Each is a cache
// entry of its own; the entries, their declarations and the temp storage are the same for both.
// Bitcode needs clang on the daemon's machine (kFailedPrecondition names the package without).
enum class Formats { kLtoIr, kBitcode, kBoth };

// Code an artifact needs at link time besides its own (one per user operator).
struct ArtifactLinkInput {
  std::string symbol;  // the extern "C" function it defines
  std::string key;     // cache key of the compiled operator; empty for frontend-supplied LTO-IR
  Bytes ltoir;         // when the artifact carries LTO-IR
  Bytes bitcode;       // when the artifact carries bitcode (the operator by clang)
  std::string bitcode_key;  // cache key of that bitcode
};

// An artifact's LLVM bitcode (requested with Formats::kBitcode or kBoth).
struct BitcodeModule {
  std::string key;  // its own cache key
  Bytes data;       // empty when not requested
  Origin origin = Origin::kUnspecified;
  double compile_ms = 0;
  std::string compile_log;
  std::string pch_status;  // clang's precompiled header: "created", "used", "off", ...
};
const char* OriginName(Origin origin);  // "compiled", "memory", "disk", "remote"

// One spec's share of an artifact (a bundle has several, in request order).
// What algorithm "auto" chose and why (docs/tuning.md); `requested` is empty when the spec did
// not ask for "auto".
struct AlgorithmChoice {
  std::string requested;                    // "auto"
  std::string chosen;                       // the concrete algorithm (the resolved spec's)
  std::string reason;                       // the table cell and its numbers, or the fallback rule
  std::string table_version, table_digest;  // empty: no table for the arch
};

struct ArtifactPart {
  Spec spec;  // resolved: defaults filled in
  std::vector<Entry> entries;
  uint64_t temp_storage_bytes = 0;
  uint64_t temp_storage_align = 0;
  AlgorithmChoice algorithm_choice;  // when this part's spec asked for "auto"
};

// key, origin, compile_ms, compile_log and pch_status describe the LTO-IR when the artifact
// carries it, else the bitcode (equal to bitcode's then).
struct Artifact {
  std::string key;
  Bytes ltoir;                 // empty when only bitcode was requested
  std::vector<Entry> entries;  // every part's entries
  // For a single-spec artifact, parts[0]'s values (0 for a bundle: see parts).
  uint64_t temp_storage_bytes = 0;
  uint64_t temp_storage_align = 0;
  std::string arch;
  Toolchain toolchain;
  Spec spec;  // single-spec artifact: the resolved spec
  double compile_ms = 0;
  std::string compile_log;
  std::string source;
  Origin origin = Origin::kUnspecified;
  std::vector<ArtifactPart> parts;
  std::string pch_status;  // "created", "used" (warm worker), "off", ...
  double layout_ms = 0;    // the layout query's cost on top of compile_ms
  // Link these with `ltoir` (coopd's Link does so by itself).
  std::vector<ArtifactLinkInput> link_inputs;
  // Definitions of the user types the declarations name; paste them before the declarations.
  std::string type_definitions;
  BitcodeModule bitcode;             // when requested
  AlgorithmChoice algorithm_choice;  // single-spec artifact: parts[0]'s
};

enum class LinkInputKind { kLtoIr, kPtx };

struct LinkModule {
  LinkInputKind kind = LinkInputKind::kLtoIr;
  std::string name;  // for the linker log
  std::string data;  // bytes
};

struct LinkRequest {
  std::string arch;                        // "sm_90"
  std::vector<LinkModule> modules;         // the frontend's kernel(s)
  std::vector<std::string> artifact_keys;  // artifacts in coopd's cache (Artifact::key)
  std::vector<std::string> options;        // extra nvJitLink options, e.g. "-lineinfo"
  bool keep_unused_variables = false;      // default links with -optimize-unused-variables
};

struct LinkResult {
  std::string cubin;  // bytes
  std::string key;
  Origin origin = Origin::kUnspecified;
  double link_ms = 0;
  std::vector<std::string> options;  // the full nvJitLink option list used
};

// Shared-memory planning (Client::Plan): one kernel's primitives and the frontend's own regions
// laid out in its dynamic shared memory. proto/coop/v1/coop.proto (PlanRequest) and
// docs/plan.md have the whole contract.
struct PlanUse {
  std::string name;  // the caller's label, unique among uses and reservations
  // A primitive: coopd resolves its temp storage as Specialize does. Without one, `bytes` and
  // `align` (a power of two) give it.
  std::optional<Spec> spec;
  uint64_t bytes = 0;
  uint64_t align = 0;
  // Lifetime, inclusive: the caller's program points from the first call that writes the temp
  // storage to the last that reads it. Uses whose lifetimes do not overlap may share bytes.
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t count = 0;  // instances (e.g. one per logical warp); 0 means 1
};

// A region the frontend lays out itself, live for the whole kernel.
struct PlanReservation {
  std::string name;
  uint64_t bytes = 0;
  uint64_t align = 0;  // a power of two
  uint32_t count = 0;  // 0 means 1
};

struct PlanRequest {
  std::vector<PlanUse> uses;
  std::vector<PlanReservation> reservations;
  uint64_t base_offset = 0;  // bytes at the start the frontend keeps; regions go above
};

struct PlanRegion {
  std::string name;
  uint64_t offset = 0;  // from the start of the dynamic shared memory; a multiple of align
  uint64_t bytes = 0;   // the whole region (every instance)
  uint64_t align = 0;
  uint64_t padding = 0;  // alignment padding below it
  uint32_t count = 1;
  uint64_t stride = 0;  // from one instance to the next
  uint32_t first = 0;   // uses: the lifetime
  uint32_t last = 0;
  std::string artifact_key;  // uses given by spec: the artifact (Artifact::key)
};

struct PlanResult {
  std::vector<PlanRegion> reservations;  // request order
  std::vector<PlanRegion> uses;          // request order
  uint64_t dynamic_shared_bytes = 0;     // launch with this much dynamic shared memory
  uint64_t base_align = 1;      // extern __shared__ __align__(base_align) unsigned char smem[];
  uint64_t reserved_bytes = 0;  // base_offset + the reservations; the total is never less
  uint64_t no_reuse_bytes = 0;  // every region end to end; the total is never more
  // The use or reservation called `name`, or nullptr.
  const PlanRegion* Find(const std::string& name) const;
};

struct WorkerStatus {
  int pid = 0;
  bool busy = false;
  uint64_t jobs = 0;
  std::string header_set;
};

struct TierStats {
  std::string name;  // "memory", "disk"
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;      // stored (compressed, deduplicated)
  uint64_t raw_bytes = 0;  // uncompressed
  uint64_t budget_bytes = 0;
  uint64_t evictions = 0;
  uint64_t corruptions = 0;
  uint64_t write_failures = 0;
  bool degraded = false;  // the last write failed: compiling without caching
  bool evicting = false;  // over budget: the evictor is deleting least recently used entries
};

struct KeyComponent {
  std::string name;  // "schema", "canonical_request", "source", "options", "nvrtc", ...
  std::string value;
  std::string digest;
};

struct OtherKey {
  std::string key;
  std::vector<std::string> differing;  // component names
  int64_t created_at = 0;
};

// Why a spec hits or misses: its key's components, and other keys stored for the same request.
// How algorithm "auto" was resolved (proto AutoExplanation has each field's contract).
struct AutoExplanation {
  AlgorithmChoice choice;
  std::vector<std::string> eligible;      // after the spec's semantic filters
  std::vector<std::string> filtered_out;  // "striped: ..." and why
  std::string baseline;                   // CUB's default
  uint32_t dtype_size = 0, threads = 0, items_per_thread = 0;
  std::string measured_method;
  std::string table_arch;  // empty: no table for the arch
  std::string rule;        // "exact", "nearest", "no_table", "no_cells", "single"
  // The cell used (exact or nearest): its coordinates, run and the table's choice for it.
  std::string cell_family, cell_method, cell_run, cell_choice;
  uint32_t cell_dtype_size = 0, cell_threads = 0, cell_items_per_thread = 0;
  double distance = 0;  // nearest: |log2(N/Nc)| + |log2(T/Tc)|
  struct Measurement {
    std::string algorithm;
    double median_gbps = 0, min_gbps = 0, max_gbps = 0;
    uint32_t n = 0;
    bool eligible = false;
  };
  std::vector<Measurement> measured;  // every algorithm the cell measured
};

struct Explanation {
  std::string key;
  std::vector<KeyComponent> components;
  bool cached = false;
  std::vector<OtherKey> others;
  std::optional<AutoExplanation> auto_choice;  // the spec asked for algorithm "auto"
};

struct CacheFilter {
  std::string family;
  std::string dtype;
  std::string arch;
};

struct CacheEntry {
  std::string key;
  std::string family;
  std::string dtype;
  std::string arch;
  uint64_t raw_bytes = 0;
  uint64_t stored_bytes = 0;
  int64_t created_at = 0;
  int64_t last_access = 0;
  // Only from ListEntries(..., with_specs = true): each part's resolved spec (none for link
  // results and user operators; resolved specs carry no operator source) and the format.
  std::vector<Spec> specs;
  Formats format = Formats::kLtoIr;
};

struct VerifyReport {
  uint64_t entries_checked = 0;
  uint64_t blobs_checked = 0;
  uint64_t bad_removed = 0;
  std::vector<std::string> bad_keys;
  bool totals_corrected = false;  // the stored totals disagreed with the tables; rebuilt
};

struct VacuumReport {
  uint64_t file_bytes_before = 0;
  uint64_t file_bytes_after = 0;
};

struct CatalogMethod {
  std::string name;
  bool needs_op = false;
  std::string description;
  std::string op_kind;  // "binary", "comparator", "flag", "difference"; empty: takes no op
};

// A kind of operator: its signature (T is the spec's dtype) and its builtin operators.
struct CatalogOpKind {
  std::string name;       // "binary", ...
  std::string signature;  // "(T, T) -> T"
  std::vector<std::string> builtins;
};

struct CatalogFamily {
  std::string name;
  std::string description;
  std::vector<CatalogMethod> methods;  // the first is the default
  std::vector<std::string> algorithms;
  std::string default_algorithm;  // empty while algorithms is not: the caller must choose
  bool warp = false;
  uint32_t max_items_per_thread = 1;
  bool scan_options = false;
  std::vector<std::string> warp_multiple_algorithms;
  bool exchange_options = false;
  // The Spec options it accepts: "scan", "exchange", "radix_sort" (value_dtype, radix_bits),
  // "merge_sort" (value_dtype), "histogram" (histogram_bins), "run_length_decode"
  // (decoded_items_per_thread), "radix_rank" (radix_bits), "top_k" (value_dtype); empty: none.
  std::string family_options;
  std::vector<std::string> dtypes;    // the dtypes it accepts
  bool power_of_two_threads = false;  // the block's thread count must be a power of two
  // False when the daemon's CCCL headers lack the family (requests get kFailedPrecondition);
  // `requires` says what it needs ("CCCL 3.3 or newer (cub/block/block_topk.cuh)").
  bool available = true;
  std::string requires;
  // Algorithm "auto" (docs/tuning.md): what it chooses among (empty: not offered), its
  // fallback (CUB's default) and the method whose measurements decide.
  std::vector<std::string> auto_algorithms;
  std::string auto_baseline;
  std::string auto_measured_method;
};

// What this daemon accepts, from the same tables its validator uses.
struct Catalog {
  std::vector<CatalogFamily> families;
  std::vector<std::string> dtypes;
  std::vector<std::string> builtin_ops;  // the binary kind's builtins (op_kinds has every kind)
  std::vector<CatalogOpKind> op_kinds;
  std::vector<std::string> archs;
  std::vector<std::string> calling_conventions;
  // The archs a bitcode request may name; empty when bitcode is unavailable, and then
  // `bitcode_unavailable` says why.
  std::vector<std::string> bitcode_archs;
  std::string bitcode_unavailable;
};

// The farm tier (coopd --remote-cache): see coop.v1.RemoteTierStats for each counter.
struct RemoteTierStats {
  bool configured = false;  // false: coopd runs without a farm tier
  std::string url;          // password redacted
  bool cluster = false;
  bool read_only = false;
  bool healthy = false;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  uint64_t timeouts = 0;
  uint64_t reconnects = 0;
  uint64_t corruptions = 0;
  uint64_t writes = 0;
  uint64_t write_failures = 0;
  uint64_t writes_skipped = 0;
  uint64_t writes_dropped = 0;
  uint64_t redirects = 0;
  uint64_t slot_refreshes = 0;
  uint64_t leases_acquired = 0;
  uint64_t lease_waits = 0;
  uint64_t lease_wait_hits = 0;
  uint64_t lease_wait_timeouts = 0;
  uint64_t lease_takeovers = 0;
  uint64_t leases_lost = 0;
};

// One address coopd serves on (coop.v1.Listener): how it is protected.
struct Listener {
  std::string address;  // "unix:/run/coopd/coopd.sock", "tcp 0.0.0.0:7070"
  bool tls = false;
  bool client_certificates = false;  // mTLS (coopd --tls-client-ca)
  bool tokens = false;               // calls need a bearer token
  bool insecure = false;             // plaintext or unauthenticated TCP (coopd --insecure)
  std::string mode;                  // the Unix socket's: "0600", "0660 group coopd"
};

struct Stats {
  uint64_t requests = 0;
  uint64_t invalid_requests = 0;
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;
  uint64_t compiles = 0;
  uint64_t compile_failures = 0;
  double compile_ms_total = 0;
  uint64_t memory_entries = 0;
  uint64_t memory_bytes = 0;
  uint64_t disk_entries = 0;
  uint64_t disk_bytes = 0;
  uint64_t disk_write_failures = 0;
  double uptime_s = 0;
  Toolchain toolchain;
  std::string cache_path;
  // Compile engine.
  uint64_t pch_warm_compiles = 0;
  uint64_t joined_requests = 0;
  uint64_t worker_restarts = 0;
  uint64_t worker_crashes = 0;
  uint64_t compile_timeouts = 0;
  uint64_t queue_depth = 0;
  uint32_t workers = 0;
  uint32_t workers_busy = 0;
  double compile_ms_p50 = 0;
  double compile_ms_p90 = 0;
  double compile_ms_p99 = 0;
  std::vector<WorkerStatus> worker_status;
  uint64_t links = 0;
  uint64_t link_failures = 0;
  uint64_t link_hits = 0;
  uint64_t bundles = 0;
  std::vector<TierStats> tiers;
  uint64_t corruptions = 0;
  uint64_t evictions = 0;
  bool cache_degraded = false;
  uint64_t bitcode_compiles = 0;  // clang compiles (also counted in `compiles`)
  uint64_t remote_hits = 0;       // served from the farm tier
  RemoteTierStats remote;
  std::vector<Listener> listeners;
  uint64_t unauthenticated_calls = 0;  // refused: no bearer token or an unknown one
  uint64_t denied_calls = 0;           // refused: the token's role lacks what the call needs
  // Refused by the per-client limits (--client-max-in-flight, --client-rate), and requests that
  // did not decode or were over --max-message-mb.
  uint64_t client_in_flight_refusals = 0;
  uint64_t client_rate_refusals = 0;
  uint64_t undecodable_requests = 0;
  uint64_t oversized_requests = 0;
  // Requests whose caller cancelled (or whose deadline passed) while they waited for a compile,
  // and compiles and links stopped because no caller waited any more (dropped from the queue,
  // or their worker killed and restarted).
  uint64_t requests_cancelled = 0;
  uint64_t compiles_cancelled = 0;
  // Compiles refused by the per-client quotas (--quota-compiles-per-minute,
  // --quota-cache-mb-per-hour).
  uint64_t quota_compile_refusals = 0;
  uint64_t quota_bytes_refusals = 0;
  // The tuning tables algorithm "auto" reads (docs/tuning.md) and their combined digest.
  struct TuningTable {
    std::string arch, version, digest, source, device;
    uint32_t cells = 0;
    bool placeholder = false;  // not measured
  };
  std::vector<TuningTable> tuning_tables;
  std::string tuning_digest;
  uint64_t auto_resolutions = 0;  // specs that asked for "auto"
  // The hit path: requests whose keys came from coopd's request memo (or did not), its size
  // and evictions; replies that left out bytes the client held, and how many bytes in all.
  uint64_t memo_hits = 0;
  uint64_t memo_misses = 0;
  uint64_t memo_entries = 0;
  uint64_t memo_evictions = 0;
  uint64_t digest_only_replies = 0;
  uint64_t bytes_omitted = 0;
};

// A status of the standard gRPC health service (grpc.health.v1.HealthCheckResponse's values).
enum class HealthStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// "SERVING", "NOT_SERVING", ...
const char* HealthStatusName(HealthStatus status);

struct ClientOptions {
  std::string socket_path;  // empty: coop::DefaultSocketPath()
  // Before every call on the socket (and before auto-start) the client checks that the socket
  // and its directory are its own (docs/security.md, "Other local users"): the socket owned by
  // this process's effective uid (or root), its directory owned by that uid (or root) and
  // writable by no one else. Otherwise the call fails with kFailedPrecondition and nothing is
  // sent. A coopd shared on purpose (--socket-group) runs as another user: name that user here
  // (a user name or a uid) to accept its socket. Empty: $COOPD_SOCKET_OWNER, else none.
  std::string socket_owner;
  // Per-call deadline. A first compile takes about a second; a cold daemon a few.
  std::chrono::milliseconds timeout{std::chrono::minutes(3)};
  // Shown in coopd's logs; with the pid, it names this client for coopd's per-client limits
  // on the Unix socket (the "coopd-client" metadata; docs/security.md).
  std::string client_name;
  // When no daemon answers on the socket, start one (`coopd --socket PATH`, detached, logging
  // to coopd.log beside the socket) and retry until it answers or the deadline passes, the way
  // sccache's client starts its server. Off when COOPD_NO_AUTOSTART is set (to anything but
  // "0"). The binary: `coopd_binary`, else $COOPD_BIN, else next to this program, else PATH.
  // Concurrent clients may each start one: exactly one daemon wins the socket's lock.
  bool autostart = true;
  std::string coopd_binary;
  // A gRPC target instead of the Unix socket, for coopd replicas listening on TCP
  // (`coopd --listen`): "dns:///coopd.farm:7070" (every address the name resolves to),
  // "ipv4:10.0.0.1:7070,10.0.0.2:7070", ... Calls are spread over the addresses with gRPC's
  // round_robin policy. No auto-start for a target. Empty: $COOPD_TARGET, else the socket.
  std::string target;
  // Access control (docs/security.md). A file holding a bearer token for coopd's
  // --tokens-file (its first line that is neither empty nor a # comment), sent with every call,
  // on `target` and on the socket alike. Others may not read the file (mode 0600 or 0640); no
  // one but its owner may write it, and its owner is this process's effective user or root.
  // Empty: $COOPD_TOKEN_FILE, else no token.
  std::string token_file;
  // TLS for `target` connections, PEM files: the CA that signed coopd's certificate (empty:
  // the system's roots), and this client's certificate and key for a coopd that requires
  // client certificates (--tls-client-ca). TLS is on when any of the three is set. Empty:
  // $COOPD_TLS_CA, $COOPD_TLS_CERT, $COOPD_TLS_KEY. A problem with any of these files is an
  // Error of kInvalidArgument from every call, naming the file.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Ask coopd for the whole message of errors whose status message it bounds (Error::details);
  // this client then accepts metadata of up to 64 MiB.
  bool full_errors = false;
  // Digest-only hits: the client keeps the artifacts Specialize and SpecializeBundle returned
  // (at most this many, and this many bytes of LTO-IR, bitcode, source and logs in all; least
  // recently used first out) and sends their digests with a repeated request, so coopd answers
  // a hit with the metadata alone and the client fills the bytes back in: callers always get
  // complete artifacts. Either limit 0 turns it off (every reply then carries its bytes).
  size_t artifact_cache_entries = 256;
  uint64_t artifact_cache_bytes = uint64_t{64} << 20;
};

class Client {
 public:
  Client();  // default options
  explicit Client(ClientOptions options);
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // The socket this client talks to.
  const std::string& socket_path() const;

  Result<Artifact> Specialize(const Spec& spec, Formats formats = Formats::kLtoIr);
  // Several specs compiled into one LTO-IR (one round trip); parts follow `specs`' order.
  Result<Artifact> SpecializeBundle(const std::vector<Spec>& specs,
                                    Formats formats = Formats::kLtoIr);
  // Links kernel modules with cached artifacts into a cubin.
  Result<LinkResult> Link(const LinkRequest& request);
  Result<Stats> GetStats();
  // Returns the stats as they were, then zeroes every counter.
  Result<Stats> ResetStats();

  // Cache maintenance.
  // The key of one format (kBoth is refused: each format has its own key).
  Result<Explanation> Explain(const Spec& spec, Formats format = Formats::kLtoIr);
  // `with_specs`: also each entry's resolved specs and format (CacheEntry::specs, ::format).
  Result<std::vector<CacheEntry>> ListEntries(const CacheFilter& filter, uint32_t limit = 0,
                                              bool with_specs = false);
  // An empty filter purges nothing unless `all` is set. Returns the number of entries removed.
  Result<uint64_t> Purge(const CacheFilter& filter, bool all = false);
  Result<VerifyReport> Verify();
  Result<VacuumReport> Vacuum();

  Result<Catalog> GetCatalog();

  // Asks the daemon's grpc.health.v1.Health service (what grpcurl and grpc_health_probe ask)
  // about `service`: "" (the whole daemon) or "coop.v1.Coop". kNotServing once coopd is
  // shutting down. Never starts a daemon, whatever ClientOptions::autostart says: a check must
  // not create what it checks. An unknown service is an Error with kNotFound; no daemon, a
  // kUnavailable Error that is not from_server.
  Result<HealthStatus> Health(const std::string& service = "");

  // Asks the daemon to stop, gracefully: it answers, then drains as on SIGTERM (new calls get
  // kUnavailable, those in flight get its shutdown grace) and exits. Needs the admin role when
  // the daemon requires tokens (kPermissionDenied / kUnauthenticated otherwise). Returns once
  // the daemon has accepted, not once it has exited. Never starts a daemon; with none running,
  // a kUnavailable Error that is not from_server.
  Result<bool> Stop();

  // Lays out the temp storage of a kernel's primitives and the frontend's reservations in its
  // dynamic shared memory. Spec uses are resolved as Specialize resolves them (a cache hit once
  // specialized, else a compile).
  Result<PlanResult> Plan(const PlanRequest& request);

 private:
  friend struct ClientAccess;  // the C ABI's calls on the wire messages (src/client_internal.h)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coop
