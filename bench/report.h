// report.h: the machine-readable output of the benchmarks (`--json FILE`), which bench/run.sh
// renders into docs/benchmarks.md (bench/render.py).
//
// A report is a list of figures. A figure is one comparison: a title, a unit, and rows of raw
// samples, one of which is the baseline every other row is divided by. The benchmarks write the
// samples only; medians, spreads and ratios are computed by the renderer, the same way for every
// figure. Format (schema "coopd-bench-figures-1"):
//
//   {"schema": "coopd-bench-figures-1", "tool": "coopd_bench", "args": "--rounds 3 ...",
//    "figures": [{"id": "time_to_artifact", "title": "...", "unit": "ms",
//                 "baseline": "one-shot NVRTC, fresh process", "note": "...",
//                 "rows": [{"name": "...", "samples": [1.0, ...],
//                           "values": {"compiles": 1}, "note": "..."}]}]}
//
// `values` are per-row counts shown beside the figure (not divided by the baseline). Header-only;
// not thread-safe (fill it from the benchmark's main thread).
#pragma once

#include <algorithm>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace coopd_bench {

struct Row {
  std::string name;
  std::vector<double> samples;
  std::map<std::string, double> values;
  std::string note;
};

struct Figure {
  std::string id, title, unit, baseline, note;
  std::deque<Row> rows;  // a deque: references from At() stay valid as rows are added

  // Appends a row (or returns the existing one of that name) to add samples to.
  Row& At(const std::string& name) {
    for (auto& r : rows) {
      if (r.name == name) return r;
    }
    rows.push_back(Row{name, {}, {}, {}});
    return rows.back();
  }
};

class Report {
 public:
  explicit Report(std::string tool) : tool_(std::move(tool)) {}

  // The figure `id`, created with the given title, unit and baseline row name on first use.
  Figure& Add(const std::string& id, const std::string& title, const std::string& unit,
              const std::string& baseline) {
    for (auto& f : figures_) {
      if (f.id == id) return f;
    }
    figures_.push_back(Figure{id, title, unit, baseline, {}, {}});
    return figures_.back();
  }

  // Writes the report to `path`; false (with a message on stderr) when it cannot. A figure whose
  // baseline row is missing or empty is a bug in the benchmark: reported, and the write fails.
  bool Write(const std::string& path, const std::string& args) const {
    nlohmann::json j = {{"schema", "coopd-bench-figures-1"}, {"tool", tool_}, {"args", args}};
    j["figures"] = nlohmann::json::array();
    for (const auto& f : figures_) {
      const bool has_baseline = std::any_of(f.rows.begin(), f.rows.end(), [&](const Row& r) {
        return r.name == f.baseline && !r.samples.empty();
      });
      if (!has_baseline) {
        std::fprintf(stderr, "%s: figure %s has no samples for its baseline \"%s\"\n",
                     tool_.c_str(), f.id.c_str(), f.baseline.c_str());
        return false;
      }
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : f.rows) {
        nlohmann::json row = {{"name", r.name}, {"samples", r.samples}};
        if (!r.values.empty()) row["values"] = r.values;
        if (!r.note.empty()) row["note"] = r.note;
        rows.push_back(std::move(row));
      }
      nlohmann::json fig = {{"id", f.id},
                            {"title", f.title},
                            {"unit", f.unit},
                            {"rows", rows},
                            {"baseline", f.baseline}};
      if (!f.note.empty()) fig["note"] = f.note;
      j["figures"].push_back(std::move(fig));
    }
    std::ofstream out(path);
    out << j.dump(1) << "\n";
    if (!out.flush()) {
      std::fprintf(stderr, "%s: cannot write %s\n", tool_.c_str(), path.c_str());
      return false;
    }
    return true;
  }

 private:
  std::string tool_;
  std::deque<Figure> figures_;  // references from Add() stay valid
};

// The command line after argv[0], for the report's "args".
inline std::string JoinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 1; i < argc; ++i) s += (i > 1 ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace coopd_bench
