// cmd_plan.cc: `coopctl plan`: one kernel's dynamic shared memory laid out by coopd, from uses
// (NAME@FIRST-LAST with a spec or a size) and reservations given on the command line.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "coopctl/commands.h"
#include "coopctl/output.h"

namespace coopctl {
namespace {

// "NAME=BYTES[,ALIGN[,COUNT]]" of --reserve (align defaults to 1).
coop::PlanReservation ParseReservation(const std::string& v) {
  const size_t eq = v.find('=');
  auto bad = [&v]() {
    UsageFail("--reserve: expected NAME=BYTES[,ALIGN[,COUNT]], got \"" + v + "\"");
  };
  if (eq == std::string::npos || eq == 0) bad();
  std::vector<std::string> parts;
  for (size_t start = eq + 1;;) {
    const size_t comma = v.find(',', start);
    parts.push_back(v.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() > 3) bad();
  coop::PlanReservation r;
  r.name = v.substr(0, eq);
  r.bytes = coopctl::ParseUint("--reserve", parts[0]);
  r.align = parts.size() > 1 ? coopctl::ParseUint("--reserve", parts[1]) : 1;
  r.count = parts.size() > 2 ? coopctl::ParseUint("--reserve", parts[2]) : 0;
  return r;
}

// One use: NAME[@FIRST[-LAST]] [--count N] (--bytes N [--align A] | SPEC).
coop::PlanUse ParsePlanUse(const std::vector<std::string>& segment, size_t index) {
  const std::string where = "plan: uses[" + std::to_string(index) + "]";
  std::string head, count, bytes, align;
  CLI::App app;
  app.add_option("NAME", head, "NAME[@FIRST[-LAST]]")->required();
  app.add_option("--count", count, "instances");
  app.add_option("--bytes", bytes, "size, instead of a spec");
  app.add_option("--align", align, "alignment, with --bytes");
  app.add_flag("--json", g_json, "machine-readable output");
  app.prefix_command();  // the spec, from its FAMILY on
  std::vector<std::string> reversed(segment.rbegin(), segment.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    UsageFail(where + ": " + e.what());
  }
  std::vector<std::string> spec_args = app.remaining();
  coop::PlanUse use;
  const size_t at = head.find('@');
  use.name = head.substr(0, at);
  if (at != std::string::npos) {
    const std::string span = head.substr(at + 1);
    const size_t dash = span.find('-');
    use.first = coopctl::ParseUint(head, span.substr(0, dash));
    use.last =
        dash == std::string::npos ? use.first : coopctl::ParseUint(head, span.substr(dash + 1));
  }
  if (!count.empty()) use.count = coopctl::ParseUint("--count", count);
  const bool sized = !bytes.empty() || !align.empty();
  if (!bytes.empty()) use.bytes = coopctl::ParseUint("--bytes", bytes);
  if (!align.empty()) use.align = coopctl::ParseUint("--align", align);
  if (!spec_args.empty()) {
    if (spec_args[0].rfind("-", 0) == 0) {
      UsageFail("plan: unknown argument \"" + spec_args[0] + "\" for use \"" + use.name +
                "\" (before its FAMILY: --count, --bytes, --align)");
    }
    if (sized) UsageFail("plan: use \"" + use.name + "\" has --bytes/--align and a spec: give one");
    coopctl::SpecArgs args;
    CLI::App spec_app;
    coopctl::AddSpecOptions(&spec_app, &args);
    spec_app.add_flag("--json", g_json, "machine-readable output");
    coopctl::ParseSegment(&spec_app, where, spec_args);
    use.spec = coopctl::ToSpec(args);
  } else if (!sized) {
    UsageFail("plan: use \"" + use.name + "\" needs a spec (FAMILY ...) or --bytes N --align A");
  }
  if (sized && use.align == 0) use.align = 1;
  return use;
}

Json PlanRegionJson(const coop::PlanRegion& r, bool use) {
  Json j = {{"name", r.name},       {"offset", r.offset}, {"bytes", r.bytes},  {"align", r.align},
            {"padding", r.padding}, {"count", r.count},   {"stride", r.stride}};
  if (use) {
    j["first"] = r.first;
    j["last"] = r.last;
    j["artifact_key"] = r.artifact_key;
  }
  return j;
}

}  // namespace

int Plan(coop::Client& client, const std::string& base_offset,
         const std::vector<std::string>& reserves, const std::vector<std::string>& uses) {
  coop::PlanRequest request;
  if (!base_offset.empty()) request.base_offset = coopctl::ParseUint("--base-offset", base_offset);
  for (const auto& r : reserves) request.reservations.push_back(ParseReservation(r));
  if (!uses.empty()) {
    const auto segments = coopctl::SplitAtPlus(uses);
    for (size_t k = 0; k < segments.size(); ++k) {
      request.uses.push_back(ParsePlanUse(segments[k], k));
    }
  }
  // --value-dtype / --radix-bits into each spec's own options message, as for specialize.
  std::vector<coop::Spec> specs;
  for (const auto& use : request.uses) {
    if (use.spec) specs.push_back(*use.spec);
  }
  coopctl::RouteSortFlags(client, &specs);
  for (size_t u = 0, k = 0; u < request.uses.size(); ++u) {
    if (request.uses[u].spec) request.uses[u].spec = specs[k++];
  }
  auto plan = client.Plan(request);
  if (!plan) FailWith(plan.error());
  if (g_json) {
    Json reservations = Json::array(), placed = Json::array();
    for (const auto& r : plan->reservations) reservations.push_back(PlanRegionJson(r, false));
    for (const auto& r : plan->uses) placed.push_back(PlanRegionJson(r, true));
    Print({{"dynamic_shared_bytes", plan->dynamic_shared_bytes},
           {"base_align", plan->base_align},
           {"reserved_bytes", plan->reserved_bytes},
           {"no_reuse_bytes", plan->no_reuse_bytes},
           {"reservations", reservations},
           {"uses", placed}});
    return 0;
  }
  std::cout << "dynamic shared memory: " << plan->dynamic_shared_bytes << " bytes, aligned to "
            << plan->base_align << " (reserved " << plan->reserved_bytes << ", without reuse "
            << plan->no_reuse_bytes << ")\n";
  std::printf("%8s %8s %6s %4s %7s  %s\n", "offset", "bytes", "align", "pad", "points", "name");
  auto row = [](const coop::PlanRegion& r, const std::string& points) {
    std::string name = r.name;
    if (r.count > 1)
      name += " [" + std::to_string(r.count) + " x " + std::to_string(r.stride) + "]";
    if (!r.artifact_key.empty()) name += "  (artifact " + r.artifact_key.substr(0, 16) + ")";
    std::printf("%8llu %8llu %6llu %4llu %7s  %s\n", static_cast<unsigned long long>(r.offset),
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.align),
                static_cast<unsigned long long>(r.padding), points.c_str(), name.c_str());
  };
  for (const auto& r : plan->reservations) row(r, "all");
  for (const auto& r : plan->uses) {
    row(r, r.first == r.last ? std::to_string(r.first)
                             : std::to_string(r.first) + "-" + std::to_string(r.last));
  }
  return 0;
}

}  // namespace coopctl
