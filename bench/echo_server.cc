// echo_server: the transport floor for hit_bench. A minimal gRPC server with the same callback
// API as coopd (a raw-ByteBuffer callback method of coop.v1.Coop, server/rpc/grpc_service.h) on
// a Unix socket, answering every Specialize with the same bytes: a real coopd reply, captured
// by hit_bench and read from a file. It does nothing else (no decode, no cache, no executor
// hop), so whatever coopd costs above it is coopd's own work.
//
// usage: echo_server --socket PATH --payload FILE   (prints "ready" once it serves)
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "coop/v1/coop.grpc.pb.h"

namespace {

class Echo final
    : public coop::v1::Coop::WithRawCallbackMethod_Specialize<coop::v1::Coop::Service> {
 public:
  explicit Echo(std::string payload) : payload_(std::move(payload)) {}
  grpc::ServerUnaryReactor* Specialize(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* /*request*/,
                                       grpc::ByteBuffer* response) override {
    // One slice over the payload bytes, copied into the reply as coopd's serializer copies its
    // message: the same work per byte on the way out.
    grpc::Slice slice(payload_.data(), payload_.size());
    *response = grpc::ByteBuffer(&slice, 1);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const std::string payload_;
};

volatile std::sig_atomic_t stop = 0;

}  // namespace

int main(int argc, char** argv) {
  std::string socket, payload_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--socket") {
      socket = argv[i + 1];
    } else if (a == "--payload") {
      payload_file = argv[i + 1];
    } else {
      std::fprintf(stderr, "echo_server: unknown option \"%s\" (allowed: --socket, --payload)\n",
                   a.c_str());
      return 2;
    }
  }
  if (socket.empty() || payload_file.empty()) {
    std::fprintf(stderr, "usage: echo_server --socket PATH --payload FILE\n");
    return 2;
  }
  std::ifstream in(payload_file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "echo_server: cannot read --payload \"%s\"\n", payload_file.c_str());
    return 2;
  }
  Echo service(bytes.str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(256 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "echo_server: cannot listen on unix:%s\n", socket.c_str());
    return 1;
  }
  std::signal(SIGTERM, [](int) { stop = 1; });
  std::signal(SIGINT, [](int) { stop = 1; });
  std::printf("ready\n");
  std::fflush(stdout);
  while (!stop) pause();
  server->Shutdown();
  return 0;
}
