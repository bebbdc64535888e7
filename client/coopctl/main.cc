// main.cc: coopctl, the command-line client of coopd: its global options, the command line's
// parse and the dispatch to the commands (commands.h; a file per group of commands). See
// `coopctl --help`, README.md and docs/operators.md.
// Arguments are parsed by CLI11; --json output is written with nlohmann-json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "coop/client.h"
#include "coopctl/commands.h"
#include "coopctl/help.h"
#include "coopctl/manifest.h"
#include "coopctl/output.h"
#include "coopctl/spec_args.h"

namespace coopctl {

GlobalOptions g_global;
bool g_json = false;  // --json

void GlobalOptions::Add(CLI::App* app) {
  auto* socket_opt = app->add_option("--socket", socket, "coopd's Unix socket")->type_name("PATH");
  auto* target_opt =
      app->add_option("--target", target,
                      "a gRPC target instead of the socket, e.g. ipv4:127.0.0.1:7070 "
                      "(never starts coopd)")
          ->type_name("TARGET");
  socket_opt->excludes(target_opt);
  app->add_option("--timeout", timeout_s, "per-call deadline (default 180)")->type_name("SECONDS");
  app->add_flag("--full-error", full_error, "print coopd's whole error message");
  app->add_option("--token-file", token_file,
                  "a file holding the bearer token to send (env COOPD_TOKEN_FILE)")
      ->type_name("FILE");
  app->add_option("--tls-ca", tls_ca,
                  "PEM CA that signed coopd's certificate: TLS to --target (env COOPD_TLS_CA)")
      ->type_name("FILE");
  app->add_option("--tls-cert", tls_cert,
                  "PEM client certificate, for coopd's mTLS (env COOPD_TLS_CERT)")
      ->type_name("FILE");
  app->add_option("--tls-key", tls_key, "its PEM private key (env COOPD_TLS_KEY)")
      ->type_name("FILE");
}

bool GlobalOptions::TakesValue(const std::string& flag) {
  return flag == "--socket" || flag == "--target" || flag == "--timeout" ||
         flag == "--token-file" || flag == "--tls-ca" || flag == "--tls-cert" ||
         flag == "--tls-key";
}

coop::ClientOptions GlobalOptions::ToOptions() const {
  coop::ClientOptions options;
  options.client_name = "coopctl";
  options.socket_path = socket;
  options.target = target;
  if (!timeout_s.empty()) {
    options.timeout = std::chrono::seconds(coopctl::ParseUint("--timeout", timeout_s));
  }
  options.full_errors = full_error;
  options.token_file = token_file;  // empty: the library reads COOPD_TOKEN_FILE, ...
  options.tls_ca_file = tls_ca;
  options.tls_cert_file = tls_cert;
  options.tls_key_file = tls_key;
  return options;
}

namespace {

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // With --json anywhere, errors are reported as JSON too, even those found while parsing.
  for (const auto& a : args) g_json = g_json || a == "--json";
  // So with --probe-exit-codes: a usage error of `health` is then grpc_health_probe's 1.
  bool probe_codes = false;
  for (const auto& a : args) probe_codes = probe_codes || a == "--probe-exit-codes";
  std::string command;
  try {
    // The command, after the global options; for the commands that take "+"-joined specs, the
    // first spec goes to CLI11 with the command, the others are parsed one by one.
    size_t command_at = 0;
    while (command_at < args.size() && args[command_at].rfind("-", 0) == 0) {
      const std::string& a = args[command_at];
      const bool takes_value = GlobalOptions::TakesValue(a);  // "--socket=PATH" is one
      command_at += takes_value ? 2 : 1;
    }
    std::vector<std::string> head(args.begin(), args.begin() + std::min(command_at, args.size()));
    std::vector<std::string> rest;
    if (command_at < args.size()) {
      command = args[command_at];
      rest.assign(args.begin() + command_at + 1, args.end());
    }
    // `--help` (or -h) anywhere among a command's arguments prints that command's help, whatever
    // else is there: it is what a user reaches for after a usage error.
    if (FindCommand(command) != nullptr &&
        std::any_of(rest.begin(), rest.end(),
                    [](const std::string& a) { return a == "--help" || a == "-h"; })) {
      rest = {"--help"};
    }
    std::vector<std::vector<std::string>> more;
    if (command == "specialize" || command == "explain") {
      auto segments = coopctl::SplitAtPlus(rest);
      rest = segments[0];
      more.assign(segments.begin() + 1, segments.end());
    }

    CLI::App app("command-line client of coopd", "coopctl");
    app.formatter(std::make_shared<HelpFormatter>());
    app.require_subcommand(1);
    g_global.Add(&app);
    app.add_flag("--json", g_json, "machine-readable output (also after the command)");
    std::map<std::string, CLI::App*> subs;
    for (const auto& c : kCommands) {
      subs[c.name] = app.add_subcommand(c.name, c.summary);
      subs[c.name]->allow_extras();
    }
    coopctl::SpecArgs spec_args;
    OutputArgs output;
    coopctl::AddSpecOptions(subs["specialize"], &spec_args);
    output.Add(subs["specialize"], true, true);
    coopctl::SpecArgs explain_args;
    OutputArgs explain_output;
    coopctl::AddSpecOptions(subs["explain"], &explain_args);
    explain_output.Add(subs["explain"], false, false);
    LinkArgs link;
    link.Add(subs["link"]);
    std::string base_offset;
    std::vector<std::string> reserves;
    subs["plan"]->add_option("--base-offset", base_offset, "bytes kept below the layout");
    subs["plan"]
        ->add_option("--reserve", reserves, "a region live throughout (repeatable)")
        ->type_name("NAME=BYTES[,ALIGN[,COUNT]]")
        ->allow_extra_args(false);
    subs["plan"]->add_flag("--json", g_json, "machine-readable output");
    subs["plan"]->prefix_command();  // the uses, from the first one on
    subs["catalog"]->add_flag("--json", g_json, "machine-readable output");
    std::string catalog_cccl;
    subs["catalog"]
        ->add_option("--cccl", catalog_cccl,
                     "the CCCL whose families' availability to describe (a name or "
                     "a version; default: coopd's default)")
        ->type_name("NAME|VERSION");
    bool zero = false;
    subs["stats"]->add_flag("--zero", zero, "zero the counters after printing them");
    subs["stats"]->add_flag("--json", g_json, "machine-readable output");
    FilterArgs ls_filter, purge_filter;
    std::string limit;
    bool manifest = false, all = false;
    ls_filter.Add(subs["ls"]);
    subs["ls"]->add_option("--limit", limit, "at most N entries")->type_name("N");
    auto* ls_json = subs["ls"]->add_flag("--json", g_json, "machine-readable output");
    subs["ls"]
        ->add_flag("--manifest", manifest, "write a manifest for coopctl warm (JSON)")
        ->excludes(ls_json);
    purge_filter.Add(subs["purge"]);
    subs["purge"]->add_flag("--all", all, "remove every entry");
    subs["purge"]->add_flag("--json", g_json, "machine-readable output");
    subs["verify"]->add_flag("--json", g_json, "machine-readable output");
    subs["vacuum"]->add_flag("--json", g_json, "machine-readable output");
    std::string service;
    subs["health"]->add_option("--service", service, "\"\" (default) or coop.v1.Coop");
    subs["health"]->add_flag("--json", g_json, "machine-readable output");
    subs["health"]->add_flag("--probe-exit-codes", probe_codes,
                             "exit statuses as grpc_health_probe's: 0 SERVING, 1 bad arguments, "
                             "2 connection failed, 3 call failed, 4 not SERVING");
    bool no_wait = false;
    subs["stop"]->add_flag("--no-wait", no_wait, "return once coopd has accepted the stop");
    subs["stop"]->add_flag("--json", g_json, "machine-readable output");
    WarmArgs warm;
    warm.Add(subs["warm"]);

    std::vector<std::string> to_parse = head;
    if (!command.empty()) to_parse.push_back(command);
    to_parse.insert(to_parse.end(), rest.begin(), rest.end());
    std::reverse(to_parse.begin(), to_parse.end());
    try {
      app.parse(to_parse);
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help();
      return 0;
    } catch (const CLI::ParseError& e) {
      if (command.empty() || FindCommand(command) == nullptr) {
        std::string names;
        for (const auto& c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
        UsageFail(
            (command.empty() ? "missing COMMAND (" : "unknown command \"" + command + "\" (") +
            names + "); see coopctl --help");
      }
      UsageFail(command + ": " + e.what());
    }
    CLI::App* sub = subs[command];
    if (command != "plan") {
      const auto extras = sub->remaining();
      if (!extras.empty()) {
        UsageFail(command + ": unknown argument \"" + extras[0] + "\" (see coopctl " + command +
                  " --help)");
      }
    }

    coop::ClientOptions options = g_global.ToOptions();
    // Commands that report on the daemon itself say it is not running rather than start one;
    // the others start it when it is not (coop::ClientOptions::autostart).
    if (command == "stats" || command == "health" || command == "stop") {
      options.autostart = false;
    }
    if (command == "specialize") {
      auto specs = BundleSpecs(spec_args, more, &output, true, true);
      coop::Client client(options);
      return Specialize(client, std::move(specs), output);
    }
    if (command == "explain") {
      if (!more.empty()) UsageFail("explain: takes one spec (no \"+\" bundles)");
      auto specs = BundleSpecs(explain_args, more, &explain_output, false, false);
      coop::Client client(options);
      return Explain(client, std::move(specs), explain_output);
    }
    if (command == "warm") {
      auto items = coopctl::LoadManifest(warm.manifest);
      if (warm.dry_run) return WarmDryRun(items);
      coop::Client client(options);
      return Warm(client, warm, std::move(items));
    }
    coop::Client client(options);
    if (command == "link") return Link(client, link, rest);
    if (command == "plan") return Plan(client, base_offset, reserves, sub->remaining());
    if (command == "catalog") return CatalogCommand(client, catalog_cccl);
    if (command == "stats") return Stats(client, zero);
    if (command == "ls") return Ls(client, ls_filter.filter, limit, manifest);
    if (command == "purge") return Purge(client, purge_filter.filter, all);
    if (command == "verify") return Verify(client);
    if (command == "vacuum") return Vacuum(client);
    if (command == "stop") return Stop(client, !no_wait);
    if (command == "health") {
      const int status = Health(client, service);
      return probe_codes ? ProbeExitStatus(status, status != coopctl::kExitOk) : status;
    }
    UsageFail("unknown command \"" + command + "\"");
  } catch (const CommandError& e) {
    std::fflush(stdout);
    std::cerr << "coopctl: " << e.what() << "\n";
    const int status =
        probe_codes && command == "health" ? ProbeExitStatus(e.status, false) : e.status;
    if (g_json && !e.json_printed) {
      Print({{"error", {{"exit_status", status}, {"code", e.code}, {"message", e.what()}}}});
    }
    return status;
  }
}

}  // namespace
}  // namespace coopctl

int main(int argc, char** argv) {
  return coopctl::Main(argc, argv);
}
