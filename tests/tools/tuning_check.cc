// coopd_tuning_check: the CI check of tuning tables (docs/tuning.md). Each FILE must parse as a
// schema-1 table (the daemon's own loader: errors name the cell index and the field) and cover
// the grid the tuning suite measures for every family that offers algorithm "auto".
//
// usage: coopd_tuning_check [--allow-placeholder] FILE...
//   --allow-placeholder: a table whose every cell is a placeholder (nothing measured yet) is
//                        exempt from the grid, and says so.
//        coopd_tuning_check --resolve FILE
//   reads queries "FAMILY THREADS ITEMS DTYPE_SIZE ARCH COMMUTATIVE(0|1)" from stdin, one a line,
//   and prints for each "ALGORITHM RULE" as the daemon's Resolve() decides with FILE's table
//   (for the cross-check against device/tuning/rule.py).
// Exit status: 0 every table passes, 1 one fails, 2 usage.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "server/catalog/family.h"
#include "server/catalog/tuning.h"

namespace {

int ResolveQueries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto table = coopd::tuning::ParseTable(text.str(), path);
  if (!table.ok()) {
    std::cerr << table.status().message() << "\n";
    return 1;
  }
  std::vector<coopd::tuning::Table> tables;
  tables.push_back(std::move(*table));
  auto set = coopd::tuning::MakeTableSet(std::move(tables));
  if (!set.ok()) return 1;
  std::string family, arch;
  uint32_t threads = 0, items = 0, size = 0;
  int commutative = 0;
  while (std::cin >> family >> threads >> items >> size >> arch >> commutative) {
    coopd::tuning::Query q;
    q.family = coopd::FindFamily(family);
    if (q.family == nullptr || q.family->auto_algorithms.empty()) {
      std::cerr << "--resolve: family \"" << family << "\" does not offer auto\n";
      return 2;
    }
    q.arch = arch;
    q.threads = threads;
    q.items_per_thread = items;
    q.dtype_size = size;
    q.commutative = commutative != 0;
    const coopd::tuning::Resolution r = coopd::tuning::Resolve(q, **set);
    std::cout << r.chosen << " " << r.explanation.rule() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--resolve") return ResolveQueries(argv[2]);
  bool allow_placeholder = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--allow-placeholder") {
      allow_placeholder = true;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "coopd_tuning_check: unknown option \"" << a
                << "\"; usage: coopd_tuning_check [--allow-placeholder] FILE...\n";
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::cerr << "usage: coopd_tuning_check [--allow-placeholder] FILE...\n";
    return 2;
  }
  int status = 0;
  std::vector<coopd::tuning::Table> tables;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << path << ": cannot read\n";
      status = 1;
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto table = coopd::tuning::ParseTable(text.str(), path);
    if (!table.ok()) {
      std::cerr << table.status().message() << "\n";
      status = 1;
      continue;
    }
    if (allow_placeholder && table->placeholder()) {
      std::cout << path << ": schema ok, " << table->cells.size()
                << " cells; a placeholder (nothing measured), so the grid is not required\n";
    } else if (absl::Status s = coopd::tuning::CheckCoverage(*table); !s.ok()) {
      std::cerr << s.message() << "\n";
      status = 1;
      continue;
    } else {
      std::cout << path << ": schema ok, " << table->cells.size()
                << " cells, the grid covered (version " << table->version << ", sha256 "
                << table->digest << ")\n";
    }
    tables.push_back(std::move(*table));
  }
  if (auto set = coopd::tuning::MakeTableSet(std::move(tables)); !set.ok()) {
    std::cerr << set.status().message() << "\n";
    status = 1;
  }
  return status;
}
