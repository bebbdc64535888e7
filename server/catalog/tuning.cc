#include "server/catalog/tuning.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "server/catalog/family.h"
#include "server/catalog/tuning_embedded.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd::tuning {
namespace {

using nlohmann::json;

absl::Status Bad(std::string_view source, std::string_view field, std::string_view detail) {
  return absl::InvalidArgumentError(StrCat(source, ": ", field, ": ", detail));
}

std::string TypeName(const json& v) {
  return v.is_discarded() ? "nothing" : std::string(v.type_name());
}

// One field of a JSON object, with its type checked; `field` names it in errors.
class Fields {
 public:
  Fields(const json& obj, std::string_view source, std::string prefix)
      : obj_(obj), source_(source), prefix_(std::move(prefix)) {}

  std::string Name(std::string_view key) const { return StrCat(prefix_, key); }

  absl::Status Unknown(const std::set<std::string>& known) const {
    for (const auto& [key, value] : obj_.items()) {
      if (known.count(key) == 0) {
        return Bad(source_, Name(key), StrCat("unknown field; allowed: ", StrJoin(known, ", ")));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(std::string_view key, bool non_empty = true) const {
    const auto it = obj_.find(std::string(key));
    if (it == obj_.end()) return Bad(source_, Name(key), "missing (a string)");
    if (!it->is_string()) {
      return Bad(source_, Name(key), StrCat("must be a string, got ", TypeName(*it)));
    }
    std::string v = it->get<std::string>();
    if (non_empty && v.empty()) return Bad(source_, Name(key), "must not be empty");
    return v;
  }

  absl::StatusOr<uint32_t> Count(std::string_view key, uint32_t lo, uint32_t hi) const {
    const auto it = obj_.find(std::string(key));
    if (it == obj_.end())
      return Bad(source_, Name(key), StrCat("missing (an integer ", lo, "..", hi, ")"));
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
      return Bad(source_, Name(key),
                 StrCat("must be an integer ", lo, "..", hi, ", got ", it->dump()));
    }
    return static_cast<uint32_t>(it->get<int64_t>());
  }

  absl::StatusOr<double> Gbps(std::string_view key) const {
    const auto it = obj_.find(std::string(key));
    if (it == obj_.end()) return Bad(source_, Name(key), "missing (GB/s, a number >= 0)");
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      return Bad(source_, Name(key), StrCat("must be a number >= 0 (GB/s), got ", it->dump()));
    }
    return it->get<double>();
  }

  absl::StatusOr<const json*> Object(std::string_view key) const {
    const auto it = obj_.find(std::string(key));
    if (it == obj_.end()) return Bad(source_, Name(key), "missing (an object)");
    if (!it->is_object()) {
      return Bad(source_, Name(key), StrCat("must be an object, got ", TypeName(*it)));
    }
    return &*it;
  }

 private:
  const json& obj_;
  std::string_view source_;
  std::string prefix_;
};

#define COOPD_ASSIGN(lhs, expr)                           \
  do {                                                    \
    auto coopd_value_ = (expr);                           \
    if (!coopd_value_.ok()) return coopd_value_.status(); \
    lhs = std::move(*coopd_value_);                       \
  } while (0)

std::string Gb(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string CellName(const Cell& c) {
  return StrCat(c.family, "/", c.method, " S=", c.dtype_size, " T=", c.threads,
                " N=", c.items_per_thread);
}

absl::StatusOr<Cell> ParseCell(const json& v, size_t index, std::string_view source,
                               const std::vector<std::pair<std::string, std::string>>& runs) {
  const std::string at = StrCat("cells[", index, "]");
  if (!v.is_object()) return Bad(source, at, StrCat("must be an object, got ", TypeName(v)));
  const Fields f(v, source, at + ".");
  if (absl::Status s = f.Unknown({"family", "method", "dtype_size", "threads", "items_per_thread",
                                  "choice", "run", "measured"});
      !s.ok()) {
    return s;
  }
  Cell c;
  COOPD_ASSIGN(c.family, f.String("family"));
  const Family* fam = FindFamily(c.family);
  if (fam == nullptr || fam->auto_algorithms.empty()) {
    return Bad(source, f.Name("family"),
               StrCat("must be a family that offers auto (", StrJoin(AutoFamilyNames(), ", "),
                      "), got \"", c.family, "\""));
  }
  COOPD_ASSIGN(c.method, f.String("method"));
  if (c.method != fam->auto_measured_method) {
    return Bad(
        source, f.Name("method"),
        StrCat("must be \"", fam->auto_measured_method, "\" for ", fam->name,
               " (the measured method; its other methods use its cells), got \"", c.method, "\""));
  }
  COOPD_ASSIGN(c.dtype_size, f.Count("dtype_size", 1, 1024));
  COOPD_ASSIGN(c.threads, f.Count("threads", 1, fam->warp ? 32 : 1024));
  COOPD_ASSIGN(c.items_per_thread, f.Count("items_per_thread", 1, 64));
  COOPD_ASSIGN(c.run, f.String("run"));
  if (std::none_of(runs.begin(), runs.end(), [&](const auto& r) { return r.first == c.run; })) {
    std::vector<std::string> ids;
    for (const auto& r : runs) ids.push_back(r.first);
    return Bad(source, f.Name("run"),
               StrCat("must name one of runs (", StrJoin(ids, ", "), "), got \"", c.run, "\""));
  }
  const json* measured = nullptr;
  COOPD_ASSIGN(measured, f.Object("measured"));
  if (measured->empty()) return Bad(source, f.Name("measured"), "must measure an algorithm");
  for (std::string_view alg : fam->auto_algorithms) {
    const auto it = measured->find(std::string(alg));
    if (it == measured->end()) continue;
    const std::string mat = StrCat(at, ".measured.", alg);
    if (!it->is_object()) {
      return Bad(source, mat, StrCat("must be an object, got ", TypeName(*it)));
    }
    const Fields m(*it, source, mat + ".");
    if (absl::Status s = m.Unknown({"median_gbps", "min_gbps", "max_gbps", "n"}); !s.ok()) {
      return s;
    }
    Measurement x;
    x.algorithm = std::string(alg);
    COOPD_ASSIGN(x.median_gbps, m.Gbps("median_gbps"));
    COOPD_ASSIGN(x.min_gbps, m.Gbps("min_gbps"));
    COOPD_ASSIGN(x.max_gbps, m.Gbps("max_gbps"));
    COOPD_ASSIGN(x.n, m.Count("n", 1, 1000000));
    if (!(x.min_gbps <= x.median_gbps && x.median_gbps <= x.max_gbps)) {
      return Bad(source, mat,
                 StrCat("must have min_gbps <= median_gbps <= max_gbps, got ", Gb(x.min_gbps), ", ",
                        Gb(x.median_gbps), ", ", Gb(x.max_gbps)));
    }
    if (!fam->warp && c.threads % 32 != 0 &&
        std::find(fam->warp_multiple_algorithms.begin(), fam->warp_multiple_algorithms.end(),
                  alg) != fam->warp_multiple_algorithms.end()) {
      return Bad(source, mat,
                 StrCat("cannot be measured at threads ", c.threads,
                        " (it needs a multiple of 32 threads)"));
    }
    c.measured.push_back(std::move(x));
  }
  for (const auto& [key, value] : measured->items()) {
    if (c.Find(key) == nullptr) {
      return Bad(source, StrCat(at, ".measured.", key),
                 StrCat("not an auto algorithm of ", fam->name, " (",
                        StrJoin(fam->auto_algorithms, ", "), ")"));
    }
  }
  COOPD_ASSIGN(c.choice, f.String("choice"));
  const Measurement* chosen = c.Find(c.choice);
  if (chosen == nullptr) {
    std::vector<std::string> names;
    for (const auto& m : c.measured) names.push_back(m.algorithm);
    return Bad(source, f.Name("choice"),
               StrCat("must be one of the measured algorithms (", StrJoin(names, ", "), "), got \"",
                      c.choice, "\""));
  }
  for (const auto& m : c.measured) {
    if (m.median_gbps > chosen->median_gbps) {
      return Bad(source, f.Name("choice"),
                 StrCat("must be the algorithm with the highest median: \"", c.choice, "\" has ",
                        Gb(chosen->median_gbps), " GB/s, \"", m.algorithm, "\" ", Gb(m.median_gbps),
                        " GB/s"));
    }
  }
  return c;
}

double Log2Ratio(double a, double b) {
  return std::fabs(std::log2(a / b));
}

std::string Margin() {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%g", kFallbackMargin);
  return buf;
}

// The best median among the cell's measured algorithms that are in `eligible`.
const Measurement* BestEligible(const Cell& c, const std::vector<std::string>& eligible) {
  const Measurement* best = nullptr;
  for (const auto& m : c.measured) {
    if (std::find(eligible.begin(), eligible.end(), m.algorithm) == eligible.end()) continue;
    if (best == nullptr || m.median_gbps > best->median_gbps) best = &m;
  }
  return best;
}

void FillCell(const Cell& c, const std::vector<std::string>& eligible,
              coop::v1::AutoExplanation* e) {
  auto* pc = e->mutable_cell();
  pc->set_family(c.family);
  pc->set_method(c.method);
  pc->set_dtype_size(c.dtype_size);
  pc->set_threads(c.threads);
  pc->set_items_per_thread(c.items_per_thread);
  pc->set_run(c.run);
  pc->set_choice(c.choice);
  for (const auto& m : c.measured) {
    auto* pm = e->add_measured();
    pm->set_algorithm(m.algorithm);
    pm->set_median_gbps(m.median_gbps);
    pm->set_min_gbps(m.min_gbps);
    pm->set_max_gbps(m.max_gbps);
    pm->set_n(m.n);
    pm->set_eligible(std::find(eligible.begin(), eligible.end(), m.algorithm) != eligible.end());
  }
}

std::mutex active_mu;
std::shared_ptr<const TableSet>& ActiveSlot() {
  static auto* slot = new std::shared_ptr<const TableSet>();
  return *slot;
}

}  // namespace

const Measurement* Cell::Find(std::string_view algorithm) const {
  for (const auto& m : measured) {
    if (m.algorithm == algorithm) return &m;
  }
  return nullptr;
}

bool Table::placeholder() const {
  return !cells.empty() && std::all_of(cells.begin(), cells.end(),
                                       [](const Cell& c) { return c.run == "placeholder"; });
}

std::vector<std::string_view> AutoFamilyNames() {
  std::vector<std::string_view> out;
  for (const Family* f : Families()) {
    if (!f->auto_algorithms.empty()) out.push_back(f->name);
  }
  return out;
}

absl::StatusOr<Table> ParseTable(std::string_view text, std::string_view source) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset and what it expected.
    return absl::InvalidArgumentError(StrCat(source, ": not valid JSON: ", e.what()));
  }
  if (!doc.is_object()) {
    return Bad(source, "(top level)", StrCat("must be an object, got ", TypeName(doc)));
  }
  const Fields f(doc, source, "");
  if (absl::Status s = f.Unknown(
          {"schema", "version", "arch", "device", "toolchain", "generated_by", "runs", "cells"});
      !s.ok()) {
    return s;
  }
  uint32_t schema = 0;
  COOPD_ASSIGN(schema, f.Count("schema", 0, 1000));
  if (schema != kSchema) {
    return Bad(source, "schema",
               StrCat("must be ", kSchema, " (the schema this coopd reads), got ", schema));
  }
  Table t;
  COOPD_ASSIGN(t.version, f.String("version"));
  COOPD_ASSIGN(t.arch, f.String("arch"));
  {
    int n = 0;
    char rest = 0;
    if (std::sscanf(t.arch.c_str(), "sm_%d%c", &n, &rest) != 1 || n <= 0 ||
        t.arch != StrCat("sm_", n)) {
      return Bad(
          source, "arch",
          StrCat("must be \"sm_N\" (e.g. \"sm_90\"; it also covers sm_Na), got \"", t.arch, "\""));
    }
  }
  COOPD_ASSIGN(t.device, f.String("device"));
  COOPD_ASSIGN(t.toolchain, f.String("toolchain"));
  COOPD_ASSIGN(t.generated_by, f.String("generated_by"));
  const json* runs = nullptr;
  COOPD_ASSIGN(runs, f.Object("runs"));
  if (runs->empty()) return Bad(source, "runs", "must name at least one run");
  for (const auto& [id, line] : runs->items()) {
    if (!line.is_string()) {
      return Bad(source, StrCat("runs.", id),
                 StrCat("must be a string (when and how the run was made), got ", TypeName(line)));
    }
    t.runs.emplace_back(id, line.get<std::string>());
  }
  const auto cells = doc.find("cells");
  if (cells == doc.end() || !cells->is_array()) {
    return Bad(source, "cells",
               cells == doc.end() ? std::string("missing (an array of cells)")
                                  : StrCat("must be an array, got ", TypeName(*cells)));
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < cells->size(); ++i) {
    auto cell = ParseCell((*cells)[i], i, source, t.runs);
    if (!cell.ok()) return cell.status();
    const std::string name = CellName(*cell);
    if (auto [it, fresh] = seen.emplace(name, i); !fresh) {
      return Bad(source, StrCat("cells[", i, "]"),
                 StrCat("duplicates cells[", it->second, "] (", name, ")"));
    }
    t.cells.push_back(std::move(*cell));
  }
  t.digest = Sha256::Hex(text);
  t.source = std::string(source);
  return t;
}

absl::Status CheckCoverage(const Table& table) {
  std::set<std::string> have;
  for (const Cell& c : table.cells) {
    const Family* fam = FindFamily(c.family);
    if (fam != nullptr && c.Find(fam->auto_baseline) != nullptr) have.insert(CellName(c));
  }
  std::vector<std::string> missing;
  for (const Family* fam : Families()) {
    if (fam->auto_algorithms.empty()) continue;
    const std::vector<uint32_t>& sizes = fam->auto_grid_dtype_sizes;
    const std::vector<uint32_t> threads =
        fam->warp ? std::vector<uint32_t>{8, 16, 32} : std::vector<uint32_t>{64, 128, 256, 512};
    for (uint32_t s : sizes) {
      for (uint32_t t : threads) {
        for (uint32_t n : {1u, 2u, 4u, 8u, 16u}) {
          Cell c;
          c.family = std::string(fam->name);
          c.method = std::string(fam->auto_measured_method);
          c.dtype_size = s;
          c.threads = t;
          c.items_per_thread = n;
          if (have.count(CellName(c)) == 0) missing.push_back(CellName(c));
        }
      }
    }
  }
  if (missing.empty()) return absl::OkStatus();
  const size_t shown = std::min<size_t>(missing.size(), 5);
  return absl::FailedPreconditionError(
      StrCat(table.source, ": ", missing.size(),
             " cells of the tuning grid are missing or do not measure the family's baseline "
             "(docs/tuning.md, \"Grid\"), e.g. ",
             StrJoin(std::vector<std::string>(missing.begin(), missing.begin() + shown), "; ")));
}

const Table* TableSet::ForArch(std::string_view arch) const {
  std::string_view base = arch;
  if (!base.empty() && base.back() == 'a') base.remove_suffix(1);
  for (const Table& t : tables) {
    if (t.arch == base) return &t;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<const TableSet>> MakeTableSet(std::vector<Table> tables) {
  std::sort(tables.begin(), tables.end(),
            [](const Table& a, const Table& b) { return a.arch < b.arch; });
  for (size_t i = 1; i < tables.size(); ++i) {
    if (tables[i].arch == tables[i - 1].arch) {
      return absl::InvalidArgumentError(StrCat(tables[i].source, " and ", tables[i - 1].source,
                                               " are both tables for ", tables[i].arch));
    }
  }
  auto set = std::make_shared<TableSet>();
  if (!tables.empty()) {
    Sha256 h;
    h.UpdateField("coopd tuning tables");
    for (const Table& t : tables) {
      h.UpdateField(t.arch);
      h.UpdateField(t.digest);
    }
    set->digest = h.FinishHex();
  }
  set->tables = std::move(tables);
  return std::shared_ptr<const TableSet>(std::move(set));
}

absl::StatusOr<std::shared_ptr<const TableSet>> EmbeddedTables() {
  std::vector<Table> tables;
  for (const EmbeddedFile& file : EmbeddedTableFiles()) {
    auto t = ParseTable(file.contents, StrCat("embedded:", file.name));
    if (!t.ok()) return t.status();
    tables.push_back(std::move(*t));
  }
  return MakeTableSet(std::move(tables));
}

absl::StatusOr<std::shared_ptr<const TableSet>> LoadTables(const std::string& path) {
  auto embedded = EmbeddedTables();
  if (!embedded.ok() || path.empty()) return embedded;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        StrCat("--tuning-table: cannot read \"", path, "\" (a tuning table, docs/tuning.md)"));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto mine = ParseTable(text.str(), path);
  if (!mine.ok()) return mine.status();
  std::vector<Table> tables;
  for (const Table& t : (*embedded)->tables) {
    if (t.arch != mine->arch) tables.push_back(t);
  }
  tables.push_back(std::move(*mine));
  return MakeTableSet(std::move(tables));
}

std::shared_ptr<const TableSet> ActiveTables() {
  std::lock_guard<std::mutex> lock(active_mu);
  auto& slot = ActiveSlot();
  if (slot == nullptr) {
    // A broken embedded table cannot reach a build that passed the CI check; coopd refuses
    // to start on one (daemon.cc loads them first), so an empty set here is only a fallback.
    auto embedded = EmbeddedTables();
    slot = embedded.ok() ? *embedded : std::make_shared<const TableSet>();
  }
  return slot;
}

void SetActiveTables(std::shared_ptr<const TableSet> tables) {
  std::lock_guard<std::mutex> lock(active_mu);
  ActiveSlot() = std::move(tables);
}

std::string ActiveTableDigest() {
  return ActiveTables()->digest;
}

Resolution Resolve(const Query& q, const TableSet& tables) {
  const Family& fam = *q.family;
  Resolution r;
  coop::v1::AutoExplanation& e = r.explanation;
  e.set_baseline(std::string(fam.auto_baseline));
  e.set_dtype_size(q.dtype_size);
  e.set_threads(q.threads);
  e.set_items_per_thread(q.items_per_thread);
  e.set_measured_method(std::string(fam.auto_measured_method));
  // 1. The eligible set: the family's auto algorithms after the semantic filters.
  std::vector<std::string> eligible;
  for (const auto& a : fam.algorithms) {
    if (std::find(fam.auto_algorithms.begin(), fam.auto_algorithms.end(), a) ==
        fam.auto_algorithms.end()) {
      e.add_filtered_out(StrCat(a, ": changes the result's arrangement, not only the speed"));
      continue;
    }
    if (!fam.warp && q.threads % 32 != 0 &&
        std::find(fam.warp_multiple_algorithms.begin(), fam.warp_multiple_algorithms.end(), a) !=
            fam.warp_multiple_algorithms.end()) {
      e.add_filtered_out(StrCat(a, ": needs a multiple of 32 threads, got ", q.threads));
      continue;
    }
    if (!q.commutative &&
        std::find(fam.commutative_algorithms.begin(), fam.commutative_algorithms.end(), a) !=
            fam.commutative_algorithms.end()) {
      e.add_filtered_out(StrCat(a,
                                ": needs a commutative operator (sum, min, max, or a user "
                                "operator declared commutative)"));
      continue;
    }
    const uint64_t tile = uint64_t{q.threads} * q.items_per_thread;
    const auto limit =
        std::find_if(fam.auto_tile_limits.begin(), fam.auto_tile_limits.end(),
                     [&](const Family::AutoTileLimit& l) { return l.algorithm == a; });
    if (!fam.warp && limit != fam.auto_tile_limits.end() && tile > limit->max_tile) {
      e.add_filtered_out(StrCat(a, ": ", limit->why, "; at most ", limit->max_tile,
                                " items per tile, got ", tile));
      continue;
    }
    eligible.emplace_back(a);
  }
  for (const auto& a : eligible) e.add_eligible(a);
  auto* choice = e.mutable_choice();
  choice->set_requested("auto");
  auto finish = [&](const std::string& alg, std::string reason) {
    r.chosen = alg;
    choice->set_chosen(alg);
    choice->set_reason(std::move(reason));
    return r;
  };
  const std::string baseline(fam.auto_baseline);
  // 5. (checked first: nothing to choose)
  if (eligible.size() == 1) {
    e.set_rule("single");
    return finish(eligible[0], StrCat("only ", eligible[0], " is eligible for this spec"));
  }
  // 2. The table of the arch (sm_90a uses sm_90's).
  const Table* table = tables.ForArch(q.arch);
  if (table == nullptr) {
    e.set_rule("no_table");
    return finish(baseline,
                  StrCat("fallback: no tuning table for ", q.arch, "; CUB's default ", baseline));
  }
  e.set_table_arch(table->arch);
  choice->set_table_version(table->version);
  choice->set_table_digest(table->digest);
  // 3. An exact cell.
  std::vector<const Cell*> cells;
  for (const Cell& c : table->cells) {
    if (c.family == fam.name && c.method == fam.auto_measured_method) cells.push_back(&c);
  }
  if (cells.empty()) {
    e.set_rule("no_cells");
    return finish(baseline,
                  StrCat("fallback: table ", table->version, " has no cells for ", fam.name, "/",
                         fam.auto_measured_method, "; CUB's default ", baseline));
  }
  auto versus = [&](const Cell& c, const Measurement& best) {
    const Measurement* base = c.Find(baseline);
    return StrCat(best.algorithm, " ", Gb(best.median_gbps), " GB/s vs baseline ", baseline,
                  base != nullptr ? StrCat(" ", Gb(base->median_gbps), " GB/s")
                                  : std::string(" (not measured)"));
  };
  for (const Cell* c : cells) {
    if (c->dtype_size != q.dtype_size || c->threads != q.threads ||
        c->items_per_thread != q.items_per_thread) {
      continue;
    }
    e.set_rule("exact");
    FillCell(*c, eligible, &e);
    const Measurement* best = BestEligible(*c, eligible);
    if (best == nullptr) {
      return finish(baseline, StrCat("fallback: table ", table->version, " cell ", CellName(*c),
                                     " measures no eligible algorithm; CUB's default ", baseline));
    }
    return finish(best->algorithm, StrCat("table ", table->version, " cell ", CellName(*c),
                                          " (run ", c->run, "): ", versus(*c, *best)));
  }
  // 4. The nearest cell: the same dtype size, else the nearest size in log2 (ties: smaller).
  uint32_t size = 0;
  for (const Cell* c : cells) {
    if (size == 0) {
      size = c->dtype_size;
      continue;
    }
    const double dc = Log2Ratio(q.dtype_size, c->dtype_size), ds = Log2Ratio(q.dtype_size, size);
    if (dc < ds || (dc == ds && c->dtype_size < size)) size = c->dtype_size;
  }
  const Cell* nearest = nullptr;
  double best_distance = 0;
  for (const Cell* c : cells) {
    if (c->dtype_size != size) continue;
    // Rounded to 9 decimals, as rule.py does, so that sums equal in real numbers tie.
    const double d = std::round((Log2Ratio(q.items_per_thread, c->items_per_thread) +
                                 Log2Ratio(q.threads, c->threads)) *
                                1e9) /
                     1e9;
    if (nearest == nullptr || d < best_distance ||
        (d == best_distance &&
         (c->items_per_thread < nearest->items_per_thread ||
          (c->items_per_thread == nearest->items_per_thread && c->threads < nearest->threads)))) {
      nearest = c;
      best_distance = d;
    }
  }
  e.set_rule("nearest");
  e.set_distance(best_distance);
  FillCell(*nearest, eligible, &e);
  char dist[32];
  std::snprintf(dist, sizeof(dist), "%.2f", best_distance);
  const std::string where =
      StrCat("fallback: nearest cell ", CellName(*nearest), " (distance ", dist, ") of table ",
             table->version, " (run ", nearest->run, "): ");
  const Measurement* best = BestEligible(*nearest, eligible);
  if (best == nullptr) {
    return finish(baseline,
                  StrCat(where, "no eligible algorithm measured; CUB's default ", baseline));
  }
  if (best->algorithm == baseline) return finish(baseline, StrCat(where, versus(*nearest, *best)));
  const Measurement* base = nearest->Find(baseline);
  if (base == nullptr || best->median_gbps < kFallbackMargin * base->median_gbps) {
    return finish(baseline, StrCat(where, versus(*nearest, *best), "; not ", Margin(),
                                   "x the baseline there, so CUB's default ", baseline));
  }
  return finish(best->algorithm, StrCat(where, versus(*nearest, *best)));
}

void FillTableInfo(const TableSet& tables,
                   google::protobuf::RepeatedPtrField<coop::v1::TuningTableInfo>* out) {
  for (const Table& t : tables.tables) {
    auto* p = out->Add();
    p->set_arch(t.arch);
    p->set_version(t.version);
    p->set_digest(t.digest);
    p->set_source(t.source);
    p->set_device(t.device);
    p->set_cells(static_cast<uint32_t>(t.cells.size()));
    p->set_placeholder(t.placeholder());
  }
}

}  // namespace coopd::tuning
