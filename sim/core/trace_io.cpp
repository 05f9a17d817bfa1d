#include "sim/core/trace_io.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>
#include <mutex>

#include "sim/core/error.hpp"

namespace trainsim::core {
namespace {

constexpr int MAX_VARINT_BYTES = 10;

void append_varint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

}  // namespace

void append_delimited(const google::protobuf::MessageLite& message, std::string& out) {
  const std::string bytes = message.SerializeAsString();
  append_varint(bytes.size(), out);
  out += bytes;
}

// ---------------------------------------------------------------------------------------------
// TraceWriter

TraceWriter::TraceWriter(std::string path, trace::Header header)
    : path_(std::move(path)), out_(path_, std::ios::binary | std::ios::trunc) {
  if (!out_) throw InputError(path_, "", "cannot create the trace file");
  if (header.magic().empty()) header.set_magic(TRACE_MAGIC);
  if (header.format_version() == 0) header.set_format_version(TRACE_FORMAT_VERSION);
  trace::Record record;
  *record.mutable_header() = std::move(header);
  append_delimited(record, buffer_);
  flush();
}

TraceWriter::~TraceWriter() {
  // Best effort: a destructor must not throw; callers that care call flush() themselves.
  if (!buffer_.empty()) {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    out_.flush();
  }
}

void TraceWriter::append(const trace::Record& record) {
  TRAINSIM_CHECK(!record.has_header(), "a trace file has exactly one header, written first");
  append_delimited(record, buffer_);
  ++records_;
  if (buffer_.size() >= (1u << 20)) flush();
}

void TraceWriter::flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  out_.flush();
  buffer_.clear();
  if (!out_) throw InputError(path_, "", "writing the trace file failed");
}

// ---------------------------------------------------------------------------------------------
// TraceReader

TraceReader::TraceReader(std::string path) : path_(std::move(path)) {
  // A record that does not parse is reported as a corrupt record naming the file and offset;
  // protobuf's own log lines ("[libprotobuf ERROR ...] invalid UTF-8") would only come before it.
  static std::once_flag quiet_protobuf;
  std::call_once(quiet_protobuf, [] { google::protobuf::SetLogHandler(nullptr); });
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw InputError(path_, "", "cannot read the trace file: not a regular file");
  }
  size_ = std::filesystem::file_size(path_, ec);
  in_.open(path_, std::ios::binary);
  if (!in_ || ec) throw InputError(path_, "", "cannot open the trace file");
  if (size_ == 0) throw InputError(path_, "", "empty file: a trace starts with a header record");

  std::string payload;
  uint64_t frame_offset = 0;
  trace::Record first;
  if (!read_frame(payload, frame_offset)) {
    throw InputError(path_, "", fmt::format("not a trainsim trace: the file ({} bytes) ends inside its first record", size_));
  }
  if (!first.ParseFromString(payload) || !first.has_header() || first.header().magic() != TRACE_MAGIC) {
    throw InputError(path_, "", "not a trainsim trace: the first record is not a trainsim.trace header");
  }
  header_ = first.header();
  if (header_.format_version() != TRACE_FORMAT_VERSION) {
    throw InputError(path_, "", fmt::format("unsupported trace format version {} (this trainsim reads version {})",
                                            header_.format_version(), TRACE_FORMAT_VERSION));
  }
  // Never trust the header: a world size or rank beyond the limit would size per-rank tables.
  const auto check_range = [&](const char* field, int64_t value, int64_t upper) {
    if (value < -1 || value >= upper) {
      throw InputError(path_, "", fmt::format("corrupt header: {} {} is outside -1..{} (the limit is {} ranks, "
                                              "TRACE_MAX_WORLD_SIZE; -1 means unknown)",
                                              field, value, upper - 1, TRACE_MAX_WORLD_SIZE));
    }
  };
  check_range("world_size", header_.world_size(), int64_t{TRACE_MAX_WORLD_SIZE} + 1);
  check_range("rank", header_.rank(), TRACE_MAX_WORLD_SIZE);
  check_range("local_rank", header_.local_rank(), TRACE_MAX_WORLD_SIZE);
  if (header_.world_size() > 0 && header_.rank() >= header_.world_size()) {
    throw InputError(path_, "", fmt::format("corrupt header: rank {} is outside the world size {}", header_.rank(),
                                            header_.world_size()));
  }
}

bool TraceReader::read_frame(std::string& payload, uint64_t& frame_offset) {
  frame_offset = offset_;
  if (offset_ >= size_) return false;
  uint64_t length = 0;
  int shift = 0;
  uint64_t pos = offset_;
  while (true) {
    if (pos >= size_) {  // the file ends inside the length prefix
      lost_bytes_ = size_ - offset_;
      return false;
    }
    const int c = in_.get();
    if (c == std::char_traits<char>::eof()) {
      lost_bytes_ = size_ - offset_;
      return false;
    }
    ++pos;
    length |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) break;
    shift += 7;
    if (shift >= 7 * MAX_VARINT_BYTES) {
      throw InputError(path_, "", fmt::format("corrupt record at byte offset {}: malformed length prefix", frame_offset));
    }
  }
  if (length > TRACE_MAX_RECORD_BYTES) {
    throw InputError(path_, "", fmt::format("corrupt record at byte offset {}: length {} exceeds the {} byte limit",
                                            frame_offset, length, TRACE_MAX_RECORD_BYTES));
  }
  if (length > size_ - pos) {  // the file ends inside the record
    lost_bytes_ = size_ - offset_;
    return false;
  }
  payload.resize(length);
  in_.read(payload.data(), static_cast<std::streamsize>(length));
  if (static_cast<uint64_t>(in_.gcount()) != length) {
    throw InputError(path_, "", fmt::format("read failed at byte offset {}", pos));
  }
  offset_ = pos + length;
  return true;
}

bool TraceReader::next(trace::Record& out) {
  std::string payload;
  uint64_t frame_offset = 0;
  if (!read_frame(payload, frame_offset)) return false;
  if (!out.ParseFromString(payload)) {
    throw InputError(path_, "", fmt::format("corrupt record at byte offset {}: {} bytes that do not parse as a "
                                            "trainsim.trace.Record", frame_offset, payload.size()));
  }
  if (out.has_header()) {
    throw InputError(path_, "", fmt::format("corrupt record at byte offset {}: a second header", frame_offset));
  }
  ++records_;
  return true;
}

TraceFile read_trace_file(const std::string& path) {
  TraceReader reader(path);
  TraceFile file;
  file.path = path;
  file.header = reader.header();
  trace::Record record;
  uint64_t record_offset = reader.offset();
  try {
    while (reader.next(record)) {
      file.records.push_back(std::move(record));
      record_offset = reader.offset();
    }
    file.lost_bytes = reader.lost_bytes();
  } catch (const InputError& e) {
    // A corrupt record: keep what came before it, drop it and everything after (no resynchronizing
    // on a stream of length-prefixed records).
    file.corruption = e.what();
    file.lost_bytes = reader.file_size() - record_offset;
  }
  return file;
}

std::string truncation_warning(const TraceFile& file) {
  if (!file.corruption.empty()) {
    return fmt::format("warning: {}; the last {} bytes were dropped from there on; read up to the last complete "
                       "record ({} records)",
                       file.corruption, file.lost_bytes, file.records.size());
  }
  if (file.lost_bytes == 0) return "";
  return fmt::format("warning: {}: truncated: the last {} bytes (an incomplete record) were dropped; read up to the "
                     "last complete record ({} records)",
                     file.path, file.lost_bytes, file.records.size());
}

std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const fs::directory_entry& e : fs::directory_iterator(p, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".trace") found.push_back(e.path().string());
      }
      if (found.empty()) throw InputError(p, "", "no *.trace files in this folder");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw InputError(p, "", "no such file or folder");
    }
  }
  return out;
}

bool to_collective_op(trace::CollectiveOp traced, CollectiveOp& out) {
  switch (traced) {
    case trace::COLLECTIVE_OP_ALL_REDUCE: out = CollectiveOp::ALL_REDUCE; return true;
    case trace::COLLECTIVE_OP_REDUCE_SCATTER: out = CollectiveOp::REDUCE_SCATTER; return true;
    case trace::COLLECTIVE_OP_ALL_GATHER: out = CollectiveOp::ALL_GATHER; return true;
    case trace::COLLECTIVE_OP_BROADCAST: out = CollectiveOp::BROADCAST; return true;
    case trace::COLLECTIVE_OP_REDUCE: out = CollectiveOp::REDUCE; return true;
    case trace::COLLECTIVE_OP_ALL_TO_ALL: out = CollectiveOp::ALL_TO_ALL; return true;
    default: return false;
  }
}

}  // namespace trainsim::core
