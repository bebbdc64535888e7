// request_fuzz: bytes -> coop.v1.SpecializeRequest -> the server's validation, canonicalization
// and key (Service::Explain, what the Explain RPC runs: Validate, CheckFormats, Render,
// ComputeKey or ComputeBitcodeKey).
//
// Properties, for every input that parses:
//   - the answer is OK, INVALID_ARGUMENT or FAILED_PRECONDITION (nothing else is a request's
//     fault or a missing header), and an error message is one escaped line of bounded size, so
//     no request value can forge a log line or overflow gRPC's metadata limit;
//   - a key is 64 lowercase hex digits;
//   - canonicalization is a fixpoint: the canonical spec canonicalizes to itself (same
//     encoding), so a frontend that sends back a resolved spec gets the same key.
#include <spdlog/spdlog.h>

#include <memory>

#include "coop/v1/coop.pb.h"
#include "server/catalog/spec.h"
#include "server/service/service.h"
#include "server/util/escape.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_toolchain.h"

namespace {

// The longest error message a request may get: the longest legitimate one lists a field's
// allowed values (the dtypes, ~30 names); quoted request values are cut to 48 bytes.
constexpr size_t kMaxErrorBytes = 2048;

coopd::Service& TheService() {
  static coopd::Service* service = [] {
    spdlog::set_level(spdlog::level::off);
    coopd::ServiceOptions options;
    options.clang_workspace = "/nonexistent/coopd-fuzz-workspace";  // never used by Explain
    return new coopd::Service(coopd::fuzz::FixedToolchain(), std::make_unique<coopd::TieredCache>(),
                              /*disk=*/nullptr,
                              /*pool=*/nullptr, options);
  }();
  return *service;
}

bool UsesUserOperator(const coop::v1::PrimitiveSpec& s) {
  return s.op().has_user() || s.has_prefix_callback();
}

}  // namespace

[[maybe_unused]] static const bool quiet_protobuf = coopd::fuzz::QuietProtobufLog();

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  coop::v1::SpecializeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return -1;  // not in the corpus
  const std::vector<int> formats(request.formats().begin(), request.formats().end());
  const auto explained = TheService().Explain(request.spec(), formats);
  if (!explained.ok()) {
    const auto code = explained.status().code();
    const std::string message(explained.status().message());
    FUZZ_CHECK(
        code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kFailedPrecondition,
        "unexpected code: %s", explained.status().ToString().c_str());
    FUZZ_CHECK(!message.empty(), "an error without a message");
    FUZZ_CHECK(message.size() <= kMaxErrorBytes, "error of %zu bytes: %.200s...", message.size(),
               message.c_str());
    FUZZ_CHECK(coopd::fuzz::IsOneSafeLine(message), "error with raw bytes: %s",
               coopd::EscapeText(message).c_str());
    return 0;
  }
  const std::string& key = explained->key();
  FUZZ_CHECK(key.size() == 64 && key.find_first_not_of("0123456789abcdef") == std::string::npos,
             "bad key \"%s\"", key.c_str());
  FUZZ_CHECK(explained->components_size() > 0, "a key without components");

  // A user operator's canonical form drops its source (a digest remains), so only specs
  // without one can be sent back as they are.
  if (UsesUserOperator(request.spec())) return 0;
  const coopd::TargetInfo target = TheService().toolchain().Target();
  const auto canonical = coopd::Canonicalize(request.spec(), target);
  FUZZ_CHECK(canonical.ok(), "Explain accepted what Canonicalize refuses: %s",
             canonical.status().ToString().c_str());
  const auto again = coopd::Canonicalize(*canonical, target);
  FUZZ_CHECK(again.ok(), "the canonical spec is refused: %s\n  canonical: %s",
             again.status().ToString().c_str(), canonical->ShortDebugString().c_str());
  FUZZ_CHECK(coopd::CanonicalEncoding(*again) == coopd::CanonicalEncoding(*canonical),
             "canonicalization is not a fixpoint:\n%s\n  vs\n%s",
             coopd::CanonicalEncoding(*canonical).c_str(),
             coopd::CanonicalEncoding(*again).c_str());
  return 0;
}
