// `trainsim export --to chakra` (sim/plan/chakra_export.hpp) read back by the import
// (calibrate/chakra_workload.hpp): a 16-rank scenario replays to the scenario's own iteration time
// under both backends, and the files hold only the public schema's field numbers and wire types
// (tests/data/chakra/et_def_fields.txt), checked by a reader that knows nothing but that list.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unistd.h>

#include "calibrate/chakra_workload.hpp"
#include "sim/core/chakra_io.hpp"
#include "sim/plan/chakra_export.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

namespace fs = std::filesystem;
namespace chakra = core::chakra;

const std::string DATA = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/chakra/";

fs::path test_dir() {
  const fs::path d = fs::temp_directory_path() /
                     fmt::format("trainsim-chakra-export-{}-{}", ::getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  return d;
}

// The import's simulation of the traces on the scenario's cluster, as `replay --chakra` runs it.
double replayed(const Scenario& s, const calibrate::ChakraWorkload& w, const std::string& backend) {
  engine::SimulationOptions o;
  o.use_symmetry = false;
  o.algorithm = s.simulation.algorithm;
  o.fidelity = s.simulation.fidelity;
  o.replay_calls_alone = s.simulation.replay;
  const std::unique_ptr<engine::Backend> b = backend == "simgrid" ? engine::make_simgrid_backend() : engine::make_analytic_backend();
  return b->run(w.workload, s.cluster, s.profile, o).iteration_time.value();
}

TEST(ChakraExport, SixteenRanksReplayToTheScenarioTimeAnalytic) {
  const Scenario s = load_scenario(DATA + "gpt-16-pp.json");
  const fs::path dir = test_dir();
  const ChakraExportResult r = export_chakra(s, dir.string());
  ASSERT_EQ(r.files.size(), 16u);
  EXPECT_EQ(r.prefix, (dir / "gpt-16-pp").string());
  EXPECT_TRUE(fs::exists(dir / "gpt-16-pp.15.et"));
  EXPECT_TRUE(fs::exists(r.comm_groups));
  const calibrate::ChakraWorkload w = calibrate::build_chakra_workload(calibrate::load_chakra_traces(r.prefix), {});
  EXPECT_TRUE(w.layout_from_files);
  EXPECT_EQ(w.workload.layout.sizes(), (std::array<int, core::AXIS_COUNT>{2, 1, 1, 4, 2}));
  EXPECT_GT(w.send_recv_tasks, 0u);
  EXPECT_GT(w.collective_tasks, 0u);
  EXPECT_EQ(w.untimed, 0u);
  // Every task but the memory ones (which have no node) comes back, plus one metadata node per rank.
  uint64_t tasks = 0;
  const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
  for (int rank = 0; rank < 16; ++rank) {
    for (const core::Task& t : built.workload.program_of(rank).tasks) tasks += t.kind != core::TaskKind::MEMORY;
  }
  EXPECT_EQ(w.compute_tasks + w.collective_tasks + w.send_recv_tasks + w.copy_tasks, tasks);
  EXPECT_EQ(r.nodes, tasks + 16);

  const double expected = predict(s, "analytic").iteration_time_s();
  EXPECT_NEAR(replayed(s, w, "analytic"), expected, 1e-6 * expected);
  fs::remove_all(dir);
}

// SimGrid runs one platform per process: the scenario's own prediction runs in a child
// (predict_report), the replay here.
TEST(ChakraExport, SixteenRanksReplayToTheScenarioTimeSimGrid) {
  const Scenario s = load_scenario(DATA + "gpt-16-pp.json");
  const fs::path dir = test_dir();
  const ChakraExportResult r = export_chakra(s, dir.string());
  const calibrate::ChakraWorkload w = calibrate::build_chakra_workload(calibrate::load_chakra_traces(r.prefix), {});
  const double expected = predict_report(s, "simgrid")["iteration_time_s"].get<double>();
  EXPECT_NEAR(replayed(s, w, "simgrid"), expected, 1e-6 * expected);
  fs::remove_all(dir);
}

// Files without trainsim's attributes (as another tool would write them): the layout comes from the
// process groups and each kernel's time from duration_micros, rounded to the microsecond, so the
// time agrees to the rounding (each kernel of this job is 0.1 to 5 ms: at most 0.5 us off, and the
// errors of the critical path's kernels partly cancel).
TEST(ChakraExport, WithoutTrainsimAttributesTheLayoutIsInferred) {
  const Scenario s = load_scenario(DATA + "gpt-16-dp.json");
  const fs::path dir = test_dir();
  const ChakraExportResult r = export_chakra(s, dir.string());
  std::vector<core::ChakraTrace> files = calibrate::load_chakra_traces(r.prefix);
  const auto strip = [](auto& attrs) {
    for (int i = attrs.size() - 1; i >= 0; --i) {
      if (attrs.Get(i).name().rfind("trainsim.", 0) == 0) attrs.DeleteSubrange(i, 1);
    }
  };
  for (core::ChakraTrace& f : files) {
    strip(*f.metadata.mutable_attr());
    for (chakra::Node& n : f.nodes) strip(*n.mutable_attr());
  }
  const calibrate::ChakraWorkload w = calibrate::build_chakra_workload(files, {});
  EXPECT_FALSE(w.layout_from_files);
  EXPECT_EQ(w.workload.layout.size(core::Axis::TENSOR), 2);
  EXPECT_EQ(w.workload.layout.size(core::Axis::DATA), 8);
  const double expected = predict(s, "analytic").iteration_time_s();
  EXPECT_NEAR(replayed(s, w, "analytic"), expected, 1e-3 * expected);
  fs::remove_all(dir);
}

// ------------------------------------------------------------------------------------------------
// The public field numbers

struct Field {
  int number = 0;
  int wire = 0;
  std::string type;  // the message a length-delimited field holds; "" for scalars, strings, packed lists
};
struct Fixture {
  std::map<std::string, std::map<int, Field>> fields;                     // message -> number -> field
  std::map<std::string, std::map<std::string, int>> field_numbers;        // message -> name -> number
  std::map<std::string, std::map<std::string, int>> enums;                // enum -> name -> value
};

Fixture read_fixture() {
  std::ifstream in(DATA + "et_def_fields.txt");
  Fixture f;
  const std::map<std::string, int> wires{{"varint", 0}, {"i64", 1}, {"len", 2}, {"i32", 5}};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, owner, name;
    int number = 0;
    if (!(words >> kind >> owner >> name >> number)) continue;
    if (kind == "enum") {
      f.enums[owner][name] = number;
      continue;
    }
    std::string wire, type;
    words >> wire >> type;
    f.fields[owner][number] = Field{number, wires.at(wire), type};
    f.field_numbers[owner][name] = number;
  }
  return f;
}

uint64_t varint(std::string_view b, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; pos < b.size(); shift += 7) {
    const auto c = static_cast<unsigned char>(b[pos++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return v;
  }
  ADD_FAILURE() << "a varint runs past the end";
  return v;
}

// Walks one message by the wire format alone: every field's number and wire type must be the
// fixture's for `message`; nested messages are walked too. Counts the fields seen per message, and
// collects the values of Node.type and of the comm_type attributes.
struct Walk {
  const Fixture& fixture;
  std::map<std::string, int> seen;
  std::vector<uint64_t> node_types;
  std::vector<uint64_t> comm_types;

  void message(const std::string& name, std::string_view b) {
    size_t pos = 0;
    std::string attr_name;
    uint64_t attr_int = 0;
    while (pos < b.size()) {
      const uint64_t key = varint(b, pos);
      const int number = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
      const auto it = fixture.fields.at(name).find(number);
      ASSERT_NE(it, fixture.fields.at(name).end()) << name << " has field number " << number << ", not in the public schema";
      ASSERT_EQ(wire, it->second.wire) << name << " field " << number;
      ++seen[name];
      if (wire == 0) {
        const uint64_t v = varint(b, pos);
        if (name == "Node" && number == 3) node_types.push_back(v);
        if (name == "AttributeProto") attr_int = v;
      } else if (wire == 1) {
        pos += 8;
      } else if (wire == 5) {
        pos += 4;
      } else {
        const uint64_t n = varint(b, pos);
        ASSERT_LE(n, b.size() - pos);
        const std::string_view payload = b.substr(pos, n);
        if (!it->second.type.empty()) message(it->second.type, payload);
        if (name == "AttributeProto" && number == 1) attr_name = std::string(payload);
        pos += n;
      }
    }
    if (name == "AttributeProto" && attr_name == "comm_type") comm_types.push_back(attr_int);
  }

  void file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    for (bool first = true; pos < b.size(); first = false) {
      const uint64_t n = varint(b, pos);
      ASSERT_LE(n, b.size() - pos);
      message(first ? "GlobalMetadata" : "Node", std::string_view(b).substr(pos, n));
      pos += n;
    }
  }
};

TEST(ChakraExport, FilesHoldOnlyThePublicFieldNumbers) {
  const Fixture fixture = read_fixture();
  const Scenario s = load_scenario(DATA + "gpt-16-pp.json");
  const fs::path dir = test_dir();
  const ChakraExportResult r = export_chakra(s, dir.string());
  Walk walk{fixture, {}, {}, {}};
  for (const std::string& f : r.files) walk.file(f);
  EXPECT_GT(walk.seen["GlobalMetadata"], 0);
  EXPECT_GT(walk.seen["Node"], 0);
  EXPECT_GT(walk.seen["AttributeProto"], 0);
  EXPECT_GT(walk.seen["IOInfo"], 0);  // the process-group metadata node's inputs.values
  std::set<uint64_t> types(walk.node_types.begin(), walk.node_types.end());
  const auto& node_type = fixture.enums.at("NodeType");
  EXPECT_EQ(types, (std::set<uint64_t>{static_cast<uint64_t>(node_type.at("METADATA_NODE")), static_cast<uint64_t>(node_type.at("COMP_NODE")),
                                       static_cast<uint64_t>(node_type.at("COMM_SEND_NODE")), static_cast<uint64_t>(node_type.at("COMM_RECV_NODE")),
                                       static_cast<uint64_t>(node_type.at("COMM_COLL_NODE"))}));
  std::set<uint64_t> comm(walk.comm_types.begin(), walk.comm_types.end());
  const auto& coll = fixture.enums.at("CollectiveCommType");
  EXPECT_EQ(comm, (std::set<uint64_t>{static_cast<uint64_t>(coll.at("ALL_REDUCE")), static_cast<uint64_t>(coll.at("ALL_GATHER")),
                                      static_cast<uint64_t>(coll.at("REDUCE_SCATTER"))}));
  fs::remove_all(dir);
}

// sim/core/chakra_et.proto against the fixture: every public field has its number and wire type, and
// the schema's messages have no field the public one lacks.
TEST(ChakraExport, SchemaMatchesThePublicFieldNumbers) {
  const Fixture fixture = read_fixture();
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  const auto wire_of = [](const google::protobuf::FieldDescriptor* f) {
    if (f->is_packed()) return 2;
    switch (f->type()) {
      case google::protobuf::FieldDescriptor::TYPE_DOUBLE:
      case google::protobuf::FieldDescriptor::TYPE_FIXED64:
      case google::protobuf::FieldDescriptor::TYPE_SFIXED64: return 1;
      case google::protobuf::FieldDescriptor::TYPE_FLOAT:
      case google::protobuf::FieldDescriptor::TYPE_FIXED32:
      case google::protobuf::FieldDescriptor::TYPE_SFIXED32: return 5;
      case google::protobuf::FieldDescriptor::TYPE_STRING:
      case google::protobuf::FieldDescriptor::TYPE_BYTES:
      case google::protobuf::FieldDescriptor::TYPE_MESSAGE: return 2;
      default: return 0;
    }
  };
  for (const auto& [message, names] : fixture.field_numbers) {
    const google::protobuf::Descriptor* d = pool->FindMessageTypeByName("trainsim.core.chakra." + message);
    ASSERT_NE(d, nullptr) << message;
    for (const auto& [name, number] : names) {
      const google::protobuf::FieldDescriptor* f = d->FindFieldByName(name);
      ASSERT_NE(f, nullptr) << message << "." << name;
      EXPECT_EQ(f->number(), number) << message << "." << name;
      EXPECT_EQ(wire_of(f), fixture.fields.at(message).at(number).wire) << message << "." << name;
    }
    if (message == "Node" || message == "GlobalMetadata" || message == "IOInfo" || message == "AttributeProto") {
      EXPECT_EQ(d->field_count(), static_cast<int>(names.size())) << message << " has fields the public schema lacks";
    }
  }
  for (const auto& [name, values] : fixture.enums) {
    const google::protobuf::EnumDescriptor* e = pool->FindEnumTypeByName("trainsim.core.chakra." + name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->value_count(), static_cast<int>(values.size())) << name;
    for (const auto& [value, number] : values) {
      ASSERT_NE(e->FindValueByName(value), nullptr) << name << "." << value;
      EXPECT_EQ(e->FindValueByName(value)->number(), number) << name << "." << value;
    }
  }
}

}  // namespace
}  // namespace trainsim::plan
