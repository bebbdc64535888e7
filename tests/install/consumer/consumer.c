/* The C ABI from a frontend built outside coopd's tree against the installed package:
 * BlockReduce<float, 256> for sm_90 through libcoop_c.so.
 *   consumer_c SOCKET */
#include <coop/coop_c.h>
#include <stdio.h>

int main(int argc, char** argv) {
  coop_options_t* options;
  coop_client_t* client = NULL;
  coop_spec_t* spec;
  coop_artifact_t* artifact = NULL;
  uint64_t bytes = 0, align = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c SOCKET\n");
    return 2;
  }
  options = coop_options_create();
  coop_options_set_autostart(options, 0);
  spec = coop_spec_create();
  coop_spec_set_string(spec, "family", "block_reduce");
  coop_spec_set_string(spec, "dtype", "float32");
  coop_spec_set_uint(spec, "block.x", 256);
  coop_spec_set_string(spec, "arch", "sm_90");
  if (coop_client_open(argv[1], options, &client) != COOP_OK ||
      coop_client_specialize(client, spec, &artifact) != COOP_OK) {
    fprintf(stderr, "consumer_c: %s\n", coop_last_error());
    return 1;
  }
  coop_artifact_temp_storage(artifact, &bytes, &align);
  printf("abi %d\ntemp_storage %llu %llu\n", coop_abi_version(), (unsigned long long)bytes,
         (unsigned long long)align);
  coop_artifact_destroy(artifact);
  coop_spec_destroy(spec);
  coop_client_destroy(client);
  coop_options_destroy(options);
  return 0;
}
