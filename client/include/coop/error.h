// coop/error.h: the client's error type (a google.rpc.Code, coopd's message, its request id)
// and Result<T>, the value-or-Error every coop::Client call returns. Part of the public API;
// coop/client.h includes it.
#pragma once

#include <string>
#include <utility>
#include <variant>

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

}  // namespace coop
