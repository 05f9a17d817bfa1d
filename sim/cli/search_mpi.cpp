#include "sim/cli/search_mpi.hpp"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <utility>
#include <vector>

#include "sim/plan/progress.hpp"
#include "sim/core/error.hpp"

#ifdef TRAINSIM_HAVE_MPI
#include "sim/cli/mpi_session.hpp"
#endif

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

// A positive integer environment variable, or -1.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 && n <= INT_MAX ? static_cast<int>(n) : -1;
}

#ifdef TRAINSIM_HAVE_MPI

// What one rank sends to rank 0: its exit code and, for 0 and EXIT_INTERRUPTED, its shard document
// (the text of `search --shard R/N`); for 1 and 2, the error as JSON ({"input_error": [problems]} or
// {"error": message}) so that rank 0 throws it again as the same kind and main prints it once.
struct Part {
  int code = 0;
  std::string text;
};

core::Json problems_json(const core::InputError& e) {
  core::Json problems = core::Json::array();
  for (const core::InputProblem& p : e.problems()) {
    problems.push_back({{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}});
  }
  return problems;
}

Part evaluate_part(SearchArgs args, int rank, int size, std::ostream& err) {
  try {
    if (!args.shard.empty()) {
      throw core::InputError("--shard", "",
                             fmt::format("cannot be used under mpirun (here {} ranks): rank R already evaluates shard R/{}; "
                                         "use --shard without mpirun, or mpirun without --shard",
                                         size, size));
    }
    args.options.shard_index = rank;
    args.options.shard_count = size;
    if (rank != 0) args.options.quiet = true;  // the other ranks print nothing, not even progress
    bool interrupted = false;
    Part part;
    part.text = search_shard_text(std::move(args), err, interrupted);
    part.code = interrupted ? EXIT_INTERRUPTED : 0;
    // MPI_Gatherv counts and displacements are ints: every part must fit in INT_MAX / size bytes.
    if (part.text.size() > static_cast<size_t>(INT_MAX / size)) {
      throw core::InputError("--refine", "",
                             fmt::format("rank {}'s shard result is {} bytes, too large to gather over {} ranks; lower "
                                         "--refine",
                                         rank, part.text.size(), size));
    }
    return part;
  } catch (const core::InputError& e) {
    return {2, core::Json{{"input_error", problems_json(e)}}.dump()};
  } catch (const core::InternalError& e) {
    return {1, core::Json{{"error", std::string(e.what()) + " (a bug in trainsim; please report it with the scenario)"}}.dump()};
  } catch (const std::exception& e) {
    return {1, core::Json{{"error", e.what()}}.dump()};
  }
}

[[noreturn]] void rethrow_part(const Part& part, int rank) {
  const core::Json j = core::Json::parse(part.text);
  if (j.contains("input_error")) {
    std::vector<core::InputProblem> problems;
    for (const core::Json& p : j["input_error"]) {
      problems.push_back({p["file"].get<std::string>(), p["pointer"].get<std::string>(), p["message"].get<std::string>()});
    }
    throw core::InputError(std::move(problems));
  }
  throw std::runtime_error(fmt::format("MPI rank {}: {}", rank, j.value("error", std::string("failed"))));
}

#endif  // TRAINSIM_HAVE_MPI

}  // namespace

int mpi_world_size() {
  const int n = env_int("OMPI_COMM_WORLD_SIZE");
  return n > 1 ? n : 1;
}

#ifndef TRAINSIM_HAVE_MPI

bool mpi_built() { return false; }

int search_mpi_command(SearchArgs, std::ostream&, std::ostream&) {
  if (env_int("OMPI_COMM_WORLD_RANK") > 0) return 0;  // rank 0 says why and exits 2 (see below)
  throw core::InputError("search", "",
                         fmt::format("started by mpirun with {} ranks, but this trainsim was built without MPI (install "
                                     "libopenmpi-dev and configure again), or split the search with --shard I/N and "
                                     "`trainsim search merge`",
                                     mpi_world_size()));
}

#else

bool mpi_built() { return true; }

int search_mpi_command(SearchArgs args, std::ostream& out, std::ostream& err) {
  const auto start = std::chrono::steady_clock::now();
  StopOnInterrupt interrupt;
  MpiSession mpi;
  const int rank = mpi.rank(), size = mpi.size();
  const Part mine = evaluate_part(args, rank, size, err);

  // Rank 0 gathers every rank's code and size, then the texts.
  const long long header[2] = {mine.code, static_cast<long long>(mine.text.size())};
  std::vector<long long> headers(rank == 0 ? 2 * static_cast<size_t>(size) : 0);
  MPI_Gather(header, 2, MPI_LONG_LONG, headers.data(), 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::vector<int> counts, displacements;
  std::string all;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      displacements.push_back(static_cast<int>(all.size()));
      counts.push_back(static_cast<int>(headers[2 * static_cast<size_t>(r) + 1]));
      all.resize(all.size() + static_cast<size_t>(counts.back()));
    }
  }
  MPI_Gatherv(mine.text.data(), static_cast<int>(mine.text.size()), MPI_CHAR, all.data(), counts.data(),
              displacements.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  mpi.finalize();
  // The other ranks exit 0 whatever happened: mpirun kills the whole job as soon as one rank exits
  // non-zero, which would cut rank 0 short while it prints; rank 0's code is the job's.
  if (rank != 0) return 0;

  std::vector<Part> parts;
  for (int r = 0; r < size; ++r) {
    const auto i = static_cast<size_t>(r);
    parts.push_back({static_cast<int>(headers[2 * i]),
                     all.substr(static_cast<size_t>(displacements[i]), static_cast<size_t>(counts[i]))});
  }
  // An error on any rank (the same input error on all of them, usually) is printed once, rank 0's first.
  for (int r = 0; r < size; ++r) {
    const Part& p = parts[static_cast<size_t>(r)];
    if (p.code != 0 && p.code != EXIT_INTERRUPTED) rethrow_part(p, r);
  }
  if (!args.options.quiet) {
    err << fmt::format("search: {} MPI ranks: {} bytes of shard results gathered on rank 0 after {:.2f} s\n", size,
                       all.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::vector<std::pair<core::Json, std::string>> shards;
  for (int r = 0; r < size; ++r) {
    shards.emplace_back(core::Json::parse(parts[static_cast<size_t>(r)].text), fmt::format("MPI rank {}", r));
  }
  // The SimGrid re-check of the top runs here, on rank 0 only (its --jobs threads).
  const int code = merge_shards(shards, args, out);
  if (!args.options.quiet) {
    err << fmt::format("search: done in {:.1f} s\n",
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return code;
}

#endif  // TRAINSIM_HAVE_MPI

}  // namespace trainsim::cli
