// spec_args.h: the flags of one spec (`coopctl specialize FAMILY --dtype ... `), declared once on
// CLI11 apps and shared by specialize, explain, plan and the manifests of warm, so the command
// line and a manifest never disagree about what a spec is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "coop/client.h"

namespace coopctl {

// Exit statuses, as `coopctl --help` and docs/operators.md list them.
enum ExitStatus : int {
  kExitOk = 0,
  kExitFailed = 1,       // any other failure (a local file, coopd's INTERNAL, NOT_SERVING, ...)
  kExitUsage = 2,        // bad command line or manifest: nothing was sent
  kExitUnreachable = 3,  // no coopd answered on the socket or target
  kExitRefused = 4,      // coopd refused the request (INVALID_ARGUMENT, FAILED_PRECONDITION, ...)
  kExitDenied = 5,       // PERMISSION_DENIED or UNAUTHENTICATED
  kExitBusy = 6,     // try again later: RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, coopd's UNAVAILABLE
  kExitPartial = 7,  // warm: some specs failed, the others were prepared
};

// What every command throws instead of exiting: main prints it (and a JSON error object with
// --json) and exits with `status`.
struct CommandError : std::runtime_error {
  CommandError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), code(std::move(code)) {}
  int status;
  std::string code;           // "USAGE", "INVALID_ARGUMENT", ...
  bool json_printed = false;  // the command already printed its own JSON answer
};

[[noreturn]] void UsageFail(const std::string& message);

// The exit status for an error of a call.
int ExitStatusFor(const coop::Error& e);

// Strict decimal (CLI11's own integer conversion also takes octal and hex).
uint32_t ParseUint(const std::string& flag, const std::string& v);

// Where one spec's flags land. A bundle has one per spec.
struct SpecArgs {
  std::string family, method, dtype, threads, algorithm, op, arch, abi, value_dtype, user_type,
      cccl;
  std::string op_name, op_source, op_ltoir, prefix_name, prefix_source, prefix_ltoir;
  std::string items, warp_threads, radix_bits, bins, decoded_items;
  bool op_stateful = false, op_commutative = false, op_by_pointer = false, with_aggregate = false,
       warp_time_slicing = false, valid_items = false;
};

// Checks a flag's value against its allowed values: `must be c or numba, got "x"`.
CLI::Validator OneOf(const std::vector<std::string>& values);

// Adds FAMILY (positional) and every spec flag to `app`.
void AddSpecOptions(CLI::App* app, SpecArgs* args);

// The spec the flags describe; files (--op-source, ...) are read relative to `base`. Throws
// CommandError (usage) naming the flag.
coop::Spec ToSpec(const SpecArgs& args, const std::filesystem::path& base = {});

// --value-dtype and --radix-bits belong to whichever options message the family takes (the
// catalogue's family_options): ToSpec holds them in radix_sort and this moves them.
void RouteSortFlags(coop::Client& client, std::vector<coop::Spec>* specs);

// One line naming a spec: "block_reduce sum float32 block 256x1x1 items 1 sm_90" (and
// " cccl NAME" when it names a CCCL).
std::string Describe(const coop::Spec& s);
std::string Shape(const coop::Spec& s);
std::string ValueDtype(const coop::Spec& s);
uint32_t RadixBits(const coop::Spec& s);

// Reads a whole file; a usage error naming `flag` when it cannot.
std::string ReadFileOrFail(const std::string& flag, const std::string& path);

// Splits `args` at "+" separators (a bundle's specs, a plan's uses).
std::vector<std::vector<std::string>> SplitAtPlus(const std::vector<std::string>& args);

// Parses `argv` (one segment, without a program name) with `app`; a CLI11 error becomes a usage
// CommandError prefixed with `what`; arguments `app` does not know are errors too.
void ParseSegment(CLI::App* app, const std::string& what, std::vector<std::string> argv);

}  // namespace coopctl
