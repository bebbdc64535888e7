// cmd_link.cc: `coopctl link`: a kernel (LTO-IR or PTX modules, in the order given) linked with
// cached artifacts, by key, into a cubin.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "coopctl/commands.h"
#include "coopctl/output.h"

namespace coopctl {
namespace {

// The order of --ltoir and --ptx as given (CLI11 keeps each option's values apart).
std::vector<coop::LinkModule> LinkModules(const std::vector<std::string>& args) {
  std::vector<coop::LinkModule> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], path;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      path = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < args.size()) {
      path = args[i + 1];
    }
    if (flag != "--ltoir" && flag != "--ptx") continue;
    if (eq == std::string::npos) ++i;
    out.push_back({flag == "--ptx" ? coop::LinkInputKind::kPtx : coop::LinkInputKind::kLtoIr,
                   std::filesystem::path(path).filename().string(),
                   coopctl::ReadFileOrFail(flag, path)});
  }
  return out;
}

}  // namespace

void LinkArgs::Add(CLI::App* app) {
  app->add_option("--arch", arch, "target architecture, e.g. sm_90");
  app->add_option("--ltoir", ltoir, "a kernel module as LTO-IR (repeatable)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app->add_option("--ptx", ptx, "a kernel module as PTX (repeatable)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  app->add_option("--artifact", artifacts, "a cached artifact's key (repeatable)")
      ->type_name("KEY")
      ->allow_extra_args(false);
  app->add_option("--option", options, "an extra nvJitLink option (repeatable)")
      ->type_name("OPT")
      ->allow_extra_args(false);
  app->add_flag("--keep-unused-variables", keep_unused, "link without -optimize-unused-variables");
  app->add_option("--out", out, "the cubin to write")->type_name("FILE");
  app->add_flag("--json", g_json, "machine-readable output");
}

int Link(coop::Client& client, const LinkArgs& args, const std::vector<std::string>& raw) {
  if (args.ltoir.empty() && args.ptx.empty()) {
    UsageFail("link: give the kernel with --ltoir FILE or --ptx FILE");
  }
  if (args.out.empty()) UsageFail("link: give the output cubin path with --out FILE");
  coop::LinkRequest request;
  request.arch = args.arch;
  request.modules = LinkModules(raw);
  request.artifact_keys = args.artifacts;
  request.options = args.options;
  request.keep_unused_variables = args.keep_unused;
  auto result = client.Link(request);
  if (!result) FailWith(result.error());
  WriteFile(args.out, result->cubin);
  if (g_json) {
    Print({{"key", result->key},
           {"origin", coop::OriginName(result->origin)},
           {"link_ms", result->link_ms},
           {"cubin_bytes", result->cubin.size()},
           {"options", result->options},
           {"file", args.out}});
  } else {
    std::cout << "wrote " << args.out << " (" << result->cubin.size() << " bytes, "
              << coop::OriginName(result->origin) << ", linked in " << result->link_ms << " ms)\n";
  }
  return 0;
}

}  // namespace coopctl
