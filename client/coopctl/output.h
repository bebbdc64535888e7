// output.h: what every command prints and fails with: errors as coopctl reports them, --json's
// output, the files commands write, and the pieces of output that several commands share.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "coop/client.h"
#include "coopctl/manifest.h"

namespace coopctl {

// One line of `s`: its lines joined with " | ".
std::string OneLine(const std::string& s);

// What coopctl prints of an error: one line, or with --full-error the whole message as coopd
// sent it (Error::details: every line of a compiler log).
std::string ErrorText(const coop::Error& e);

// Throw the CommandError for a failed call (its exit status and code), or for another failure.
[[noreturn]] void FailWith(const coop::Error& e);
[[noreturn]] void Fail(const std::string& message);

// Where the client talks to, for messages.
std::string Where(const coop::Client& client);

// Writes `j` on stdout, one line.
void Print(const Json& j);

// Writes `data` to `path` (replacing it); Fail when it cannot.
void WriteFile(const std::filesystem::path& path, std::string_view data);

// The JSON of a toolchain (specialize's artifacts, stats) and of an `--algorithm auto` choice
// (specialize's artifacts, explain).
Json ToolchainJson(const coop::Toolchain& t);
Json ChoiceJson(const coop::AlgorithmChoice& c);

// The CCCLs a daemon compiles against (catalog, stats): a JSON array of objects, and the text
// lines, one a CCCL ("cccl:  NAME VERSION (default) ...") and one a family unavailable on it.
Json CcclsJson(const std::vector<coop::CcclInfo>& cccls);
void PrintCcclsText(const std::vector<coop::CcclInfo>& cccls);

// "tcp 0.0.0.0:7070: TLS, client certificates, tokens" or "...: INSECURE (plaintext)".
std::string ListenerText(const coop::Listener& l);

}  // namespace coopctl
