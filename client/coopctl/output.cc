// output.cc: what every command prints and fails with (see output.h).
#include "coopctl/output.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "coopctl/commands.h"
#include "coopctl/spec_args.h"

namespace coopctl {

std::string OneLine(const std::string& s) {
  // Errors are one line on stderr; compiler logs keep their content, joined with " | ".
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += " | ";
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|')) out.pop_back();
  return out;
}

std::string ErrorText(const coop::Error& e) {
  if (g_global.full_error && !e.details.empty()) return e.details;
  return OneLine(e.message);
}

[[noreturn]] void FailWith(const coop::Error& e) {
  throw CommandError(coopctl::ExitStatusFor(e), coop::ErrorCodeName(e.code),
                     std::string(coop::ErrorCodeName(e.code)) + ": " + ErrorText(e));
}

[[noreturn]] void Fail(const std::string& message) {
  throw CommandError(coopctl::kExitFailed, "FAILED", message);
}

std::string Where(const coop::Client& client) {
  return g_global.target.empty() ? client.socket_path() : g_global.target;
}

void Print(const Json& j) {
  std::cout << coopctl::Dump(j) << "\n";
}

void WriteFile(const std::filesystem::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) Fail("cannot write " + path.string() + ": " + std::strerror(errno));
}

Json ToolchainJson(const coop::Toolchain& t) {
  Json j = {{"nvrtc", t.nvrtc_version},
            {"nvjitlink", t.nvjitlink_version},
            {"cccl", t.cccl_version},
            {"header_digest", t.header_digest},
            {"clang", t.clang_version}};
  j["cccl_name"] = t.cccl_name;  // the CCCL's name (CcclInfo::name); cccl is its version
  return j;
}

Json CcclsJson(const std::vector<coop::CcclInfo>& cccls) {
  Json out = Json::array();
  for (const auto& c : cccls) {
    out.push_back({{"name", c.name},
                   {"version", c.version},
                   {"include", c.include},
                   {"digest", c.digest},
                   {"is_default", c.is_default},
                   {"origin", c.origin},
                   {"unavailable", c.unavailable},
                   {"probe", c.probe}});
  }
  return out;
}

void PrintCcclsText(const std::vector<coop::CcclInfo>& cccls) {
  for (const auto& c : cccls) {
    std::cout << "cccl:            " << c.name << " " << c.version
              << (c.is_default ? " (default)" : "") << ", " << c.origin << ", " << c.include
              << ", sha256 " << c.digest.substr(0, 16)
              << (c.probe.empty() ? "" : ", probe " + c.probe) << "\n";
    for (const auto& u : c.unavailable) std::cout << "  unavailable: " << OneLine(u) << "\n";
  }
}

Json ChoiceJson(const coop::AlgorithmChoice& c) {
  return {{"requested", c.requested},
          {"chosen", c.chosen},
          {"reason", c.reason},
          {"table_version", c.table_version},
          {"table_digest", c.table_digest}};
}

std::string ListenerText(const coop::Listener& l) {
  std::string out = l.address + ":";
  if (!l.mode.empty()) out += " " + l.mode;
  if (l.address.rfind("tcp ", 0) == 0) out += l.tls ? " TLS" : " plaintext";
  if (l.client_certificates) out += ", client certificates";
  if (l.tokens) out += ", bearer tokens";
  if (l.insecure) out += l.tls ? "  INSECURE: no client authentication" : "  INSECURE: no TLS";
  return out;
}

}  // namespace coopctl
