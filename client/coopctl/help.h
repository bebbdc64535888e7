// help.h: coopctl's help: each command's synopsis, summary and examples (the table in help.cc,
// in `coopctl --help`'s order) and the formatter that lays them out for --help.
#pragma once

#include <string>

#include "CLI/CLI.hpp"

namespace coopctl {

// Each command's synopsis (as `coopctl --help` lists it), summary and examples.
struct CommandHelp {
  const char* name;
  const char* usage;
  const char* summary;
  const char* examples;
};

// Every command's help, in `coopctl --help`'s order: `for (const auto& c : kCommands)`.
struct CommandTable {
  const CommandHelp* begin() const;
  const CommandHelp* end() const;
};
inline constexpr CommandTable kCommands{};

// The command called `name`, or nullptr.
const CommandHelp* FindCommand(const std::string& name);

// Help in coopctl's layout: the synopsis, CLI11's list of options, the examples.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override;
  std::string make_usage(const CLI::App* app, std::string) const override;
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode) const override;
  std::string make_footer(const CLI::App* app) const override;
};

}  // namespace coopctl
