// link.cc: Link: artifacts fetched by key, a key over every input, single-flight, nvJitLink in a
// worker.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/service/service.h"
#include "server/service/service_internal.h"
#include "server/util/escape.h"
#include "server/util/sha256.h"
#include "server/util/strings.h"

namespace coopd {

using coop::v1::Artifact;
using coop::v1::LinkResponse;
namespace wv1 = coop::worker::v1;

namespace {

constexpr size_t kMaxLinkModules = 16;
constexpr size_t kMaxLinkBytes = size_t{64} << 20;
constexpr size_t kMaxLinkOptions = 32;
constexpr char kLinkKeySchema[] = "coopd-link-v1";

bool IsHexKey(const std::string& k) {
  return k.size() == 64 && std::all_of(k.begin(), k.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

void Service::Link(const coop::v1::LinkRequest& request, const std::string& request_id,
                   LinkDone done, bool may_compile, const RequestScope& caller) {
  ++requests_;
  auto invalid = [&](std::string message) {
    ++invalid_;
    spdlog::info("[req {}] invalid link request: {}", request_id, message);
    done(absl::InvalidArgumentError(std::move(message)));
  };
  const std::vector<std::string> archs = ArchNames(toolchain_.supported_archs);
  const std::string& arch = request.arch();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
    return invalid(
        StrCat("link: arch must be one of ", StrJoin(archs, ", "), "; got ", QuoteValue(arch)));
  }
  if (request.modules_size() < 1 || request.modules_size() > static_cast<int>(kMaxLinkModules)) {
    return invalid(StrCat("link: modules must hold 1..", kMaxLinkModules,
                          " kernel modules (LTO-IR or PTX), got ", request.modules_size()));
  }
  size_t total = 0;
  for (int i = 0; i < request.modules_size(); ++i) {
    const auto& m = request.modules(i);
    if (m.data().empty()) return invalid(StrCat("link: modules[", i, "].data is empty"));
    total += m.data().size();
  }
  if (total > kMaxLinkBytes) {
    return invalid(StrCat("link: modules hold ", total, " bytes, more than the ", kMaxLinkBytes,
                          "-byte limit"));
  }
  if (request.options_size() > static_cast<int>(kMaxLinkOptions)) {
    return invalid(
        StrCat("link: at most ", kMaxLinkOptions, " options, got ", request.options_size()));
  }
  std::vector<std::string> options;
  if (!request.keep_unused_variables()) options.push_back("-optimize-unused-variables");
  for (int i = 0; i < request.options_size(); ++i) {
    const std::string& o = request.options(i);
    if (o.size() < 2 || o[0] != '-' || o.size() > 256) {
      return invalid(StrCat("link: options[", i,
                            "] must be an nvJitLink option starting with '-' "
                            "(at most 256 characters), got ",
                            QuoteValue(o)));
    }
    if (o.rfind("-arch", 0) == 0 || o == "-ptx" || o == "-lto") {
      return invalid(StrCat("link: options[", i, "] \"", o,
                            "\" is set by coopd (it links with -arch from `arch`, -lto, to a "
                            "cubin); remove it"));
    }
    options.push_back(o);
  }

  // Every input goes into the key: the modules' bytes, the artifacts (by their own content
  // keys), the options, the arch and the linker's version.
  Sha256 h;
  h.UpdateField(kLinkKeySchema);
  h.UpdateField(arch);
  h.UpdateField(toolchain_.NvJitLinkVersion());
  h.UpdateField(std::to_string(options.size()));
  for (const auto& o : options) h.UpdateField(o);
  h.UpdateField(std::to_string(request.modules_size()));
  for (const auto& m : request.modules()) {
    h.UpdateField(m.kind() == coop::v1::LinkModule::KIND_PTX ? "ptx" : "ltoir");
    h.UpdateField(Sha256::Hex(m.data()));
  }
  h.UpdateField(std::to_string(request.artifact_keys_size()));
  for (const auto& k : request.artifact_keys()) h.UpdateField(k);
  const std::string key = h.FinishHex();

  if (auto hit = cache_->Get(key)) {
    LinkResponse response;
    if (response.ParseFromString(hit->value->meta) && response.key() == key &&
        !hit->value->blob.empty()) {
      response.set_cubin(hit->value->blob);
      ++link_hits_;
      response.set_origin(ProtoOrigin(hit->origin));
      spdlog::info("[req {}] link hit key {}", request_id, key.substr(0, 16));
      return done(std::move(response));
    }
  }

  if (!may_compile) {
    spdlog::info("[req {}] link miss key {}: not linked (the caller's role is read)", request_id,
                 key.substr(0, 16));
    return done(absl::PermissionDeniedError(
        StrCat("link: this link is not cached (key ", key.substr(0, 16),
               "), and this caller's token has role read, which fetches cached results but "
               "cannot link; a compile or admin token can")));
  }
  // Gather the artifacts' LTO-IR (a miss here is the caller's to fix: Specialize first).
  wv1::Request job_request;
  auto* job = job_request.mutable_link();
  job->set_arch(arch);
  for (const auto& o : options) job->add_options(o);
  for (const auto& m : request.modules()) {
    auto* in = job->add_inputs();
    in->set_kind(m.kind() == coop::v1::LinkModule::KIND_PTX ? wv1::LinkInput::PTX
                                                            : wv1::LinkInput::LTOIR);
    in->set_name(m.name().empty() ? "kernel" : m.name());
    in->set_data(m.data());
  }
  std::vector<std::string> operator_symbols;
  for (int i = 0; i < request.artifact_keys_size(); ++i) {
    const std::string& k = request.artifact_keys(i);
    if (!IsHexKey(k)) {
      return invalid(StrCat("link: artifact_keys[", i,
                            "] must be a 64-digit lowercase hex key, "
                            "got ",
                            QuoteValue(k)));
    }
    auto artifact = LookupArtifact(k, std::nullopt);
    if (artifact && artifact->has_bitcode()) {
      return invalid(StrCat("link: artifact_keys[", i, "] ", k,
                            " is an LLVM bitcode artifact; Link links LTO-IR (give the key of the "
                            "FORMAT_LTOIR artifact, Artifact.key)"));
    }
    if (!artifact) {
      return done(absl::NotFoundError(StrCat("link: artifact_keys[", i, "] ", k,
                                             " is not in this coopd's cache; request it with "
                                             "Specialize first")));
    }
    if (artifact->arch() != arch) {
      return invalid(
          StrCat("link: artifact_keys[", i, "] was built for ", artifact->arch(), ", not ", arch));
    }
    auto* in = job->add_inputs();
    in->set_kind(wv1::LinkInput::LTOIR);
    in->set_name(StrCat("artifact ", k.substr(0, 16)));
    in->set_data(artifact->ltoir());
    // The user operators it calls, each once however many artifacts share it.
    for (const auto& op : artifact->link_inputs()) {
      if (std::find(operator_symbols.begin(), operator_symbols.end(), op.symbol()) !=
          operator_symbols.end()) {
        continue;
      }
      operator_symbols.push_back(op.symbol());
      auto* extra = job->add_inputs();
      extra->set_kind(wv1::LinkInput::LTOIR);
      extra->set_name(StrCat("operator ", op.symbol()));
      extra->set_data(op.ltoir());
    }
  }

  // As Fetch does for compiles: leaving on cancellation, a link quota'd like a compile.
  const bool quota = quotas_.enabled() && !caller.client.empty();
  SingleFlight<LinkResponse>::JoinOptions join;
  join.cancel = caller.cancel;
  if (quota) join.lead_refusal = quotas_.TakeCompile(caller.client, ClientQuotas::Clock::now());
  auto leads = std::make_shared<bool>(false);
  std::shared_ptr<CancelToken> flight;
  auto joined = links_in_flight_.Join(
      key,
      [this, leads, client = quota ? caller.client : std::string(),
       done = std::move(done)](const absl::StatusOr<LinkResponse>& r) {
        if (*leads && !client.empty() && r.ok() && r->origin() == coop::v1::ORIGIN_COMPILED) {
          quotas_.ChargeBytes(client, r->cubin().size(), ClientQuotas::Clock::now());
        }
        done(r);
      },
      std::move(join), &flight);
  if (quota && joined == SingleFlight<LinkResponse>::Joined::kWaiter) {
    quotas_.ReturnCompile(caller.client);
  }
  if (joined != SingleFlight<LinkResponse>::Joined::kLeader) return;
  *leads = true;
  spdlog::info("[req {}] linking {} module(s) + {} artifact(s) for {} key {}", request_id,
               request.modules_size(), request.artifact_keys_size(), arch, key.substr(0, 16));
  pool_->Submit(
      std::move(job_request), "link", StrCat("link for ", arch),
      [this, key, arch, options, request_id, flight](absl::StatusOr<wv1::Reply> reply) {
        if (!reply.ok() && flight->cancelled()) {
          return links_in_flight_.Complete(key, reply.status(), flight);
        }
        if (!reply.ok()) {
          ++link_failures_;
          absl::Status s = reply.status();
          // The inputs came from the caller: a failing link is theirs to fix, and the
          // message carries nvJitLink's whole log.
          if (s.code() == absl::StatusCode::kInternal) {
            s = absl::InvalidArgumentError(StrCat("link: ", s.message()));
          }
          spdlog::info("[req {}] link failed: {}", request_id, std::string(s.message()));
          return links_in_flight_.Complete(key, s, flight);
        }
        ++links_;
        LinkResponse response;
        response.set_cubin(reply->cubin());
        response.set_key(key);
        response.set_link_ms(reply->link_ms());
        for (const auto& o : options) response.add_options(o);
        CacheValue value;
        value.blob = response.cubin();
        response.clear_cubin();
        value.meta = response.SerializeAsString();
        response.set_cubin(value.blob);
        cache_->Put(key, value, EntryMeta{"link", "", arch, "", ""});
        response.set_origin(coop::v1::ORIGIN_COMPILED);
        links_in_flight_.Complete(key, response, flight);
      },
      flight);
}

}  // namespace coopd
