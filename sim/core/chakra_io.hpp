#pragma once
// Reading and writing Chakra execution trace files (sim/core/chakra_et.proto, MLCommons' schema that
// ASTRA-sim reads): one rank per file, named PREFIX.<rank>.et; a GlobalMetadata message first, then
// Node messages, each framed as a varint byte count followed by the serialized message.
//
// Example:
//   ChakraWriter w("out/job.0.et", metadata);   // creates the file and writes the metadata
//   w.append(node);                             // buffered
//   w.close();                                  // on disk (throws InputError if the write fails)
//
//   ChakraTrace t = read_chakra_file("out/job.0.et");   // every node, or an InputError
//
// Reading is bounded so that a hostile file cannot exhaust memory: the file is at most
// CHAKRA_MAX_FILE_BYTES, a message at most CHAKRA_MAX_MESSAGE_BYTES, and a file holds at most
// CHAKRA_MAX_NODES nodes. Unlike trainsim's own traces (trace_io.hpp), whose tail a killed run may
// cut, a Chakra file is written whole by a converter: a truncated file (a length prefix, or a message,
// that runs past the end) is an InputError naming the file and the byte offset, not a warning.

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/chakra_et.pb.h"

namespace trainsim::core {

inline constexpr uint64_t CHAKRA_MAX_FILE_BYTES = uint64_t{4} << 30;     // 4 GiB
inline constexpr uint64_t CHAKRA_MAX_MESSAGE_BYTES = uint64_t{64} << 20;  // 64 MiB: one node
inline constexpr uint64_t CHAKRA_MAX_NODES = uint64_t{1} << 26;          // 67 million nodes per rank

// One rank's file in memory.
struct ChakraTrace {
  std::string path;
  chakra::GlobalMetadata metadata;
  std::vector<chakra::Node> nodes;  // in file order
};

// Reads every message of `path`. Throws InputError (path, byte offset) when the file cannot be read,
// is larger than CHAKRA_MAX_FILE_BYTES, is empty, holds a malformed or oversized length prefix, a
// message that runs past the end of the file, bytes that do not parse as GlobalMetadata / Node, or
// more than CHAKRA_MAX_NODES nodes.
ChakraTrace read_chakra_file(const std::string& path);

class ChakraWriter {
 public:
  // Creates (truncates) `path` and writes `metadata`. Throws InputError naming the path when the
  // file cannot be created.
  ChakraWriter(std::string path, const chakra::GlobalMetadata& metadata);
  ~ChakraWriter();
  ChakraWriter(const ChakraWriter&) = delete;
  ChakraWriter& operator=(const ChakraWriter&) = delete;

  void append(const chakra::Node& node);
  // Writes what is buffered and closes the file; throws InputError when the write fails.
  void close();
  uint64_t nodes_written() const { return nodes_; }

 private:
  void flush();
  std::string path_;
  std::ofstream out_;
  std::string buffer_;
  uint64_t nodes_ = 0;
};

// Attributes (Node::attr, GlobalMetadata::attr) by name.
const chakra::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<chakra::AttributeProto>& attrs,
                                        std::string_view name);
// The value of a scalar integer attribute of any integer type (int32, int64, uint32, uint64, sint*,
// fixed*, sfixed*) or bool; false for other types (doubles, strings, lists). Producers differ in the
// integer type they use for one name (comm_type: int64 in chakra's converter; ASTRA-sim's feeder
// accepts any), so readers accept them all.
bool attr_integer(const chakra::AttributeProto& a, int64_t& out);
// A double or float attribute, or an integer one (attr_integer) as a double.
bool attr_number(const chakra::AttributeProto& a, double& out);
// The attribute's value type as the schema names it ("int64_val", "string_val", ...; "none").
std::string attr_type_name(const chakra::AttributeProto& a);

chakra::AttributeProto bool_attr(std::string name, bool value);
chakra::AttributeProto int32_attr(std::string name, int32_t value);
chakra::AttributeProto int64_attr(std::string name, int64_t value);
chakra::AttributeProto uint64_attr(std::string name, uint64_t value);
chakra::AttributeProto double_attr(std::string name, double value);
chakra::AttributeProto string_attr(std::string name, std::string value);
chakra::AttributeProto int64_list_attr(std::string name, const std::vector<int64_t>& values);

// The name of a node type or collective as the schema spells it ("COMP_NODE", "ALL_REDUCE"), or the
// number when it is outside the schema.
std::string node_type_name(int type);
std::string collective_type_name(int type);

// The names of the attributes trainsim's export adds to the public ones (docs/chakra.md).
inline constexpr const char* CHAKRA_ATTR_DURATION = "trainsim.duration_s";      // node: double seconds
inline constexpr const char* CHAKRA_ATTR_STREAM = "trainsim.stream";            // node: core::to_string(Stream)
inline constexpr const char* CHAKRA_ATTR_OP_CLASS = "trainsim.op_class";        // node: core::to_string(OpClass)
inline constexpr const char* CHAKRA_ATTR_COPY = "trainsim.copy";                // node: core::to_string(CopyDirection)
inline constexpr const char* CHAKRA_ATTR_GROUP = "trainsim.group";              // node: index into group_kinds
inline constexpr const char* CHAKRA_ATTR_LAYOUT = "trainsim.layout";            // metadata: int64 list, core::Axis order
inline constexpr const char* CHAKRA_ATTR_GROUP_KINDS = "trainsim.group_kinds";  // metadata: JSON text
inline constexpr const char* CHAKRA_ATTR_STEADY_STATE = "trainsim.steady_state";  // metadata: bool
// The name of the PyTorch metadata node that defines process groups.
inline constexpr const char* CHAKRA_PG_INIT = "## process_group:init ##";

}  // namespace trainsim::core
