#include "calibrate/chakra_workload.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "calibrate/chakra_graph.hpp"
#include "calibrate/parallel_groups.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate {
namespace {

namespace chakra = core::chakra;
using core::Axis;
using core::InputError;
using core::Stream;
using core::Task;
using core::TaskKind;

constexpr uint32_t NO_TASK = UINT32_MAX;
constexpr double UNTIMED_S = 1e-9;  // ASTRA-sim's replay gives a node without duration 1 ns

// ---------------------------------------------------------------------------------------------
// Attributes

template <class E>
bool parse_named(std::string_view text, int count, E& out) {
  for (int i = 0; i < count; ++i) {
    if (core::to_string(static_cast<E>(i)) == text) {
      out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

template <class E>
std::string names_of(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.emplace_back(core::to_string(static_cast<E>(i)));
  return fmt::format("{}", fmt::join(names, ", "));
}

// Where a node is, for errors: the file and "node ID (NAME)".
struct NodeAt {
  const std::string& file;
  const chakra::Node& node;

  std::string where() const { return fmt::format("node {} ({})", node.id(), node.name()); }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(file, where(), message); }

  const chakra::AttributeProto* attr(std::string_view name) const { return core::find_attr(node.attr(), name); }
  std::optional<int64_t> integer(std::string_view name) const {
    const chakra::AttributeProto* a = attr(name);
    int64_t v = 0;
    if (a == nullptr) return std::nullopt;
    if (!core::attr_integer(*a, v)) fail(fmt::format("attribute {} is a {}, expected an integer", name, core::attr_type_name(*a)));
    return v;
  }
  std::optional<double> number(std::string_view name) const {
    const chakra::AttributeProto* a = attr(name);
    double v = 0;
    if (a == nullptr) return std::nullopt;
    if (!core::attr_number(*a, v) || !std::isfinite(v) || v < 0) {
      fail(fmt::format("attribute {} is {}, expected a finite number >= 0", name,
                       core::attr_number(*a, v) ? fmt::format("{}", v) : "a " + core::attr_type_name(*a)));
    }
    return v;
  }
  std::optional<std::string> text(std::string_view name) const {
    const chakra::AttributeProto* a = attr(name);
    if (a == nullptr) return std::nullopt;
    if (a->value_case() != chakra::AttributeProto::kStringVal) {
      fail(fmt::format("attribute {} is a {}, expected a string_val", name, core::attr_type_name(*a)));
    }
    return a->string_val();
  }
  // A non-negative integer attribute (a size), 0 when absent.
  double size(std::string_view name) const {
    const std::optional<int64_t> v = integer(name);
    if (v && *v < 0) fail(fmt::format("attribute {} is {}, expected a byte or operation count >= 0", name, *v));
    return v ? static_cast<double>(*v) : 0.0;
  }
  template <class E>
  std::optional<E> named(std::string_view name, int count) const {
    const std::optional<std::string> t = text(name);
    if (!t) return std::nullopt;
    E out{};
    if (!parse_named(*t, count, out)) fail(fmt::format("attribute {} is \"{}\", expected one of {}", name, *t, names_of<E>(count)));
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// Process groups

struct ProcessGroups {
  std::map<std::string, std::vector<int>> ranks;  // pg_name -> members, ascending
  std::map<std::string, std::string> origin;      // pg_name -> the file that defined it

  void add(const std::string& name, std::vector<int> members, const std::string& file, int world) {
    if (members.empty()) {
      for (int r = 0; r < world; ++r) members.push_back(r);  // PyTorch: no ranks listed = every rank
    }
    for (int r : members) {
      if (r < 0 || r >= world) {
        throw InputError(file, "", fmt::format("process group \"{}\" lists rank {}, outside the world of {} ranks (one "
                                               "file per rank)",
                                               name, r, world));
      }
    }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    const auto [it, inserted] = ranks.try_emplace(name, members);
    if (!inserted && it->second != members) {
      throw InputError(file, "", fmt::format("process group \"{}\" has ranks {} here and {} in {}", name, fmt::join(members, ","),
                                             fmt::join(it->second, ","), origin[name]));
    }
    origin.try_emplace(name, file);
  }
};

std::vector<int> rank_list(const core::Json& j, const std::string& file, const std::string& what) {
  std::vector<int> out;
  if (!j.is_array()) throw InputError(file, "", fmt::format("{}: expected an array of ranks, found {}", what, core::describe_json(j)));
  for (const core::Json& r : j) {
    if (!r.is_number_integer()) throw InputError(file, "", fmt::format("{}: expected integer ranks, found {}", what, core::describe_json(r)));
    const int64_t v = r.get<int64_t>();
    out.push_back(static_cast<int>(std::clamp<int64_t>(v, -1, core::TRACE_MAX_WORLD_SIZE)));
  }
  return out;
}

// A PyTorch process_group:init node: inputs.values is Python's repr of a list holding one JSON string,
// ['[{"pg_name": "0", "ranks": [0, 1], ...}, ...]'] (ASTRA-sim strips the two characters at each end).
void read_pg_init(const NodeAt& at, int world, ProcessGroups& groups) {
  std::string text = at.node.inputs().values();
  if (text.size() >= 4 && text.compare(0, 2, "['") == 0 && text.compare(text.size() - 2, 2, "']") == 0) {
    text = text.substr(2, text.size() - 4);
  }
  const core::Json doc = core::Json::parse(text, nullptr, false);
  const std::string expected = "expected inputs.values to hold the process groups as JSON, [{\"pg_name\": \"1\", \"ranks\": [0, 1]}, ...]";
  if (doc.is_discarded() || !doc.is_array()) at.fail(expected);
  for (const core::Json& g : doc) {
    if (!g.is_object() || !g.contains("pg_name") || !g.contains("ranks") || !g["pg_name"].is_string()) at.fail(expected);
    groups.add(g["pg_name"].get<std::string>(), rank_list(g["ranks"], at.file, at.where() + ": ranks"), at.file, world);
  }
}

// ASTRA-sim's --comm-group-configuration: {"1": [0, 1], "2": [2, 3]}.
void read_comm_group_file(const std::string& path, int world, ProcessGroups& groups) {
  const core::Json doc = core::load_json_file(path);
  if (!doc.is_object()) {
    throw InputError(path, "", fmt::format("expected an object of process groups, {{\"1\": [0, 1], ...}}, found {}", core::describe_json(doc)));
  }
  for (const auto& [name, members] : doc.items()) groups.add(name, rank_list(members, path, "/" + name), path, world);
}

// ---------------------------------------------------------------------------------------------
// Layout and group kinds

core::Json metadata_json(const core::ChakraTrace& t, const char* name) {
  const chakra::AttributeProto* a = core::find_attr(t.metadata.attr(), name);
  if (a == nullptr) return nullptr;
  if (a->value_case() != chakra::AttributeProto::kStringVal) {
    throw InputError(t.path, std::string("metadata ") + name, fmt::format("expected a string_val, found a {}", core::attr_type_name(*a)));
  }
  core::Json j = core::Json::parse(a->string_val(), nullptr, false);
  if (j.is_discarded()) throw InputError(t.path, std::string("metadata ") + name, "expected JSON text");
  return j;
}

// The layout and group kinds trainsim's export wrote (CHAKRA_ATTR_LAYOUT, CHAKRA_ATTR_GROUP_KINDS);
// false when the file has neither.
// A group kind's "cut" and "block" (hybrid sharding's shard and replica groups, core::AxisCut), as
// sim/plan/chakra_export.cpp writes them.
void read_axis_cut(const core::Json& k, int axis_size, const std::string& path, const std::string& where,
                   core::GroupKind& g) {
  const core::Json& cut = k["cut"];
  if (!cut.is_string() || !parse_named(cut.get<std::string>(), 3, g.cut)) {
    throw InputError(path, where, fmt::format("expected the cut of \"{}\" ({}), found {}", g.name,
                                              names_of<core::AxisCut>(3), core::describe_json(cut)));
  }
  const core::Json block = k.value("block", core::Json());
  if (g.cut != core::AxisCut::WHOLE &&
      (!block.is_number_integer() || block.get<int64_t>() < 1 || axis_size % block.get<int64_t>() != 0 ||
       !g.members.empty())) {
    throw InputError(path, where, fmt::format("expected the block of \"{}\" as a divisor of its axis's size {} "
                                              "(and no members), found {}",
                                              g.name, axis_size, core::describe_json(block)));
  }
  if (g.cut != core::AxisCut::WHOLE) g.block = static_cast<int>(block.get<int64_t>());
}

bool layout_from_metadata(const core::ChakraTrace& t, int world, core::Workload& wl) {
  const chakra::AttributeProto* sizes = core::find_attr(t.metadata.attr(), core::CHAKRA_ATTR_LAYOUT);
  const core::Json kinds = metadata_json(t, core::CHAKRA_ATTR_GROUP_KINDS);
  if (sizes == nullptr && kinds.is_null()) return false;
  const std::string where = std::string("metadata ") + core::CHAKRA_ATTR_LAYOUT;
  if (sizes == nullptr || kinds.is_null() || !sizes->has_int64_list() || sizes->int64_list().values_size() != core::AXIS_COUNT) {
    throw InputError(t.path, where, fmt::format("expected {} as a list of {} sizes (tensor, context, expert, data, pipeline) "
                                                "together with {}",
                                                core::CHAKRA_ATTR_LAYOUT, core::AXIS_COUNT, core::CHAKRA_ATTR_GROUP_KINDS));
  }
  std::array<int, core::AXIS_COUNT> s{};
  int64_t product = 1;
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const int64_t v = sizes->int64_list().values(a);
    if (v < 1 || v > core::TRACE_MAX_WORLD_SIZE) throw InputError(t.path, where, fmt::format("axis size {} is outside 1..{}", v, core::TRACE_MAX_WORLD_SIZE));
    s[static_cast<size_t>(a)] = static_cast<int>(v);
    product *= v;
    if (product > world) break;
  }
  if (product != world) {
    throw InputError(t.path, where, fmt::format("the axis sizes multiply to {}, not to the {} ranks (files)", product, world));
  }
  wl.layout = core::ParallelLayout(s);
  const std::string kinds_where = std::string("metadata ") + core::CHAKRA_ATTR_GROUP_KINDS;
  const auto axis_of_json = [&](const core::Json& j) {
    Axis a{};
    if (!j.is_string() || !parse_named(j.get<std::string>(), core::AXIS_COUNT, a)) {
      throw InputError(t.path, kinds_where, fmt::format("expected an axis ({}), found {}", names_of<Axis>(core::AXIS_COUNT), core::describe_json(j)));
    }
    return a;
  };
  if (!kinds.is_array()) throw InputError(t.path, kinds_where, "expected an array of group kinds");
  for (const core::Json& k : kinds) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string() || !k.contains("axis")) {
      throw InputError(t.path, kinds_where, "expected group kinds as {\"name\", \"axis\", \"members\", \"extra_axes\"}");
    }
    core::GroupKind g;
    g.name = k["name"].get<std::string>();
    g.axis = axis_of_json(k["axis"]);
    const int axis_size = wl.layout.size(g.axis);
    for (int m : rank_list(k.value("members", core::Json::array()), t.path, kinds_where + ": members")) {
      if (m < 0 || m >= axis_size) throw InputError(t.path, kinds_where, fmt::format("member {} of \"{}\" is outside its axis", m, g.name));
      g.members.push_back(m);
    }
    for (const core::Json& e : k.value("extra_axes", core::Json::array())) g.extra_axes.push_back(axis_of_json(e));
    if (k.contains("cut")) read_axis_cut(k, axis_size, t.path, kinds_where, g);
    wl.groups.push_back(std::move(g));
  }
  if (wl.groups.size() > UINT16_MAX) throw InputError(t.path, kinds_where, "more group kinds than the 65535 a workload holds");
  return true;
}

// What the builder shares across ranks.
struct Context {
  const std::vector<core::ChakraTrace>& traces;
  int world = 0;
  ProcessGroups groups;
  bool hinted = false;      // layout and group kinds from the files
  InferredLayout inferred;  // otherwise
  std::map<std::vector<int>, uint16_t> kind_of_members;  // inferred: communicator -> group kind
  std::map<int64_t, uint8_t> tags;                       // comm_tag -> Task::tag
};

const std::vector<int>& members_of(Context& c, const NodeAt& at, std::vector<int>& world_ranks) {
  const std::string pg = at.text("pg_name").value_or("");
  const auto it = c.groups.ranks.find(pg);
  if (it != c.groups.ranks.end()) return it->second;
  if (pg.empty() || pg == "0") {
    if (world_ranks.empty()) {
      for (int r = 0; r < c.world; ++r) world_ranks.push_back(r);
    }
    return world_ranks;
  }
  at.fail(fmt::format("process group \"{}\" (pg_name) is defined neither by a process_group:init metadata node nor by "
                      "the communicator-group file (--comm-groups); \"\" and \"0\" are the world",
                      pg));
}

// The group kind of a collective over `members` called by `rank`.
uint16_t kind_of(Context& c, core::Workload& wl, const NodeAt& at, int rank, const std::vector<int>& members) {
  if (c.hinted) {
    const auto fits = [&](size_t k) {
      return wl.groups[k].contains(wl.layout, rank) && wl.groups[k].ranks_of(wl.layout, rank) == members;
    };
    if (const std::optional<int64_t> k = at.integer(core::CHAKRA_ATTR_GROUP)) {
      if (*k < 0 || static_cast<size_t>(*k) >= wl.groups.size() || !fits(static_cast<size_t>(*k))) {
        at.fail(fmt::format("attribute {} = {} names no group kind of the layout whose group of rank {} is ranks {}",
                            core::CHAKRA_ATTR_GROUP, *k, rank, fmt::join(members, ",")));
      }
      return static_cast<uint16_t>(*k);
    }
    for (size_t k = 0; k < wl.groups.size(); ++k) {
      if (fits(k)) return static_cast<uint16_t>(k);
    }
    at.fail(fmt::format("the process group of ranks {} is no group of the layout in {}", fmt::join(members, ","), core::CHAKRA_ATTR_LAYOUT));
  }
  const auto [it, inserted] = c.kind_of_members.try_emplace(members, 0);
  if (inserted) {
    core::GroupKind kind = group_kind_of(c.inferred, members, at.file);
    const auto same = std::find_if(wl.groups.begin(), wl.groups.end(), [&](const core::GroupKind& g) { return g.name == kind.name; });
    it->second = static_cast<uint16_t>(same - wl.groups.begin());
    if (same == wl.groups.end()) wl.groups.push_back(std::move(kind));
  }
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Tasks

std::optional<core::CollectiveOp> collective_of(int64_t type) {
  switch (type) {
    case chakra::ALL_REDUCE: return core::CollectiveOp::ALL_REDUCE;
    case chakra::REDUCE: return core::CollectiveOp::REDUCE;
    case chakra::ALL_GATHER: return core::CollectiveOp::ALL_GATHER;
    case chakra::BROADCAST: return core::CollectiveOp::BROADCAST;
    case chakra::ALL_TO_ALL: return core::CollectiveOp::ALL_TO_ALL;
    case chakra::REDUCE_SCATTER:
    case chakra::REDUCE_SCATTER_BLOCK: return core::CollectiveOp::REDUCE_SCATTER;
    case chakra::BARRIER: return core::CollectiveOp::ALL_REDUCE;
    default: return std::nullopt;
  }
}

void compute_task(const NodeAt& at, Task& t, ChakraWorkload& out) {
  t.kind = TaskKind::COMPUTE;
  const std::optional<int64_t> cpu = at.integer("is_cpu_op");
  t.stream = cpu.value_or(0) != 0 ? Stream::HOST : Stream::COMPUTE;
  const double seconds = at.number(core::CHAKRA_ATTR_DURATION).value_or(static_cast<double>(at.node.duration_micros()) * 1e-6);
  if (seconds > 0) {
    t.seconds = seconds;
  } else {
    t.flops = at.size("num_ops");
    t.bytes = at.size("tensor_size");
    t.op_class = at.named<core::OpClass>(core::CHAKRA_ATTR_OP_CLASS, core::OP_CLASS_COUNT).value_or(core::OpClass::GEMM);
    if (t.flops == 0 && t.bytes == 0) {
      t.seconds = UNTIMED_S;
      ++out.untimed;
    }
  }
  ++out.compute_tasks;
}

// A collective task, or false for one over a single rank (no communication: the node is skipped).
bool collective_task(Context& c, core::Workload& wl, const NodeAt& at, int rank, Task& t) {
  const std::optional<int64_t> type = at.integer("comm_type");
  if (!type) at.fail("a COMM_COLL_NODE without comm_type");
  const std::optional<core::CollectiveOp> op = collective_of(*type);
  if (!op) {
    at.fail(fmt::format("comm_type {} is {}: trainsim replays ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, "
                        "REDUCE_SCATTER, REDUCE_SCATTER_BLOCK and BARRIER",
                        *type, chakra::CollectiveCommType_IsValid(static_cast<int>(*type))
                                   ? core::collective_type_name(static_cast<int>(*type))
                                   : std::string("not a collective of the Chakra schema (0-9)")));
  }
  std::vector<int> world_ranks;
  const std::vector<int>& members = members_of(c, at, world_ranks);
  if (!std::binary_search(members.begin(), members.end(), rank)) {
    at.fail(fmt::format("process group \"{}\" (ranks {}) does not contain rank {}, whose file this is",
                        at.text("pg_name").value_or(""), fmt::join(members, ","), rank));
  }
  if (members.size() < 2) return false;
  t.kind = TaskKind::COLLECTIVE;
  t.collective = *op;
  t.bytes = at.size("comm_size");
  t.group = kind_of(c, wl, at, rank, members);
  t.stream = core::comm_stream(wl.groups[t.group].axis);
  return true;
}

void send_recv_task(Context& c, const core::Workload& wl, const NodeAt& at, int rank, bool send, Task& t) {
  const char* peer_field = send ? "comm_dst" : "comm_src";
  const char* self_field = send ? "comm_src" : "comm_dst";
  const std::optional<int64_t> peer = at.integer(peer_field);
  if (!peer) {
    at.fail(fmt::format("a {} without {} (the peer's rank), which a replay needs as ASTRA-sim does", send ? "COMM_SEND_NODE" : "COMM_RECV_NODE",
                        peer_field));
  }
  const std::optional<int64_t> self = at.integer(self_field);
  if (self && *self != rank) at.fail(fmt::format("{} is {}, but this is rank {}'s file", self_field, *self, rank));
  if (*peer < 0 || *peer >= c.world || *peer == rank) {
    at.fail(fmt::format("{} is {}: expected another rank of the world of {} (one file per rank)", peer_field, *peer, c.world));
  }
  const std::array<int, core::AXIS_COUNT> mine = wl.layout.coords(rank);
  const std::array<int, core::AXIS_COUNT> theirs = wl.layout.coords(static_cast<int>(*peer));
  int axes = 0;
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    if (mine[static_cast<size_t>(a)] == theirs[static_cast<size_t>(a)]) continue;
    ++axes;
    t.peer_axis = static_cast<Axis>(a);
  }
  const int offset = theirs[static_cast<size_t>(t.peer_axis)] - mine[static_cast<size_t>(t.peer_axis)];
  if (axes != 1 || std::abs(offset) > INT16_MAX) {
    at.fail(fmt::format("rank {} and its peer {} differ on {} parallel axes of the layout ({}): a send or receive must "
                        "reach a rank along one axis",
                        rank, *peer, axes, fmt::join(wl.layout.sizes(), " x ")));
  }
  t.kind = send ? TaskKind::SEND : TaskKind::RECV;
  t.peer_offset = static_cast<int16_t>(offset);
  t.tag = c.tags.at(at.integer("comm_tag").value_or(0));
  t.bytes = at.size("comm_size");
  // Point-to-point traffic is the pipeline's (activations to the next stage, gradients to the
  // previous one): one stream per direction, apart from the collectives, whatever axis it crosses.
  t.stream = (offset > 0) == send ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
}

void copy_task(const NodeAt& at, bool load, Task& t) {
  t.kind = TaskKind::COPY;
  t.copy = at.named<core::CopyDirection>(core::CHAKRA_ATTR_COPY, core::COPY_DIRECTION_COUNT)
               .value_or(load ? core::CopyDirection::HOST_TO_DEVICE : core::CopyDirection::DEVICE_TO_HOST);
  t.stream = core::outbound(t.copy) ? Stream::COPY_OUT : Stream::COPY;
  t.bytes = at.size("tensor_size");
  t.seconds = at.number(core::CHAKRA_ATTR_DURATION).value_or(0.0);
}

core::Program build_program(Context& c, core::Workload& wl, int rank, ChakraWorkload& out) {
  const core::ChakraTrace& t = c.traces[static_cast<size_t>(rank)];
  const Graph g = dependency_order(t);
  core::Program p;
  p.name = fmt::format("rank {}", rank);
  std::vector<uint32_t> task_of(t.nodes.size(), NO_TASK);
  std::vector<std::vector<uint32_t>> stand_in(t.nodes.size());  // a skipped node: the tasks it waits for
  uint64_t first_start = UINT64_MAX, last_end = 0;
  bool timed = false;
  for (uint32_t v : g.order) {
    const chakra::Node& node = t.nodes[v];
    const NodeAt at{t.path, node};
    std::vector<uint32_t> deps;
    for (uint32_t d : g.deps[v]) {
      if (task_of[d] != NO_TASK) {
        deps.push_back(task_of[d]);
      } else {
        deps.insert(deps.end(), stand_in[d].begin(), stand_in[d].end());
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    Task task;
    bool made = true;
    switch (static_cast<int>(node.type())) {
      case chakra::COMP_NODE: compute_task(at, task, out); break;
      case chakra::COMM_COLL_NODE:
        made = collective_task(c, wl, at, rank, task);
        out.collective_tasks += made;
        break;
      case chakra::COMM_SEND_NODE:
      case chakra::COMM_RECV_NODE:
        send_recv_task(c, wl, at, rank, node.type() == chakra::COMM_SEND_NODE, task);
        ++out.send_recv_tasks;
        break;
      case chakra::MEM_LOAD_NODE:
      case chakra::MEM_STORE_NODE:
        copy_task(at, node.type() == chakra::MEM_LOAD_NODE, task);
        ++out.copy_tasks;
        break;
      case chakra::METADATA_NODE:
      case chakra::INVALID_NODE: made = false; break;
      default:
        at.fail(fmt::format("node type {} is not one trainsim replays: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, "
                            "COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE (METADATA_NODE and INVALID_NODE are skipped)",
                            core::node_type_name(static_cast<int>(node.type()))));
    }
    if (!made) {
      stand_in[v] = std::move(deps);
      ++out.skipped;
      continue;
    }
    if (const std::optional<Stream> s = at.named<Stream>(core::CHAKRA_ATTR_STREAM, core::STREAM_COUNT)) task.stream = *s;
    task.name = wl.intern(node.name());
    task_of[v] = p.add(task, deps);
    timed = timed || node.start_time_micros() != 0;
    first_start = std::min(first_start, node.start_time_micros());
    last_end = std::max(last_end, node.start_time_micros() + node.duration_micros());
  }
  if (timed && last_end > first_start) {
    const core::Seconds span(static_cast<double>(last_end - first_start) * 1e-6);
    out.traced = std::max(out.traced.value_or(core::Seconds(0)), span);
  }
  return p;
}

// Every comm_tag of every send and receive, numbered in ascending order (Task::tag is 8 bits).
std::map<int64_t, uint8_t> number_tags(const std::vector<core::ChakraTrace>& traces) {
  std::set<int64_t> seen;
  for (const core::ChakraTrace& t : traces) {
    for (const chakra::Node& n : t.nodes) {
      if (n.type() != chakra::COMM_SEND_NODE && n.type() != chakra::COMM_RECV_NODE) continue;
      seen.insert(NodeAt{t.path, n}.integer("comm_tag").value_or(0));
      if (seen.size() > 256) {
        throw InputError(t.path, NodeAt{t.path, n}.where(),
                         "more than 256 distinct comm_tag values over the ranks' sends and receives: trainsim keeps "
                         "at most 256 channels between two ranks");
      }
    }
  }
  std::map<int64_t, uint8_t> out;
  for (int64_t tag : seen) out.emplace(tag, static_cast<uint8_t>(out.size()));
  return out;
}

// The communicators the collectives use, for the layout's inference.
std::vector<CommunicatorRanks> communicators(Context& c) {
  std::set<std::vector<int>> seen;
  std::vector<CommunicatorRanks> out;
  for (const core::ChakraTrace& t : c.traces) {
    for (const chakra::Node& n : t.nodes) {
      if (n.type() != chakra::COMM_COLL_NODE) continue;
      std::vector<int> world_ranks;
      const std::vector<int>& members = members_of(c, NodeAt{t.path, n}, world_ranks);
      if (seen.insert(members).second) out.push_back({members, t.path});
    }
  }
  return out;
}

}  // namespace

ChakraWorkload build_chakra_workload(const std::vector<core::ChakraTrace>& traces, const ChakraOptions& options) {
  TRAINSIM_CHECK(!traces.empty(), "build_chakra_workload needs at least one rank's file");
  Context c{traces, static_cast<int>(traces.size()), {}, false, {}, {}, {}};
  if (!options.comm_groups.empty()) read_comm_group_file(options.comm_groups, c.world, c.groups);
  for (const core::ChakraTrace& t : traces) {
    for (const chakra::Node& n : t.nodes) {
      if (n.type() == chakra::METADATA_NODE && n.name().find("process_group:init") != std::string::npos) {
        read_pg_init(NodeAt{t.path, n}, c.world, c.groups);
      }
    }
  }
  c.tags = number_tags(traces);
  ChakraWorkload out;
  core::Workload& wl = out.workload;
  c.hinted = out.layout_from_files = layout_from_metadata(traces.front(), c.world, wl);
  if (!c.hinted) {
    c.inferred = infer_layout(communicators(c), c.world, traces.front().path);
    wl.layout = c.inferred.layout;
  }
  const chakra::AttributeProto* steady = core::find_attr(traces.front().metadata.attr(), core::CHAKRA_ATTR_STEADY_STATE);
  int64_t steady_value = 0;
  wl.steady_state = steady != nullptr && core::attr_integer(*steady, steady_value) && steady_value != 0;
  for (int r = 0; r < c.world; ++r) {
    wl.programs.push_back(build_program(c, wl, r, out));
    wl.program_of_rank.push_back(static_cast<uint32_t>(r));
  }
  wl.validate();
  return out;
}

}  // namespace trainsim::calibrate
