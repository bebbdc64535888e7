// commands.h: the commands main.cc dispatches to, a file per group (cmd_specialize.cc,
// cmd_link.cc, cmd_plan.cc, cmd_cache.cc, cmd_daemon.cc, cmd_warm.cc), the structs main binds
// their flags to, and the global options every command reads. Each command prints its answer
// (JSON with --json) and returns coopctl's exit status; failures throw CommandError.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "coop/client.h"
#include "coopctl/manifest.h"
#include "coopctl/spec_args.h"

namespace coopctl {

// The connection: where coopd is and how to talk to it. Flags that change how the client
// connects (credentials, TLS) belong here, each with its ClientOptions field in ToOptions.
struct GlobalOptions {
  std::string socket;
  std::string target;
  std::string timeout_s;
  bool full_error = false;
  std::string token_file, tls_ca, tls_cert, tls_key;

  void Add(CLI::App* app);

  // The global options that take a value (main finds the command after them).
  static bool TakesValue(const std::string& flag);

  coop::ClientOptions ToOptions() const;
};

extern GlobalOptions g_global;
extern bool g_json;  // --json

// ---- cmd_specialize.cc: specialize, and the spec commands' shared options -------------------

// --format's values.
coop::Formats ParseFormats(const std::string& v);

// The options of specialize besides the spec's: accepted in every spec of a bundle.
struct OutputArgs {
  std::string format = "ltoir";
  std::string out_dir;
  void Add(CLI::App* app, bool with_out, bool with_both);
};

// A spec command's specs: the first parsed with the command, each further one ("+ FAMILY ...")
// by an app of its own with the same options.
std::vector<coop::Spec> BundleSpecs(const coopctl::SpecArgs& first,
                                    const std::vector<std::vector<std::string>>& more,
                                    OutputArgs* output, bool with_out, bool with_both);

int Specialize(coop::Client& client, std::vector<coop::Spec> specs, const OutputArgs& output);

// ---- cmd_link.cc: link ----------------------------------------------------------------------

struct LinkArgs {
  std::string arch, out;
  std::vector<std::string> ltoir, ptx, artifacts, options;
  bool keep_unused = false;
  void Add(CLI::App* app);
};

// `raw`: the command's arguments, for the order of --ltoir and --ptx.
int Link(coop::Client& client, const LinkArgs& args, const std::vector<std::string>& raw);

// ---- cmd_plan.cc: plan ----------------------------------------------------------------------

// `uses`: the arguments after the options, "+"-joined uses.
int Plan(coop::Client& client, const std::string& base_offset,
         const std::vector<std::string>& reserves, const std::vector<std::string>& uses);

// ---- cmd_cache.cc: explain, stats, ls, purge, verify, vacuum --------------------------------

int Explain(coop::Client& client, std::vector<coop::Spec> specs, const OutputArgs& output);

int Stats(coop::Client& client, bool zero);

// --family/--dtype/--arch of ls and purge.
struct FilterArgs {
  coop::CacheFilter filter;
  void Add(CLI::App* app);
};

int Ls(coop::Client& client, const coop::CacheFilter& filter, const std::string& limit,
       bool manifest);
int Purge(coop::Client& client, const coop::CacheFilter& filter, bool all);
int Verify(coop::Client& client);
int Vacuum(coop::Client& client);

// ---- cmd_daemon.cc: health, stop, catalog ---------------------------------------------------

// coopctl's exit status for `health` as grpc_health_probe's.
int ProbeExitStatus(int coopctl_status, bool answered_not_serving);

int Health(coop::Client& client, const std::string& service);
int Stop(coop::Client& client, bool wait);
// `cccl`: whose catalogue (empty: coopd's default).
int CatalogCommand(coop::Client& client, const std::string& cccl);

// ---- cmd_warm.cc: warm ----------------------------------------------------------------------

struct WarmArgs {
  std::string manifest;
  std::string jobs = "4";
  void Add(CLI::App* app);
  bool dry_run = false;
};

// --dry-run: the manifest's items as warm would request them.
int WarmDryRun(const std::vector<coopctl::ManifestItem>& items);

int Warm(coop::Client& client, const WarmArgs& args, std::vector<coopctl::ManifestItem> items);

}  // namespace coopctl
