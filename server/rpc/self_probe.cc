#include "server/rpc/self_probe.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <future>

#include "server/util/strings.h"

namespace coopd {

std::shared_ptr<grpc::ChannelCredentials> SelfProbeTlsCredentials() {
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_verify_server_certs(false);
  options.set_check_call_host(false);
  options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

SelfProbe::SelfProbe(std::vector<ProbeTarget> targets, std::chrono::milliseconds interval,
                     std::chrono::milliseconds deadline, int max_failures,
                     std::function<void(const std::string&)> on_dead)
    : targets_(std::move(targets)),
      interval_(interval),
      deadline_(deadline),
      max_failures_(max_failures),
      on_dead_(std::move(on_dead)) {}

SelfProbe::~SelfProbe() {
  Stop();
}

std::string SelfProbe::ProbeOnce(const ProbeTarget& t, std::chrono::milliseconds deadline) {
  // A connection of its own: a channel shares its subchannels (and so a connection that was
  // accepted long ago) with other channels to the same target unless told not to, and a listener
  // that stopped accepting still serves the connections it has.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("grpc.self_probe", 1);  // never equal to a client channel's arguments
  auto channel = grpc::CreateCustomChannel(t.target, t.credentials, args);
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  ctx.set_wait_for_ready(false);
  // grpc.health.v1.HealthCheckRequest{service: ""}: no bytes.
  grpc::ByteBuffer request, reply;
  {
    grpc::Slice empty("");
    request = grpc::ByteBuffer(&empty, 1);
  }
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &reply,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status s = done.get_future().get();
  if (s.ok()) return {};
  if (t.any_answer && s.error_code() != grpc::StatusCode::UNAVAILABLE &&
      s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
    return {};
  }
  const char* code = s.error_code() == grpc::StatusCode::UNAVAILABLE         ? "UNAVAILABLE"
                     : s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? "DEADLINE_EXCEEDED"
                                                                             : "status";
  return StrCat(t.name, ": ", code, " (", static_cast<int>(s.error_code()),
                "): ", s.error_message());
}

void SelfProbe::Start() {
  if (!targets_.empty()) thread_ = std::thread([this] { Run(); });
}

void SelfProbe::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SelfProbe::Run() {
  int failures = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, interval_, [this] { return stop_; })) return;
    }
    std::string why;
    for (const auto& t : targets_) {
      why = ProbeOnce(t, deadline_);
      if (!why.empty()) break;
    }
    if (why.empty()) {
      if (failures > 0) spdlog::info("self-probe: every listener answers again");
      failures = 0;
      sd_notify(0, "WATCHDOG=1");
      continue;
    }
    ++failures;
    spdlog::warn("self-probe: {} (failure {} of {} in a row)", why, failures, max_failures_);
    if (failures >= max_failures_) {
      on_dead_(why);
      return;
    }
  }
}

}  // namespace coopd
