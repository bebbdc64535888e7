// specialize.cc: Specialize's walk, top to bottom: the memo, resolve.cc (validate, canonicalize,
// auto), the user operators, key.cc, fetch.cc (tiers, single-flight, farm lease), compile.cc,
// reply.cc.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "server/cache/cache_key.h"
#include "server/catalog/render.h"
#include "server/catalog/user_op.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::PrimitiveSpec;

void Service::Specialize(const std::vector<PrimitiveSpec>& request_specs, bool bundle,
                         const std::vector<int>& request_formats, const std::string& request_id,
                         ArtifactDone done, bool may_compile,
                         const std::vector<coop::v1::HeldArtifact>& have, MemoProbe probe,
                         const RequestScope& caller) {
  ++requests_;
  if (bundle) ++bundles_;
  // Every reply carries its bytes' digests (a hit's come from the cache, a compile's are hashed
  // here, once); a caller that holds the bytes gets the metadata alone.
  done = [this, have, done = std::move(done)](absl::StatusOr<Artifact> artifact) {
    if (artifact.ok()) {
      SetDigests(&*artifact);
      OmitHeldBytes(&*artifact, have);
    }
    done(std::move(artifact));
  };
  std::string memo_key;
  if (memo_.enabled()) {
    std::shared_ptr<const RequestMemo::Entry> entry;
    if (probe.key.empty()) {
      memo_key = MemoKey(request_specs, bundle, request_formats);
      entry = memo_.Find(memo_key);
    } else {
      // SpecializeFromMemory looked it up: its hit is counted, its miss is counted here.
      memo_key = std::move(probe.key);
      entry = std::move(probe.entry);
      if (!entry) memo_.CountMiss();
    }
    if (entry && ServeMemoized(*entry, request_id, done)) return;
  }
  std::vector<coop::v1::AutoExplanation> autos;
  auto specs = Validate(request_specs, bundle, &autos);
  std::vector<coop::v1::AlgorithmChoice> choices;
  for (auto& a : autos) choices.push_back(std::move(*a.mutable_choice()));
  if (specs.ok() && std::any_of(choices.begin(), choices.end(),
                                [](const auto& c) { return !c.requested().empty(); })) {
    // The choice is the request's, not the entry's: every reply that asked for "auto" says what
    // it got and why, while the cached artifact (shared with the explicit request) carries
    // none. The memo remembers it with the keys.
    done = [choices, done = std::move(done)](absl::StatusOr<Artifact> result) {
      if (result.ok()) AttachChoices(choices, &*result);
      done(std::move(result));
    };
  } else {
    choices.clear();
  }
  absl::StatusOr<Formats> formats =
      specs.ok() ? CheckFormats(request_formats, *specs, bundle) : specs.status();
  if (!formats.ok()) {
    // As before bitcode: every refused spec counts; a missing clang is not the request's fault.
    if (!specs.ok() || formats.status().code() == absl::StatusCode::kInvalidArgument) ++invalid_;
    spdlog::info("[req {}] invalid request: {}", request_id,
                 std::string(formats.status().message()));
    return done(formats.status());
  }
  // User operators come first: each distinct one given as source is compiled once and cached
  // under its own key; LTO-IR is taken as given (the primitive's layout query links it).
  std::vector<PendingOperator> ops;
  for (size_t i = 0; i < specs->size(); ++i) {
    const PrimitiveSpec& s = (*specs)[i];
    // The operator and the block-prefix callback, each with its request (source or LTO-IR).
    const std::pair<const coop::v1::UserOperator*, const coop::v1::UserOperator*> users[] = {
        {s.op().has_user() ? &s.op().user() : nullptr, &request_specs[i].op().user()},
        {s.has_prefix_callback() ? &s.prefix_callback() : nullptr,
         &request_specs[i].prefix_callback()}};
    for (const auto& [resolved, request] : users) {
      if (resolved == nullptr) continue;
      const std::string symbol = UserOperatorSymbol(*resolved);
      if (std::any_of(ops.begin(), ops.end(),
                      [&](const PendingOperator& p) { return p.symbol == symbol; })) {
        continue;
      }
      ops.push_back({*request, *resolved, symbol, s.arch(),
                     StrCat(bundle ? StrCat("specs[", i, "]: ") : "", s.family()),
                     &ToolchainOf(s)});
    }
  }
  if (ops.empty()) {
    return SpecializeResolved(*specs, {}, *formats, request_id, may_compile, std::move(done),
                              caller, memo_key, choices);
  }
  ResolveOperators(
      std::move(ops), formats->bitcode, request_id, may_compile,
      [this, specs = *specs, formats = *formats, request_id, may_compile, caller,
       done = std::move(done)](
          absl::StatusOr<std::vector<coop::v1::ArtifactLinkInput>> inputs) mutable {
        if (!inputs.ok()) {
          // Not the request's fault: a read token, a quota, a caller that stopped waiting.
          const auto code = inputs.status().code();
          const bool cancelled = caller.cancel && caller.cancel->cancelled();
          if (code != absl::StatusCode::kPermissionDenied &&
              code != absl::StatusCode::kResourceExhausted && !cancelled) {
            ++invalid_;
          }
          return done(inputs.status());
        }
        SpecializeResolved(specs, *inputs, formats, request_id, may_compile, std::move(done),
                           caller);
      },
      caller);
}

void Service::ResolveOperators(std::vector<PendingOperator> ops, bool bitcode,
                               const std::string& request_id, bool may_compile, OperatorsDone done,
                               const RequestScope& caller) {
  struct Gather {
    std::mutex mu;
    size_t remaining;
    std::vector<coop::v1::ArtifactLinkInput> inputs;
    absl::Status status;
    OperatorsDone done;
  };
  auto gather = std::make_shared<Gather>();
  // One delivery per operator and format; a bitcode request also compiles each operator with
  // clang (LTO-IR operators were refused by CheckFormats).
  gather->remaining = ops.size() * (bitcode ? 2 : 1);
  gather->inputs.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) gather->inputs[i].set_symbol(ops[i].symbol);
  gather->done = std::move(done);
  auto finish = [gather](size_t i, const absl::StatusOr<Artifact>& compiled) {
    OperatorsDone done;
    {
      std::lock_guard<std::mutex> lock(gather->mu);
      if (!compiled.ok()) {
        if (gather->status.ok()) gather->status = compiled.status();
      } else if (compiled->has_bitcode()) {
        gather->inputs[i].set_bitcode_key(compiled->bitcode().key());
        gather->inputs[i].set_bitcode(compiled->bitcode().data());
      } else {
        gather->inputs[i].set_key(compiled->key());
        gather->inputs[i].set_ltoir(compiled->ltoir());
      }
      if (--gather->remaining > 0) return;
      done = std::move(gather->done);
    }
    if (gather->status.ok()) return done(std::move(gather->inputs));
    done(gather->status);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const PendingOperator& op = ops[i];
    if (!UserOperatorIsSource(op.resolved)) {
      Artifact given;  // the frontend's LTO-IR, as given
      given.set_ltoir(op.request.ltoir());
      finish(i, given);
      continue;
    }
    const std::string unit = RenderOperatorUnit(op.request, op.resolved);
    const std::string encoding = OperatorEncoding(op.resolved, op.arch);
    const std::string description = StrCat("operator ", op.resolved.name(), " for ", op.arch);
    for (const coop::v1::Format format : {coop::v1::FORMAT_LTOIR, coop::v1::FORMAT_BITCODE}) {
      if (format == coop::v1::FORMAT_BITCODE && !bitcode) break;
      const Keyed keyed = KeyFor(*op.tc, encoding, unit, op.arch, format);
      Fetch(
          keyed.key.key, format,
          format == coop::v1::FORMAT_BITCODE ? description + " (bitcode)" : description, request_id,
          may_compile, [finish, i](absl::StatusOr<Artifact> a) { finish(i, a); },
          [this, op, unit, keyed, request_id](const std::shared_ptr<CancelToken>& flight) {
            StartOperatorCompile(op, unit, keyed.options, keyed.key, request_id, flight);
          },
          caller);
    }
  }
}

void Service::SpecializeResolved(const std::vector<PrimitiveSpec>& specs,
                                 const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                                 const Formats& formats, const std::string& request_id,
                                 bool may_compile, ArtifactDone done, const RequestScope& caller,
                                 const std::string& memo_key,
                                 const std::vector<coop::v1::AlgorithmChoice>& choices) {
  const RenderedUnit unit = Render(specs);
  const std::string& arch = specs[0].arch();
  const std::string encoding = BundleEncoding(specs);
  const std::string description = Describe(specs);
  const Toolchain& tc = ToolchainOf(specs[0]);
  const Keyed keyed = KeyFor(tc, encoding, unit.source, arch, coop::v1::FORMAT_LTOIR);
  const std::vector<std::string>& options = keyed.options;
  const KeyComponents& key = keyed.key;

  // The LTO-IR: asked for, or (for bitcode alone) the reference the bitcode's layouts must match.
  auto ltoir = [this, specs, unit, options, key, link_inputs, request_id, description, may_compile](
                   ArtifactDone done, const RequestScope& caller) {
    Fetch(
        key.key, coop::v1::FORMAT_LTOIR, description, request_id, may_compile, std::move(done),
        [this, specs, unit, options, key, link_inputs,
         request_id](const std::shared_ptr<CancelToken>& flight) {
          StartCompile(specs, unit, options, key, link_inputs, request_id, flight);
        },
        caller);
  };
  auto remember = [&](const std::string& bitcode_key) {
    if (!memo_key.empty()) {
      memo_.Remember(memo_key, {formats.ltoir ? key.key : "", bitcode_key, description, choices});
    }
  };
  if (!formats.bitcode) {
    remember("");
    return ltoir(std::move(done), caller);
  }

  const Keyed bitcode_keyed = KeyFor(tc, encoding, unit.source, arch, coop::v1::FORMAT_BITCODE);
  const std::vector<std::string>& clang_options = bitcode_keyed.options;
  const KeyComponents& bkey = bitcode_keyed.key;
  remember(bkey.key);
  auto bitcode = [this, specs, unit, clang_options, bkey, link_inputs, request_id, description,
                  ltoir, may_compile](ArtifactDone done, const RequestScope& caller) {
    Fetch(
        bkey.key, coop::v1::FORMAT_BITCODE, description + " (bitcode)", request_id, may_compile,
        std::move(done),
        [this, specs, unit, clang_options, bkey, link_inputs, request_id,
         ltoir](const std::shared_ptr<CancelToken>& flight) {
          StartBitcodeCompile(specs, unit, clang_options, bkey, link_inputs, request_id, ltoir,
                              flight);
        },
        caller);
  };
  if (!formats.ltoir) return bitcode(std::move(done), caller);
  auto both = Gather2<Artifact, Artifact>(
      [done = std::move(done)](absl::StatusOr<Artifact> l, absl::StatusOr<Artifact> b) {
        if (!l.ok()) return done(l.status());
        if (!b.ok()) return done(b.status());
        done(MergeFormats(std::move(*l), std::move(*b)));
      });
  ltoir(both.first, caller);
  bitcode(both.second, caller);
}

}  // namespace coopd
