// A frontend's first use of coopd, built outside coopd's tree against the installed package:
// ask for BlockReduce<float, 256> for sm_90 and print what a JIT needs from the artifact.
//   consumer_cpp SOCKET
#include <coop/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer_cpp SOCKET\n");
    return 2;
  }
  coop::ClientOptions options;
  options.socket_path = argv[1];
  options.autostart = false;
  options.client_name = "consumer_cpp";
  coop::Client client(options);
  auto health = client.Health();
  if (!health) {
    std::fprintf(stderr, "consumer_cpp: health: %s\n", health.error().message.c_str());
    return 1;
  }
  coop::Spec spec;
  spec.family = "block_reduce";
  spec.method = "sum";
  spec.dtype = "float32";
  spec.block = {256};
  spec.arch = "sm_90";
  auto a = client.Specialize(spec);
  if (!a) {
    std::fprintf(stderr, "consumer_cpp: %s: %s\n", coop::ErrorCodeName(a.error().code),
                 a.error().message.c_str());
    return 1;
  }
  std::printf("health %s\ntemp_storage %llu %llu\nltoir_bytes %zu\nentry %s\n",
              coop::HealthStatusName(*health),
              static_cast<unsigned long long>(a->temp_storage_bytes),
              static_cast<unsigned long long>(a->temp_storage_align), a->ltoir.size(),
              a->entries.empty() ? "" : a->entries[0].symbol.c_str());
  return 0;
}
