#include "sim/core/chakra_io.hpp"

#include <filesystem>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::core {
namespace {

constexpr int MAX_VARINT_BYTES = 10;

// Reads the varint length prefix at `pos`; advances `pos` past it. Throws for a malformed prefix or
// one that the file ends inside.
uint64_t read_length(const std::string& path, const std::string& bytes, size_t& pos, const char* what) {
  const size_t start = pos;
  uint64_t length = 0;
  for (int i = 0;; ++i) {
    if (pos >= bytes.size()) {
      throw InputError(path, "", fmt::format("truncated: the length prefix of the {} at byte {} runs past the end "
                                             "of the file ({} bytes)",
                                             what, start, bytes.size()));
    }
    if (i == MAX_VARINT_BYTES) {
      throw InputError(path, "", fmt::format("malformed length prefix of the {} at byte {}: a varint of at most {} bytes "
                                             "was expected",
                                             what, start, MAX_VARINT_BYTES));
    }
    const auto c = static_cast<unsigned char>(bytes[pos++]);
    length |= static_cast<uint64_t>(c & 0x7f) << (7 * i);
    if ((c & 0x80) == 0) break;
  }
  if (length > CHAKRA_MAX_MESSAGE_BYTES) {
    throw InputError(path, "", fmt::format("the {} at byte {} declares {} bytes, more than the {} byte limit "
                                           "(CHAKRA_MAX_MESSAGE_BYTES)",
                                           what, start, length, CHAKRA_MAX_MESSAGE_BYTES));
  }
  if (length > bytes.size() - pos) {
    throw InputError(path, "", fmt::format("truncated: the {} at byte {} declares {} bytes, only {} remain in the file",
                                           what, start, length, bytes.size() - pos));
  }
  return length;
}

std::string read_bounded(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(path, "", fmt::format("cannot read the Chakra trace: {}", ec.message()));
  if (size > CHAKRA_MAX_FILE_BYTES) {
    throw InputError(path, "", fmt::format("the file has {} bytes, more than the {} byte limit of one rank's Chakra "
                                           "trace (CHAKRA_MAX_FILE_BYTES)",
                                           size, CHAKRA_MAX_FILE_BYTES));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the Chakra trace");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) throw InputError(path, "", "cannot read the whole Chakra trace");
  return bytes;
}

}  // namespace

ChakraTrace read_chakra_file(const std::string& path) {
  const std::string bytes = read_bounded(path);
  if (bytes.empty()) throw InputError(path, "", "empty file: a Chakra trace starts with a GlobalMetadata message");
  ChakraTrace out;
  out.path = path;
  size_t pos = 0;
  const uint64_t metadata_length = read_length(path, bytes, pos, "GlobalMetadata message");
  if (!out.metadata.ParseFromArray(bytes.data() + pos, static_cast<int>(metadata_length))) {
    throw InputError(path, "", "the first message (byte 0) does not parse as a Chakra GlobalMetadata");
  }
  pos += metadata_length;
  while (pos < bytes.size()) {
    const size_t at = pos;
    if (out.nodes.size() >= CHAKRA_MAX_NODES) {
      throw InputError(path, "", fmt::format("more than {} nodes (CHAKRA_MAX_NODES) in one rank's trace", CHAKRA_MAX_NODES));
    }
    const uint64_t length = read_length(path, bytes, pos, "node message");
    chakra::Node& node = out.nodes.emplace_back();
    if (!node.ParseFromArray(bytes.data() + pos, static_cast<int>(length))) {
      throw InputError(path, "", fmt::format("the node message at byte {} ({} bytes) does not parse as a Chakra Node", at, length));
    }
    pos += length;
  }
  return out;
}

ChakraWriter::ChakraWriter(std::string path, const chakra::GlobalMetadata& metadata)
    : path_(std::move(path)), out_(path_, std::ios::binary | std::ios::trunc) {
  if (!out_) throw InputError(path_, "", "cannot create the Chakra trace file");
  append_delimited(metadata, buffer_);
}

ChakraWriter::~ChakraWriter() {
  // Best effort: a destructor must not throw; callers that care call close() themselves.
  if (out_.is_open() && !buffer_.empty()) out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
}

void ChakraWriter::append(const chakra::Node& node) {
  append_delimited(node, buffer_);
  ++nodes_;
  if (buffer_.size() > (size_t{1} << 20)) flush();
}

void ChakraWriter::flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
  if (!out_) throw InputError(path_, "", "cannot write the Chakra trace file (disk full?)");
}

void ChakraWriter::close() {
  flush();
  out_.close();
  if (!out_) throw InputError(path_, "", "cannot write the Chakra trace file (disk full?)");
}

const chakra::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<chakra::AttributeProto>& attrs,
                                        std::string_view name) {
  for (const chakra::AttributeProto& a : attrs) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool attr_integer(const chakra::AttributeProto& a, int64_t& out) {
  using A = chakra::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val: out = a.int32_val(); return true;
    case A::kInt64Val: out = a.int64_val(); return true;
    case A::kUint32Val: out = a.uint32_val(); return true;
    case A::kUint64Val: out = static_cast<int64_t>(std::min<uint64_t>(a.uint64_val(), INT64_MAX)); return true;
    case A::kSint32Val: out = a.sint32_val(); return true;
    case A::kSint64Val: out = a.sint64_val(); return true;
    case A::kFixed32Val: out = a.fixed32_val(); return true;
    case A::kFixed64Val: out = static_cast<int64_t>(std::min<uint64_t>(a.fixed64_val(), INT64_MAX)); return true;
    case A::kSfixed32Val: out = a.sfixed32_val(); return true;
    case A::kSfixed64Val: out = a.sfixed64_val(); return true;
    case A::kBoolVal: out = a.bool_val() ? 1 : 0; return true;
    default: return false;
  }
}

bool attr_number(const chakra::AttributeProto& a, double& out) {
  if (a.value_case() == chakra::AttributeProto::kDoubleVal) {
    out = a.double_val();
    return true;
  }
  if (a.value_case() == chakra::AttributeProto::kFloatVal) {
    out = a.float_val();
    return true;
  }
  int64_t i = 0;
  if (!attr_integer(a, i)) return false;
  out = static_cast<double>(i);
  return true;
}

std::string attr_type_name(const chakra::AttributeProto& a) {
  if (a.value_case() == chakra::AttributeProto::VALUE_NOT_SET) return "none";
  const google::protobuf::FieldDescriptor* f = chakra::AttributeProto::descriptor()->FindFieldByNumber(a.value_case());
  return f != nullptr ? f->name() : fmt::format("field {}", static_cast<int>(a.value_case()));
}

chakra::AttributeProto bool_attr(std::string name, bool value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_bool_val(value);
  return a;
}
chakra::AttributeProto int32_attr(std::string name, int32_t value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_int32_val(value);
  return a;
}
chakra::AttributeProto int64_attr(std::string name, int64_t value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_int64_val(value);
  return a;
}
chakra::AttributeProto uint64_attr(std::string name, uint64_t value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_uint64_val(value);
  return a;
}
chakra::AttributeProto double_attr(std::string name, double value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_double_val(value);
  return a;
}
chakra::AttributeProto string_attr(std::string name, std::string value) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  a.set_string_val(std::move(value));
  return a;
}
chakra::AttributeProto int64_list_attr(std::string name, const std::vector<int64_t>& values) {
  chakra::AttributeProto a;
  a.set_name(std::move(name));
  for (int64_t v : values) a.mutable_int64_list()->add_values(v);
  return a;
}

std::string node_type_name(int type) {
  return chakra::NodeType_IsValid(type) ? chakra::NodeType_Name(static_cast<chakra::NodeType>(type)) : std::to_string(type);
}

std::string collective_type_name(int type) {
  return chakra::CollectiveCommType_IsValid(type) ? chakra::CollectiveCommType_Name(static_cast<chakra::CollectiveCommType>(type))
                                                  : std::to_string(type);
}

}  // namespace trainsim::core
