#include "calibrate/nccl_tests_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/core/text_file.hpp"

namespace trainsim::calibrate {
namespace {

using core::CollectiveOp;
using core::InputError;

constexpr std::string_view WHITESPACE = " \t\r\n";

std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = text.find_first_not_of(WHITESPACE);
  while (i != std::string_view::npos) {
    const size_t end = text.find_first_of(WHITESPACE, i);
    out.push_back(text.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    i = end == std::string_view::npos ? end : text.find_first_not_of(WHITESPACE, end);
  }
  return out;
}

template <class Int>
bool parse_integer(std::string_view s, Int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_number(std::string_view s, double& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Element sizes of nccl-tests' -d types; 0 for a name it does not know.
size_t type_size(std::string_view type) {
  static const std::map<std::string_view, size_t> sizes = {
      {"int8", 1},  {"uint8", 1},  {"f8e4m3", 1}, {"f8e5m2", 1},  {"half", 2},   {"bfloat16", 2},
      {"int32", 4}, {"uint32", 4}, {"float", 4},  {"int64", 8},   {"uint64", 8}, {"double", 8}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}

constexpr std::string_view PROGRAMS = "all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, "
                                      "reduce_perf, alltoall_perf";

// Where the columns are, from the column header line ("# size count type redop root time ...").
struct Columns {
  size_t line = 0;
  size_t size = 0;
  std::optional<size_t> count, type, redop, root;
  size_t out_of_place = 0;
  size_t in_place = 0;  // == out_of_place when there is one time column
  size_t needed = 0;    // fields a row must have

  static std::optional<Columns> of(const std::vector<std::string_view>& names, size_t line) {
    Columns c;
    c.line = line;
    std::vector<size_t> times;
    bool size_found = false;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string_view n = names[i];
      if ((n == "size" || n == "bytes") && !size_found) {
        c.size = i;
        size_found = true;
      } else if (n == "count") {
        c.count = i;
      } else if (n == "type") {
        c.type = i;
      } else if (n == "redop") {
        c.redop = i;
      } else if (n == "root") {
        c.root = i;
      } else if (n == "time" || n == "cputime") {
        times.push_back(i);
      }
    }
    if (!size_found || times.empty()) return std::nullopt;
    c.out_of_place = times.front();
    c.in_place = times.size() > 1 ? times[1] : times.front();
    c.needed = std::max({c.size, c.out_of_place, c.in_place, c.count.value_or(0), c.type.value_or(0),
                         c.redop.value_or(0), c.root.value_or(0)}) + 1;
    return c;
  }
};

class Parser {
 public:
  Parser(std::string file, std::optional<CollectiveOp> op) : file_(std::move(file)), op_(op) {}

  void line(std::string_view text, size_t number) {
    const std::vector<std::string_view> f = fields(text);
    if (f.empty()) return;
    if (f.front().front() == '#') {
      comment(text.substr(text.find('#') + 1), number);
    } else if (columns_ && all_digits(f.front())) {
      row(f, number);
    }
    // Anything else (NCCL_DEBUG output, MPI and loader warnings, the command echoed) is not
    // nccl-tests' own output.
  }

  std::vector<NcclTestsRun> finish() {
    close_run();
    if (runs_.empty()) {
      throw InputError(file_, "",
                       fmt::format("no nccl-tests results (no table of \"size ... time algbw busbw\" rows): not the "
                                   "output of one of nccl-tests' {}",
                                   PROGRAMS));
    }
    return std::move(runs_);
  }

 private:
  std::string at(size_t line) const { return fmt::format("{}:{}", file_, line); }

  void comment(std::string_view text, size_t number) {
    const std::vector<std::string_view> f = fields(text);
    if (f.empty()) return;
    const auto starts = [&](std::initializer_list<std::string_view> words) {
      if (f.size() < words.size()) return false;
      return std::equal(words.begin(), words.end(), f.begin());
    };
    if (starts({"nccl-tests", "version"}) || starts({"nThread"})) {
      begin_run(number, true);
      for (std::string_view field : f) {  // "nccl-library=22602": the NCCL the test ran with
        constexpr std::string_view LIBRARY = "nccl-library=";
        if (field.substr(0, LIBRARY.size()) != LIBRARY) continue;
        uint32_t code = 0;
        const auto [ptr, ec] = std::from_chars(field.data() + LIBRARY.size(), field.data() + field.size(), code);
        if (ec == std::errc() && ptr == field.data() + field.size()) current_.nccl_version = code;
      }
    } else if (starts({"Collective", "test", "starting:"})) {
      begin_run(number, true);
      if (f.size() > 3) name_program(f[3], number);
    } else if (starts({"Collective", "test", "concluded:"})) {
      if (f.size() > 3) name_program(f[3], number);
      columns_.reset();
    } else if (starts({"Rank"})) {
      begin_run(number, false);
      rank(text, f, number);
    } else if (f.front() == "size" || f.front() == "bytes") {
      begin_run(number, false);
      columns_ = Columns::of(f, number);
      if (!columns_) {
        throw InputError(at(number), "", "a column header without a \"time\" column: not nccl-tests' result table");
      }
    } else if (starts({"Out", "of", "bounds"}) || starts({"Avg", "bus", "bandwidth"})) {
      columns_.reset();
    }
  }

  // A line of a run's preamble (`header`: the lines that start one) or of its device list or column
  // header: after result rows, or a header after device lines, it opens the next run.
  void begin_run(size_t number, bool header) {
    if (!current_.rows.empty() || (header && !current_.ranks.empty())) close_run();
    if (header) columns_.reset();
    if (current_.first_line == 0) current_.first_line = number;
  }

  void name_program(std::string_view name, size_t number) {
    if (!current_.program.empty() && current_.program != name) {
      throw InputError(at(number), "",
                       fmt::format("this run was started as {} and concludes as {}", current_.program, name));
    }
    if (current_.program.empty()) program_line_ = number;
    current_.program = std::string(name);
  }

  // "Rank  0 Group  0 Pid  1234 on  host device  0 [0x07] NVIDIA A100-SXM4-80GB" (old versions: no Group, "[0x07]").
  void rank(std::string_view text, const std::vector<std::string_view>& f, size_t number) {
    NcclTestsRank r;
    r.line = number;
    size_t i = 1;
    auto word = [&](std::string_view w) { return i < f.size() && f[i] == w ? (++i, true) : false; };
    auto integer = [&](int& out) { return i < f.size() && parse_integer(f[i], out) ? (++i, true) : false; };
    int pid = 0;
    bool ok = integer(r.rank) && (!word("Group") || integer(r.group)) && word("Pid") && integer(pid) && word("on");
    if (ok && i < f.size()) r.host = std::string(f[i++]);
    ok = ok && !r.host.empty() && word("device") && integer(r.device) && i < f.size() && f[i].front() == '[';
    const size_t bracket = text.find(']');
    if (!ok || bracket == std::string_view::npos) {
      throw InputError(at(number), "",
                       fmt::format("expected a device line \"#  Rank N Group G Pid P on HOST device D [BUS] NAME\", "
                                   "found \"#{}\"",
                                   text));
    }
    r.gpu = fmt::format("{}", fmt::join(fields(text.substr(bracket + 1)), " "));
    for (const NcclTestsRank& other : current_.ranks) {
      if (other.rank == r.rank) {
        throw InputError(at(number), "",
                         fmt::format("rank {} is listed twice (also at line {}): the processes did not form one "
                                     "communicator (build nccl-tests with MPI=1 and launch one run with mpirun)",
                                     r.rank, other.line));
      }
    }
    current_.ranks.push_back(std::move(r));
  }

  void row(const std::vector<std::string_view>& f, size_t number) {
    const Columns& c = *columns_;
    if (f.size() < c.needed) {
      throw InputError(at(number), "",
                       fmt::format("expected a result row of at least {} fields (the columns of line {}), found {}",
                                   c.needed, c.line, f.size()));
    }
    NcclTestsRow r;
    r.line = number;
    uint64_t bytes = 0;
    if (!parse_integer(f[c.size], bytes)) {
      throw InputError(at(number), "", fmt::format("expected a size in bytes, found \"{}\"", f[c.size]));
    }
    r.size = core::Bytes(static_cast<double>(bytes));
    if (c.count && !parse_integer(f[*c.count], r.count)) {
      throw InputError(at(number), "", fmt::format("expected an element count, found \"{}\"", f[*c.count]));
    }
    if (c.type) r.type = std::string(f[*c.type]);
    if (c.redop) r.redop = std::string(f[*c.redop]);
    if (c.root && !parse_integer(f[*c.root], r.root)) {
      throw InputError(at(number), "", fmt::format("expected a root rank, found \"{}\"", f[*c.root]));
    }
    auto time = [&](size_t column, const char* which) {
      double us = 0;
      if (!parse_number(f[column], us) || us <= 0) {
        throw InputError(at(number), "",
                         fmt::format("expected a positive {} time in microseconds (field {}), found \"{}\"", which,
                                     column + 1, f[column]));
      }
      return core::Seconds(us * 1e-6);
    };
    r.out_of_place = time(c.out_of_place, "out-of-place");
    r.in_place = time(c.in_place, "in-place");
    if (current_.ranks.empty()) {
      throw InputError(at(number), "",
                       "a result row before any \"#  Rank N ... on HOST device D ...\" line: the ranks and hosts "
                       "of the run are unknown");
    }
    current_.rows.push_back(std::move(r));
  }

  // The op of the run: its program, else --op, else what its first row shows.
  CollectiveOp op_of(const NcclTestsRun& run) const {
    if (!run.program.empty()) {
      const std::optional<CollectiveOp> named = nccl_tests_program_op(run.program);
      if (!named) {
        throw InputError(at(program_line_), "",
                         fmt::format("{} does not measure a collective calibrate fits ({})", run.program, PROGRAMS));
      }
      if (op_ && *op_ != *named) {
        throw InputError(at(program_line_), "",
                         fmt::format("the output is of {} ({}), but --op says {}", run.program,
                                     core::to_string(*named), core::to_string(*op_)));
      }
      return *named;
    }
    if (op_) return *op_;
    const NcclTestsRow& r = run.rows.front();
    const double element = static_cast<double>(type_size(r.type));
    const double n = static_cast<double>(run.ranks.size());
    const double counted = static_cast<double>(r.count) * element;
    if (!r.redop.empty() && r.root >= 0) return r.redop == "none" ? CollectiveOp::BROADCAST : CollectiveOp::REDUCE;
    if (!r.redop.empty() && r.redop != "none" && counted > 0) {
      if (counted == r.size.value()) return CollectiveOp::ALL_REDUCE;
      if (counted * n == r.size.value()) return CollectiveOp::REDUCE_SCATTER;
    }
    throw InputError(run.where(), "",
                     "the output does not name its program (no \"# Collective test starting:\" line: an older "
                     "nccl-tests) and its rows do not tell which collective it measured: give it with --op "
                     "(all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all)");
  }

  void close_run() {
    if (current_.ranks.empty() && current_.rows.empty()) {
      current_ = NcclTestsRun{};
      return;
    }
    NcclTestsRun run = std::move(current_);
    current_ = NcclTestsRun{};
    run.file = file_;
    if (run.rows.empty()) {
      throw InputError(run.where(), "", "a run with ranks but no result rows (did it fail or stop early?)");
    }
    std::set<int> groups;
    for (const NcclTestsRank& r : run.ranks) groups.insert(r.group);
    if (groups.size() > 1) {
      throw InputError(run.where(), "",
                       fmt::format("the ranks are split into {} groups (NCCL_TESTS_SPLIT): concurrent communicators "
                                   "of unknown placement; calibrate reads unsplit runs",
                                   groups.size()));
    }
    if (run.ranks.size() < 2) {
      throw InputError(run.where(), "", "a run on one rank: no communication to fit");
    }
    run.op = op_of(run);
    runs_.push_back(std::move(run));
  }

  std::string file_;
  std::optional<CollectiveOp> op_;
  std::vector<NcclTestsRun> runs_;
  NcclTestsRun current_;
  std::optional<Columns> columns_;
  size_t program_line_ = 0;
};

}  // namespace

size_t NcclTestsRun::hosts() const {
  std::set<std::string> h;
  for (const NcclTestsRank& r : ranks) h.insert(r.host);
  return h.size();
}

int NcclTestsRun::busiest_host() const {
  std::map<std::string, int> per_host;
  int busiest = 0;
  for (const NcclTestsRank& r : ranks) busiest = std::max(busiest, ++per_host[r.host]);
  return busiest;
}

std::string NcclTestsRun::gpu() const { return ranks.empty() ? std::string() : ranks.front().gpu; }

std::string NcclTestsRun::where() const { return fmt::format("{}:{}", file, first_line); }

std::optional<core::CollectiveOp> nccl_tests_program_op(std::string_view program) {
  const size_t slash = program.find_last_of('/');
  if (slash != std::string_view::npos) program = program.substr(slash + 1);
  if (program.ends_with("_mpi")) program.remove_suffix(4);  // builds that name the MPI binaries apart
  static const std::map<std::string_view, CollectiveOp> ops = {
      {"all_reduce_perf", CollectiveOp::ALL_REDUCE}, {"all_gather_perf", CollectiveOp::ALL_GATHER},
      {"reduce_scatter_perf", CollectiveOp::REDUCE_SCATTER}, {"broadcast_perf", CollectiveOp::BROADCAST},
      {"reduce_perf", CollectiveOp::REDUCE}, {"alltoall_perf", CollectiveOp::ALL_TO_ALL}};
  const auto it = ops.find(program);
  if (it == ops.end()) return std::nullopt;
  return it->second;
}

std::vector<NcclTestsRun> parse_nccl_tests(std::istream& in, const std::string& file,
                                           std::optional<core::CollectiveOp> op) {
  Parser parser(file, op);
  std::string text;
  size_t number = 0;
  while (std::getline(in, text)) parser.line(text, ++number);
  if (in.bad()) throw InputError(file, "", "error while reading the file");
  return parser.finish();
}

std::vector<NcclTestsRun> load_nccl_tests(const std::string& path, std::optional<core::CollectiveOp> op) {
  std::istringstream in(core::read_text_file(path, MAX_NCCL_TESTS_BYTES, "nccl-tests output"));
  return parse_nccl_tests(in, path, op);
}

std::vector<CollectiveSample> collective_samples(const NcclTestsRun& run) {
  std::vector<CollectiveSample> out;
  out.reserve(run.rows.size());
  for (const NcclTestsRow& r : run.rows) {
    out.push_back({run.op, static_cast<int>(run.ranks.size()), r.size, r.time(), run.scope()});
  }
  return out;
}

}  // namespace trainsim::calibrate
