// replay_main.cc: runs a fuzz target's LLVMFuzzerTestOneInput() over files, outside libFuzzer:
// the ordinary build's FuzzCorpus.* tests replay each committed corpus (seeds and the
// reproducers of past findings) this way, under gcc and, with COOPD_SANITIZE=ON, its
// sanitizers. Arguments are files or directories (every regular file in them, in name order).
// A property violation aborts, as in the fuzzer; exit status 0 means every input ran.
//
// Without ASan, the replay runs under a data limit (RLIMIT_DATA, 96 MiB), the counterpart of
// the smoke's -malloc_limit_mb: an input that makes the code under test allocate what a length
// field claims, before the bytes behind it are there, fails with std::bad_alloc.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#if defined(__SANITIZE_ADDRESS__)
#define COOPD_REPLAY_UNDER_ASAN 1  // gcc's macro; ASan's shadow memory needs no data limit
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COOPD_REPLAY_UNDER_ASAN 1
#endif
#endif

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
#ifndef COOPD_REPLAY_UNDER_ASAN
  constexpr rlim_t kDataLimit = rlim_t{96} << 20;
  const rlimit limit{kDataLimit, kDataLimit};
  if (setrlimit(RLIMIT_DATA, &limit) != 0) {
    std::perror("replay: setrlimit(RLIMIT_DATA)");
    return 2;
  }
#endif
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::directory_iterator(argv[i])) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else if (fs::is_regular_file(argv[i], ec)) {
      inputs.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream f(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs ran\n", inputs.size());
  return 0;
}
