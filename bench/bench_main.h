#pragma once
// Every benchmark's main: what its run throws (a bad argument, a missing file) ends in
// one line on stderr and exit status 1, never an abort.
#include <cstdio>
#include <exception>

namespace dayzero::bench {

template <class Run>
int guarded_main(const char* name, Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace dayzero::bench
