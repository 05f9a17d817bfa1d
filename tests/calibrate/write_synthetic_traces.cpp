// Writes the synthetic traced run of synthetic_trace.hpp (16 A100 ranks on 2 hosts, made from known
// device and network parameters) to a folder, so that docs/workflow.md's commands can be run on it:
//   build/tests/calibrate/write_synthetic_traces traces/

#include <iostream>

#include "tests/calibrate/synthetic_trace.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_synthetic_traces FOLDER\n";
    return 2;
  }
  using namespace trainsim::calibrate::testing;
  const std::vector<std::string> paths = write_synthetic_run(make_synthetic_run(SyntheticParameters{}), argv[1]);
  std::cout << paths.size() << " trace files written to " << argv[1] << "\n";
  return 0;
}
