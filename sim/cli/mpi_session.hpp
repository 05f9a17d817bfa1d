#pragma once
// MPI_Init on construction, MPI_Finalize once (finalize() or the destructor), for the commands that
// run under mpirun (search_mpi.cpp, emulate_mpi.cpp). MPI is called from the constructing thread
// only (MPI_THREAD_FUNNELED). Include it only where TRAINSIM_HAVE_MPI is defined: only those files
// see mpi.h (sim/cli/CMakeLists.txt).
//
// Example:
//   MpiSession mpi;
//   if (mpi.rank() == 0) ...;
//   mpi.finalize();

#ifndef TRAINSIM_HAVE_MPI
#error "mpi_session.hpp needs TRAINSIM_HAVE_MPI (an MPI build)"
#endif

#include <mpi.h>

namespace trainsim::cli {

class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() { finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  void finalize() {
    if (!finalized_) {
      finalized_ = true;
      MPI_Finalize();
    }
  }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  bool finalized_ = false;
};

}  // namespace trainsim::cli
