// plan.cc: Plan: each use's temp storage resolved through Specialize, then laid out
// (plan/planner.h).
#include <spdlog/spdlog.h>

#include <mutex>

#include "server/plan/planner.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/escape.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::PrimitiveSpec;

namespace {

void FillRegion(const PlacedRegion& placed, const std::string& name, coop::v1::PlanRegion* out) {
  out->set_name(name);
  out->set_offset(placed.offset);
  out->set_bytes(placed.bytes);
  out->set_align(placed.align);
  out->set_padding(placed.padding);
  out->set_count(placed.count);
  out->set_stride(placed.stride);
}

// "plan: uses[2] \"scan\": ", the start of an error about one use.
std::string UseContext(int i, const std::string& name) {
  return StrCat("plan: uses[", i, "] \"", name, "\": ");
}

}  // namespace

void Service::Plan(const coop::v1::PlanRequest& request, const std::string& request_id,
                   PlanDone done, bool may_compile, const RequestScope& caller) {
  auto invalid = [&](const absl::Status& status) {
    ++invalid_;
    spdlog::info("[req {}] invalid plan request: {}", request_id, std::string(status.message()));
    done(status);
  };
  PlanInput input;
  input.base_offset = request.base_offset();
  for (const auto& r : request.reservations()) {
    input.reservations.push_back({r.name(), r.bytes(), r.align(), r.count(), 0, 0, true});
  }
  std::vector<int> spec_uses;  // indices of the uses whose size comes from their spec
  for (int i = 0; i < request.uses_size(); ++i) {
    const coop::v1::PlanUse& u = request.uses(i);
    if (u.has_spec()) spec_uses.push_back(i);
    input.uses.push_back({u.name(), u.temp_storage().bytes(), u.temp_storage().align(), u.count(),
                          u.first(), u.last(), u.has_temp_storage()});
  }
  if (absl::Status s = CheckPlanInput(input); !s.ok()) return invalid(s);
  if (spec_uses.size() > options_.limits.plan_specs) {
    return invalid(absl::InvalidArgumentError(
        StrCat("plan: at most ", options_.limits.plan_specs,
               " uses may be given by spec (--max-plan-specs, COOPD_MAX_PLAN_SPECS), got ",
               spec_uses.size())));
  }
  {
    std::vector<const PrimitiveSpec*> specs;
    for (int i : spec_uses) specs.push_back(&request.uses(i).spec());
    if (absl::Status s = CheckUserOperators(specs,
                                            [&](size_t k) {
                                              const int i = spec_uses[k];
                                              return StrCat(UseContext(i, request.uses(i).name()),
                                                            "spec: ");
                                            });
        !s.ok()) {
      return invalid(s);
    }
  }
  for (int i = 0; i < request.uses_size(); ++i) {
    if (!request.uses(i).has_spec() && !request.uses(i).has_temp_storage()) {
      return invalid(absl::InvalidArgumentError(
          StrCat(UseContext(i, request.uses(i).name()),
                 "give spec (a primitive whose temp storage coopd resolves) or "
                 "temp_storage (bytes and align)")));
    }
  }
  // One kernel, one arch: a spec for another is a mistake the layout would hide.
  for (int i : spec_uses) {
    const std::string& arch = request.uses(i).spec().arch();
    const std::string& first = request.uses(spec_uses[0]).spec().arch();
    if (arch != first) {
      return invalid(absl::InvalidArgumentError(StrCat(
          UseContext(i, request.uses(i).name()), "spec.arch must be uses[", spec_uses[0], "]'s ",
          QuoteValue(first), " (a plan is for one kernel), got ", QuoteValue(arch))));
    }
  }

  // What the plan keeps of each spec's artifact (not its LTO-IR: a plan may name 1024 specs).
  struct Resolved {
    coop::v1::TempStorage temp_storage;
    std::string key;
  };
  struct Gather {
    std::mutex mu;
    size_t remaining = 0;
    std::vector<absl::StatusOr<Resolved>> resolved;  // by position in spec_uses
  };
  auto gather = std::make_shared<Gather>();
  gather->remaining = spec_uses.size();
  gather->resolved.resize(spec_uses.size(), absl::UnknownError("not resolved"));
  auto finish = [this, request_id, input = std::move(input), spec_uses, gather,
                 done = std::move(done)]() mutable {
    std::vector<std::string> keys(input.uses.size());
    // The first failing use in request order, whatever order the answers came in.
    for (size_t k = 0; k < spec_uses.size(); ++k) {
      const int i = spec_uses[k];
      const auto& r = gather->resolved[k];
      if (!r.ok()) {
        spdlog::info("[req {}] plan: uses[{}] failed: {}", request_id, i,
                     std::string(r.status().message()));
        return done(absl::Status(r.status().code(), StrCat(UseContext(i, input.uses[i].name),
                                                           "spec: ", r.status().message())));
      }
      input.uses[i].bytes = r->temp_storage.bytes();
      input.uses[i].align = r->temp_storage.align();
      input.uses[i].sized = true;
      keys[i] = r->key;
    }
    auto layout = LayOutPlan(input);
    if (!layout.ok()) {
      ++invalid_;
      spdlog::info("[req {}] invalid plan request: {}", request_id,
                   std::string(layout.status().message()));
      return done(layout.status());
    }
    coop::v1::PlanResponse out;
    for (size_t i = 0; i < layout->reservations.size(); ++i) {
      FillRegion(layout->reservations[i], input.reservations[i].name, out.add_reservations());
    }
    for (size_t i = 0; i < layout->uses.size(); ++i) {
      auto* region = out.add_uses();
      FillRegion(layout->uses[i], input.uses[i].name, region);
      region->set_first(input.uses[i].first);
      region->set_last(input.uses[i].last);
      region->set_artifact_key(keys[i]);
    }
    out.set_dynamic_shared_bytes(layout->total);
    out.set_base_align(layout->base_align);
    out.set_reserved_bytes(layout->reserved_bytes);
    out.set_no_reuse_bytes(layout->no_reuse_bytes);
    spdlog::info("[req {}] plan: {} uses ({} by spec), {} reservations: {} bytes (no reuse: {})",
                 request_id, input.uses.size(), spec_uses.size(), input.reservations.size(),
                 layout->total, layout->no_reuse_bytes);
    done(std::move(out));
  };
  if (spec_uses.empty()) return finish();
  // Each spec as Specialize takes it, so it hits the entry the frontend's own request made;
  // identical specs join one compile.
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  for (size_t k = 0; k < spec_uses.size(); ++k) {
    Specialize(
        {request.uses(spec_uses[k]).spec()}, /*bundle=*/false, /*formats=*/{}, request_id,
        [gather, k, shared_finish](absl::StatusOr<Artifact> artifact) {
          {
            std::lock_guard<std::mutex> lock(gather->mu);
            if (artifact.ok()) {
              gather->resolved[k] = Resolved{artifact->parts(0).temp_storage(), artifact->key()};
            } else {
              gather->resolved[k] = artifact.status();
            }
            if (--gather->remaining > 0) return;
          }
          (*shared_finish)();
        },
        may_compile, {}, {}, caller);
  }
}

}  // namespace coopd
