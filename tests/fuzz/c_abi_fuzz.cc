// c_abi_fuzz: bytes -> a sequence of the C ABI's calls that parse caller input without asking a
// daemon (client/src/coop_c*.cc): coop_spec_from_json, the coop_spec_set_* / add_string field
// setters (a dotted field path and a value), coop_spec_json and coop_spec_clone, the
// coop_link_* builders, coop_options_set_* and coop_status_name. Each call's arguments come
// from the input, NULL included where the header allows it.
//
// Properties:
//   - a call that fails returns INVALID_ARGUMENT (RESOURCE_EXHAUSTED for memory) and leaves a
//     message in coop_last_error(); a call that succeeds leaves it empty;
//   - coop_spec_json() always answers a JSON object that coop_spec_from_json() reads back to
//     the same JSON, and a clone answers the same JSON.
#include <cstring>
#include <string>
#include <vector>

#include "coop/coop_c.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using coopd::fuzz::InputReader;

void CheckStatus(coop_status s, const char* call) {
  const std::string error = coop_last_error();
  if (s == COOP_OK) {
    FUZZ_CHECK(error.empty(), "%s succeeded but left the error \"%s\"", call, error.c_str());
    return;
  }
  FUZZ_CHECK(s == COOP_INVALID_ARGUMENT || s == COOP_RESOURCE_EXHAUSTED, "%s: %s (%s)", call,
             coop_status_name(s), error.c_str());
  FUZZ_CHECK(!error.empty(), "%s failed (%s) without a message", call, coop_status_name(s));
}

// The settable field paths, as the ABI itself lists them in the error for an unknown field.
const std::vector<std::string>& FieldPaths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    coop_spec_t* spec = coop_spec_create();
    coop_spec_set_string(spec, "", "");
    const std::string error = coop_last_error();
    coop_spec_destroy(spec);
    const std::string marker = "the fields are ";
    const size_t at = error.find(marker);
    FUZZ_CHECK(at != std::string::npos, "no field list in \"%s\"", error.c_str());
    for (size_t start = at + marker.size(); start < error.size();) {
      size_t end = error.find(", ", start);
      if (end == std::string::npos) end = error.size();
      out.push_back(error.substr(start, end - start));
      start = end + 2;
    }
    return out;
  }();
  return paths;
}

// A field path: one the ABI knows, or any string, or NULL.
std::string FieldPath(InputReader& in, bool* null) {
  const uint8_t how = in.Byte();
  *null = how == 0xff;
  if (how & 1) return FieldPaths()[in.Byte() % FieldPaths().size()];
  return in.String(64);
}

void CheckJsonRoundTrip(coop_spec_t* spec) {
  const std::string json = coop_spec_json(spec);
  FUZZ_CHECK(!json.empty() && json.front() == '{', "coop_spec_json answered \"%s\"", json.c_str());
  coop_spec_t* back = nullptr;
  const coop_status s = coop_spec_from_json(json.c_str(), &back);
  FUZZ_CHECK(s == COOP_OK, "coop_spec_json's answer is refused: %s\n  json: %s", coop_last_error(),
             json.c_str());
  const std::string again = coop_spec_json(back);
  coop_spec_destroy(back);
  FUZZ_CHECK(again == json, "the JSON does not round-trip:\n%s\n  vs\n%s", json.c_str(),
             again.c_str());
  coop_spec_t* copy = coop_spec_clone(spec);
  FUZZ_CHECK(copy != nullptr, "coop_spec_clone failed");
  FUZZ_CHECK(json == coop_spec_json(copy), "a clone answers other JSON");
  coop_spec_destroy(copy);
}

}  // namespace

[[maybe_unused]] static const bool quiet_protobuf = coopd::fuzz::QuietProtobufLog();

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InputReader in(data, size);
  coop_spec_t* spec = coop_spec_create();
  coop_link_t* link = nullptr;
  coop_options_t* options = coop_options_create();
  for (int step = 0; step < 32 && !in.empty(); ++step) {
    bool null_field = false;
    switch (in.Byte() % 12) {
      case 0: {
        const std::string json = in.String(4096);
        coop_spec_t* parsed = nullptr;
        const coop_status s = coop_spec_from_json(json.c_str(), &parsed);
        CheckStatus(s, "coop_spec_from_json");
        FUZZ_CHECK((s == COOP_OK) == (parsed != nullptr), "out is %p after %s", (void*)parsed,
                   coop_status_name(s));
        if (parsed != nullptr) {
          coop_spec_destroy(spec);
          spec = parsed;
        }
        break;
      }
      case 1: {
        const std::string field = FieldPath(in, &null_field);
        const std::string value = in.String(256);
        CheckStatus(coop_spec_set_string(spec, null_field ? nullptr : field.c_str(), value.c_str()),
                    "coop_spec_set_string");
        break;
      }
      case 2: {
        const std::string field = FieldPath(in, &null_field);
        const std::string value = in.String(256);
        CheckStatus(coop_spec_set_bytes(spec, null_field ? nullptr : field.c_str(),
                                        value.empty() ? nullptr : value.data(), value.size()),
                    "coop_spec_set_bytes");
        break;
      }
      case 3: {
        const std::string field = FieldPath(in, &null_field);
        const std::string value = in.String(64);
        CheckStatus(coop_spec_add_string(spec, null_field ? nullptr : field.c_str(), value.c_str()),
                    "coop_spec_add_string");
        break;
      }
      case 4: {
        const std::string field = FieldPath(in, &null_field);
        CheckStatus(coop_spec_set_uint(spec, null_field ? nullptr : field.c_str(), in.Uint64()),
                    "coop_spec_set_uint");
        break;
      }
      case 5: {
        const std::string field = FieldPath(in, &null_field);
        CheckStatus(coop_spec_set_bool(spec, null_field ? nullptr : field.c_str(), in.Byte()),
                    "coop_spec_set_bool");
        break;
      }
      case 6:
        CheckJsonRoundTrip(spec);
        break;
      case 7: {
        const std::string arch = in.String(32);
        coop_link_destroy(link);
        link = coop_link_create(in.Byte() & 1 ? nullptr : arch.c_str());
        FUZZ_CHECK(link != nullptr, "coop_link_create failed");
        break;
      }
      case 8: {
        const std::string name = in.String(32);
        const std::string bytes = in.String(512);
        const uint8_t how = in.Byte();
        const char* n = how & 2 ? nullptr : name.c_str();
        const void* d = how & 4 ? nullptr : bytes.data();
        const coop_status s =
            how & 1 ? coop_link_add_ptx(link, n, static_cast<const char*>(d), bytes.size())
                    : coop_link_add_ltoir(link, n, d, bytes.size());
        CheckStatus(s, "coop_link_add_ltoir/ptx");
        break;
      }
      case 9: {
        const std::string value = in.String(128);
        const uint8_t how = in.Byte();
        const char* v = how & 2 ? nullptr : value.c_str();
        CheckStatus(how & 1 ? coop_link_add_option(link, v) : coop_link_add_artifact_key(link, v),
                    "coop_link_add_option/artifact_key");
        if (link != nullptr) coop_link_set_keep_unused_variables(link, how & 4);
        break;
      }
      case 10: {
        CheckStatus(coop_options_set_timeout_ms(options, in.Uint64()),
                    "coop_options_set_timeout_ms");
        const std::string name = in.String(64);
        coop_options_set_client_name(options, in.Byte() & 1 ? nullptr : name.c_str());
        coop_options_set_coopd_binary(options, name.c_str());
        break;
      }
      default: {
        // Any value of the enum's range (0..127 holds every coop_status), listed or not.
        const auto status = static_cast<coop_status>(in.Byte() & 0x7f);
        const char* name = coop_status_name(status);
        FUZZ_CHECK(name != nullptr && *name != '\0', "coop_status_name(%d)", (int)status);
        break;
      }
    }
  }
  CheckJsonRoundTrip(spec);
  coop_link_destroy(link);
  coop_options_destroy(options);
  coop_spec_destroy(spec);
  return 0;
}
