// coop_c_client.cc: the C ABI's client (coop/coop_c.h, "Client"): the options
// (coop_options_t) and opening a client (coop_client_t) over coop::Client.
#include <chrono>
#include <new>
#include <string>
#include <utility>

#include "coop/client.h"
#include "coop/coop_c.h"
#include "coop_c_internal.h"

using coop::c_abi::ClearOut;
using coop::c_abi::Fail;
using coop::c_abi::Guard;
using coop::c_abi::Null;
using coop::c_abi::Ok;

extern "C" {

coop_options_t* coop_options_create(void) {
  return new (std::nothrow) coop_options_t();
}

void coop_options_destroy(coop_options_t* options) {
  delete options;
}

coop_status coop_options_set_timeout_ms(coop_options_t* options, uint64_t timeout_ms) {
  if (options == nullptr) return Null("coop_options_set_timeout_ms", "options");
  constexpr uint64_t kYear = 365ull * 24 * 3600 * 1000;
  if (timeout_ms == 0 || timeout_ms > kYear) {
    return Fail(COOP_INVALID_ARGUMENT, "coop_options_set_timeout_ms: timeout_ms must be 1.." +
                                           std::to_string(kYear) + " (a year); got " +
                                           std::to_string(timeout_ms));
  }
  options->options.timeout = std::chrono::milliseconds(timeout_ms);
  return Ok();
}

void coop_options_set_autostart(coop_options_t* options, int autostart) {
  if (options != nullptr) options->options.autostart = autostart != 0;
}

void coop_options_set_coopd_binary(coop_options_t* options, const char* path) {
  if (options == nullptr) return;
  try {
    options->options.coopd_binary = path == nullptr ? "" : path;
  } catch (...) {
  }
}

void coop_options_set_full_errors(coop_options_t* options, int full_errors) {
  if (options != nullptr) options->options.full_errors = full_errors != 0;
}

void coop_options_set_client_name(coop_options_t* options, const char* name) {
  if (options == nullptr) return;
  try {
    options->options.client_name = name == nullptr ? "" : name;
  } catch (...) {
  }
}

coop_status coop_client_open(const char* socket_path, const coop_options_t* options,
                             coop_client_t** out) {
  return Guard("coop_client_open", [&] {
    if (!ClearOut(out)) return Null("coop_client_open", "out");
    coop::ClientOptions o = options == nullptr ? coop::ClientOptions() : options->options;
    o.socket_path = socket_path == nullptr ? "" : socket_path;
    *out = new coop_client_t(std::move(o));
    return Ok();
  });
}

void coop_client_destroy(coop_client_t* client) {
  delete client;
}

const char* coop_client_socket_path(const coop_client_t* client) {
  return client == nullptr ? nullptr : client->client.socket_path().c_str();
}

}  // extern "C"
