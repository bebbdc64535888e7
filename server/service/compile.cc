// compile.cc: Specialize's compile stage: the NVRTC and clang jobs for primitive units and user
// operators, run in a worker, checked (a bitcode's layouts against its LTO-IR's), stored and
// completed.
#include <spdlog/spdlog.h>

#include <mutex>

#include "server/cache/cache_key.h"
#include "server/catalog/render.h"
#include "server/catalog/user_op.h"
#include "server/engine/bitcode.h"
#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::PrimitiveSpec;
namespace wv1 = coop::worker::v1;

std::string Describe(const std::vector<PrimitiveSpec>& specs) {
  if (specs.size() != 1) return StrCat("bundle of ", specs.size(), " specs for ", specs[0].arch());
  const auto& s = specs[0];
  return StrCat(s.family(), " ", s.method(), " ", s.dtype(), " ", s.arch());
}

void FillToolchain(const Toolchain& tc, coop::v1::Toolchain* out) {
  out->set_nvrtc_version(tc.NvrtcVersion());
  out->set_nvjitlink_version(tc.NvJitLinkVersion());
  out->set_cccl_version(tc.cccl_version);
  out->set_cccl_name(tc.cccl_name);
  out->set_header_digest(tc.header_digest);
}

namespace {

EntryMeta PrimitiveMeta(const std::vector<PrimitiveSpec>& specs, const KeyComponents& key) {
  return EntryMeta{specs.size() == 1 ? specs[0].family() : "bundle",
                   specs.size() == 1 ? specs[0].dtype() : "", specs[0].arch(), key.RequestDigest(),
                   key.ToProto().SerializeAsString()};
}

// Makes `a` describe the bitcode clang's `reply` holds (stored under `key`): the artifact's own
// key, compile time, log and PCH outcome are the bitcode's, and so is its one format.
void DescribeBitcode(const std::string& key, const wv1::Reply& reply, const std::string& clang,
                     Artifact* a) {
  a->set_key(key);
  a->set_compile_ms(reply.compile_ms());
  a->set_compile_log(reply.log());
  a->set_pch_status(reply.pch_status());
  a->clear_formats();
  a->add_formats(coop::v1::FORMAT_BITCODE);
  a->mutable_toolchain()->set_clang_version(clang);
  auto* module = a->mutable_bitcode();
  module->set_key(key);
  module->set_compile_ms(reply.compile_ms());
  module->set_compile_log(reply.log());
  module->set_pch_status(reply.pch_status());
}

}  // namespace

void Service::FillClangJob(coop::worker::v1::CompileJob* job) const {
  job->set_backend(wv1::CompileJob::CLANG);
  job->mutable_clang()->set_program(toolchain_.clang.path);
  job->mutable_clang()->set_identity(toolchain_.clang.Identity());
  job->mutable_clang()->set_workspace(options_.clang_workspace);
}

void Service::StartOperatorCompile(const PendingOperator& op, const std::string& unit,
                                   const std::vector<std::string>& options,
                                   const KeyComponents& components, const std::string& request_id,
                                   const std::shared_ptr<CancelToken>& flight) {
  const std::string key = components.key;
  const bool bitcode = components.format == "bitcode";
  EntryMeta meta{"operator", op.resolved.operand_dtypes(0), op.arch, components.RequestDigest(),
                 components.ToProto().SerializeAsString()};
  wv1::Request request;
  auto* job = request.mutable_compile();
  job->set_source(unit);
  for (const auto& o : options) job->add_options(o);
  // Off: an operator's include prefix is not the prelude, and a PCH built for it would replace
  // the worker's warm prelude PCH. Operators compile in well under a second without one.
  job->set_pch(false);
  job->set_arch(op.arch);
  if (bitcode) {
    FillClangJob(job);
    job->add_entries(op.symbol);
  }
  const std::string description =
      StrCat("operator ", op.resolved.name(), " for ", op.arch, bitcode ? " (bitcode)" : "");
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  pool_->Submit(
      std::move(request), bitcode ? "" : StrJoin(options, " ") + " operator", description,
      [this, op, unit, key, meta, bitcode, request_id, description,
       flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok()) {
          absl::Status s = reply.status();
          // The compiler's verdict on the frontend's source is the caller's to fix; the log's
          // line numbers are the source's own (the unit puts it under #line 1 "<name>.cu").
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InvalidArgumentError(
                StrCat(op.context, ": op.user.source (", op.resolved.name(), ") does not compile",
                       bitcode ? " with clang" : "", " for ", op.arch, ":\n", s.message()));
          }
          spdlog::info("[req {}] {} failed: {}", request_id, description, std::string(s.message()));
          return compiles_in_flight_.Complete(key, s, flight);
        }
        ++compiles_;
        if (bitcode) ++bitcode_compiles_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        compile_seconds_.Observe(reply->compile_ms() / 1000.0);  // operators: not in percentiles
        spdlog::info("[req {}] compiled {} in {:.0f} ms ({} bytes {})", request_id, description,
                     reply->compile_ms(), bitcode ? reply->bitcode().size() : reply->ltoir().size(),
                     bitcode ? "bitcode" : "LTO-IR");
        Artifact artifact;
        artifact.set_key(key);
        artifact.set_arch(op.arch);
        FillToolchain(*op.tc, artifact.mutable_toolchain());
        artifact.set_compile_ms(reply->compile_ms());
        artifact.set_compile_log(reply->log());
        artifact.set_source(unit);
        CacheValue value;
        if (bitcode) {
          DescribeBitcode(key, *reply, toolchain_.clang.Identity(), &artifact);
          value.blob = reply->bitcode();
        } else {
          artifact.add_formats(coop::v1::FORMAT_LTOIR);
          value.blob = reply->ltoir();
        }
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        if (bitcode) {
          artifact.mutable_bitcode()->set_data(std::move(value.blob));
          artifact.mutable_bitcode()->set_origin(coop::v1::ORIGIN_COMPILED);
        } else {
          artifact.set_ltoir(std::move(value.blob));
        }
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      },
      flight);
}

wv1::Request Service::PrimitiveJob(const std::vector<PrimitiveSpec>& specs,
                                   const RenderedUnit& unit,
                                   const std::vector<std::string>& options) const {
  wv1::Request request;
  auto* job = request.mutable_compile();
  job->set_source(unit.source);
  for (const auto& o : options) job->add_options(o);
  job->set_pch(options_.compile.pch);
  job->set_arch(specs[0].arch());
  for (const auto& part : unit.parts) {
    auto* q = job->add_layouts();
    q->set_bytes_symbol(part.temp_bytes_symbol);
    q->set_align_symbol(part.temp_align_symbol);
  }
  return request;
}

void Service::StartBitcodeCompile(
    const std::vector<PrimitiveSpec>& specs, const RenderedUnit& unit,
    const std::vector<std::string>& options, const KeyComponents& components,
    const std::vector<coop::v1::ArtifactLinkInput>& link_inputs, const std::string& request_id,
    const std::function<void(ArtifactDone, const RequestScope&)>& ltoir,
    const std::shared_ptr<CancelToken>& flight) {
  const std::string key = components.key;
  const EntryMeta meta = PrimitiveMeta(specs, components);
  wv1::Request request = PrimitiveJob(specs, unit, options);
  auto* job = request.mutable_compile();
  FillClangJob(job);
  for (const auto& part : unit.parts) {
    for (const auto& e : part.entries) job->add_entries(e.symbol);
  }
  const std::string description = Describe(specs) + " (bitcode)";
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  // The clang compile and the LTO-IR (cached, in flight or compiled now, on another worker) run
  // side by side; the bitcode is stored once both are in and their layouts agree.
  auto both = Gather2<Artifact, wv1::Reply>(
      [this, unit, key, meta, link_inputs, request_id, description, flight](
          absl::StatusOr<Artifact> reference, absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          return compiles_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++compile_failures_;
          absl::Status s = reply.status();
          spdlog::error("[req {}] compile of {} failed: {}", request_id, description,
                        std::string(s.message()));
          // As for NVRTC: a valid spec that clang cannot compile is coopd's bug or a toolchain
          // problem. Pool errors (worker died, timeout, shutting down) keep their codes.
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InternalError(StrCat(description, ": ", s.message()));
          }
          return compiles_in_flight_.Complete(key, s, flight);
        }
        if (!reference.ok()) return compiles_in_flight_.Complete(key, reference.status(), flight);
        std::vector<Layout> nvrtc, clang;
        for (const auto& part : reference->parts()) {
          nvrtc.push_back(Layout{part.temp_storage().bytes(), part.temp_storage().align()});
        }
        for (const auto& l : reply->layouts()) clang.push_back(Layout{l.bytes(), l.align()});
        if (absl::Status s = CompareLayouts(description, nvrtc, clang); !s.ok()) {
          ++compile_failures_;
          spdlog::error("[req {}] {}", request_id, std::string(s.message()));
          return compiles_in_flight_.Complete(key, s, flight);
        }
        ++compiles_;
        ++bitcode_compiles_;
        if (reply->pch_status() == "used") ++pch_warm_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        RecordCompileTime(reply->compile_ms());
        spdlog::info(
            "[req {}] compiled {} in {:.0f} ms ({} bytes bitcode, PCH {}, {} internalized)",
            request_id, description, reply->compile_ms(), reply->bitcode().size(),
            reply->pch_status(), reply->internalized_size());

        // The reference's description of the unit (parts, entries, layouts, spec, source) is the
        // bitcode's too: both compilers compiled the same rendered unit.
        Artifact artifact = std::move(*reference);
        artifact.clear_ltoir();
        artifact.clear_origin();
        artifact.clear_link_inputs();
        artifact.set_layout_ms(0);
        DescribeBitcode(key, *reply, toolchain_.clang.Identity(), &artifact);
        auto* module = artifact.mutable_bitcode();
        for (const auto& in : link_inputs) {
          auto* op = artifact.add_link_inputs();
          op->set_symbol(in.symbol());
          op->set_bitcode_key(in.bitcode_key());
          op->set_bitcode(in.bitcode());
        }
        CacheValue value;
        value.blob = reply->bitcode();
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        module->set_data(std::move(value.blob));
        module->set_origin(coop::v1::ORIGIN_COMPILED);
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      });
  // The reference is fetched for the flight, not for any one caller: it is wanted while the
  // flight is, and its compile stops when only this flight waited for it. No quota: the
  // request that led this flight has paid for it.
  ltoir(both.first, RequestScope{flight, ""});
  pool_->Submit(std::move(request), "", description, both.second, flight);
}

void Service::StartCompile(const std::vector<PrimitiveSpec>& specs, const RenderedUnit& unit,
                           const std::vector<std::string>& options, const KeyComponents& components,
                           const std::vector<coop::v1::ArtifactLinkInput>& link_inputs,
                           const std::string& request_id,
                           const std::shared_ptr<CancelToken>& flight) {
  const std::string& key = components.key;
  const EntryMeta meta = PrimitiveMeta(specs, components);
  wv1::Request request = PrimitiveJob(specs, unit, options);
  auto* job = request.mutable_compile();
  job->set_pch_heap_bytes(options_.compile.pch_heap_bytes);
  std::vector<coop::v1::UserOperator> frontend_ltoir;  // must prove they define their symbol
  for (const auto& s : specs) {
    if (s.op().has_user() && !UserOperatorIsSource(s.op().user())) {
      frontend_ltoir.push_back(s.op().user());
    }
    if (s.has_prefix_callback() && !UserOperatorIsSource(s.prefix_callback())) {
      frontend_ltoir.push_back(s.prefix_callback());
    }
  }
  for (const auto& in : link_inputs) {
    auto* extra = job->add_layout_inputs();
    extra->set_kind(wv1::LinkInput::LTOIR);
    extra->set_name(StrCat("operator ", in.symbol()));
    extra->set_data(in.ltoir());
    job->add_required_symbols(in.symbol());
  }
  if (!frontend_ltoir.empty()) job->set_probe_source(RenderOperatorProbe(frontend_ltoir));
  const std::string description = Describe(specs);
  spdlog::info("[req {}] compiling {} key {}", request_id, description, key.substr(0, 16));
  pool_->Submit(
      std::move(request), StrJoin(options, " "), description,
      [this, specs, unit, key, meta, link_inputs, request_id, description,
       flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          // Every caller left (they have their answers): not a failure.
          return compiles_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++compile_failures_;
          spdlog::error("[req {}] compile of {} failed: {}", request_id, description,
                        std::string(reply.status().message()));
          absl::Status s = reply.status();
          // A valid spec that does not compile is our bug or a toolchain problem, not the
          // caller's: report it as INTERNAL, with the compiler log. Pool errors (worker died,
          // timeout, shutting down) keep their own codes.
          if (s.code() == absl::StatusCode::kInternal || s.code() == absl::StatusCode::kUnknown) {
            s = absl::InternalError(StrCat(description, ": ", s.message()));
          }
          return compiles_in_flight_.Complete(key, s, flight);
        }
        if (reply->layouts_size() != static_cast<int>(unit.parts.size())) {
          ++compile_failures_;
          return compiles_in_flight_.Complete(
              key,
              absl::InternalError(StrCat(description, ": layout query returned ",
                                         reply->layouts_size(), " layouts for ", unit.parts.size(),
                                         " parts")),
              flight);
        }
        ++compiles_;
        if (reply->pch_status() == "used") ++pch_warm_;
        compile_us_total_ += static_cast<uint64_t>(reply->compile_ms() * 1000);
        RecordCompileTime(reply->compile_ms());
        RememberArch(specs[0].arch());
        spdlog::info(
            "[req {}] compiled {} in {:.0f} ms + {:.0f} ms layout ({} bytes LTO-IR, PCH {})",
            request_id, description, reply->compile_ms(), reply->layout_ms(), reply->ltoir().size(),
            reply->pch_status());
        if (reply->pch_status().rfind("not created", 0) == 0) {
          // Every later compile on this worker stays cold (about 5x slower) until this is fixed.
          spdlog::warn(
              "[req {}] NVRTC could not build its precompiled header ({}); compiles on "
              "this worker stay cold",
              request_id, reply->pch_status());
        }

        Artifact artifact;
        artifact.set_key(key);
        artifact.set_ltoir(reply->ltoir());
        for (size_t i = 0; i < unit.parts.size(); ++i) {
          auto* part = artifact.add_parts();
          *part->mutable_spec() = specs[i];
          part->mutable_temp_storage()->set_bytes(reply->layouts(static_cast<int>(i)).bytes());
          part->mutable_temp_storage()->set_align(reply->layouts(static_cast<int>(i)).align());
          for (const auto& e : unit.parts[i].entries) {
            auto* entry = part->add_entries();
            entry->set_symbol(e.symbol);
            entry->set_declaration(e.declaration);
            entry->set_description(e.description);
            *artifact.add_entries() = *entry;
          }
        }
        if (artifact.parts_size() == 1) {
          *artifact.mutable_temp_storage() = artifact.parts(0).temp_storage();
          *artifact.mutable_spec() = artifact.parts(0).spec();
        }
        artifact.set_arch(specs[0].arch());
        artifact.add_formats(coop::v1::FORMAT_LTOIR);
        FillToolchain(ToolchainOf(specs[0]), artifact.mutable_toolchain());
        artifact.set_compile_ms(reply->compile_ms());
        artifact.set_compile_log(reply->log());
        artifact.set_source(unit.source);
        artifact.set_type_definitions(unit.type_definitions);
        artifact.set_pch_status(reply->pch_status());
        artifact.set_layout_ms(reply->layout_ms());
        for (const auto& in : link_inputs) *artifact.add_link_inputs() = in;
        // Store before completing the flight, so a request arriving after the flight ends
        // finds the entry (SingleFlight's re-check relies on this order).
        CacheValue value;
        value.blob = std::move(*artifact.mutable_ltoir());
        artifact.clear_ltoir();
        value.meta = artifact.SerializeAsString();
        cache_->Put(key, value, meta);
        artifact.set_ltoir(std::move(value.blob));
        artifact.set_origin(coop::v1::ORIGIN_COMPILED);
        compiles_in_flight_.Complete(key, artifact, flight);
      },
      flight);
}

void Service::RecordCompileTime(double ms) {
  compile_seconds_.Observe(ms / 1000.0);
  std::lock_guard<std::mutex> lock(times_mu_);
  recent_compile_ms_.push_back(ms);
  if (recent_compile_ms_.size() > 1024) recent_compile_ms_.pop_front();
}

}  // namespace coopd
