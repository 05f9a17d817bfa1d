#pragma once
// Internal to the importers (config_import*.cpp): reading one object of a foreign configuration
// file (JSON or TOML made into JSON) with typed getters that record problems by file and field, and
// that remember which keys were read so that the rest become notes. Unlike core::ObjectReader an
// unknown key is not an error: foreign files hold many settings trainsim does not model.

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/plan/config_import.hpp"

namespace trainsim::plan::import_detail {

// How fields are named in messages: JSON pointers ("/zero_optimization/stage") for JSON files,
// dotted TOML keys ("training.seq_len") for TOML.
enum class FieldStyle { POINTER, DOTTED };

class SourceObject {
 public:
  // REQUIRES: `node`, `diag` outlive the reader. A node that is not an object is recorded as a problem.
  SourceObject(const core::Json& node, std::string file, std::string path, FieldStyle style, core::Diagnostics& diag);

  const std::string& file() const { return file_; }
  std::string field(std::string_view key) const;  // the key's name in messages
  core::Diagnostics& diagnostics() { return *diag_; }

  // Present and not null (a JSON null or a TOML key left out reads as not given).
  bool has(std::string_view key) const;
  // The value (marks the key as read); nullptr when absent or null.
  const core::Json* get(std::string_view key);
  void mark_read(std::string_view key) { read_.emplace(key); }

  // Typed values; a wrong type or a value out of range is recorded and reads as nullopt.
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max);
  std::optional<double> number(std::string_view key, double min, double max);
  std::optional<bool> boolean(std::string_view key);
  std::optional<std::string> string(std::string_view key);
  // One of `allowed` (compared exactly); the message lists them and suggests the closest.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& allowed);
  // A nested object; nullopt when absent (a value that is not an object is recorded).
  std::optional<SourceObject> object(std::string_view key);

  void problem(std::string_view key, std::string message);

  // A note for every key not read: `reason(key)` says why it has no counterpart. Nested objects not
  // read are one note each (their value cut to core::MAX_ECHO_CHARS).
  void unread_notes(std::vector<ImportNote>& notes, const std::function<std::string(const std::string& key)>& reason) const;

 private:
  const core::Json* node_;
  std::string file_;
  std::string path_;
  FieldStyle style_;
  core::Diagnostics* diag_;
  std::set<std::string, std::less<>> read_;
  bool is_object_ = true;
};

// A value as it would be written in its file, for notes: strings unquoted, numbers as dumped.
std::string echo(const core::Json& value);

// Sets `pointer` ("/parallelism/tensor") of the fragment's scenario, creating objects on the way,
// and records the source field it came from.
void set_value(ImportFragment& f, const std::string& pointer, core::Json value, const std::string& field);
void add_note(ImportFragment& f, std::string field, std::string value, std::string message);

// Maps the MoE pattern of a model (true = layer i is MoE) onto the scenario's rule: layer i is MoE
// when i >= first_dense_layers and i % moe_layer_freq == 0. Exact when some pair gives the pattern;
// otherwise the closest pair (same leading dense layers, the frequency nearest the pattern's count)
// with exact = false.
struct MoePattern {
  int first_dense_layers = 0;
  int moe_layer_freq = 1;
  bool exact = true;
};
MoePattern fit_moe_pattern(const std::vector<bool>& moe);

// A torchtitan model flavor's shape (torchtitan/models/<name>/__init__.py), for the importer and
// the exporter.
struct TorchtitanFlavor {
  const char* name;    // [model] name
  const char* flavor;  // [model] flavor
  int layers;
  int64_t hidden;
  int heads;
  int kv_heads;
  int64_t head_dim;  // 0: hidden / heads
  int64_t ffn;       // per expert for MoE
  int64_t vocab;
  bool tied;
  int experts;
  int top_k;
};
const std::vector<TorchtitanFlavor>& torchtitan_flavors();
// The scenario's model keys of a full spec ("family", "name", "layers", ...) for the flavor.
core::Json flavor_model(const TorchtitanFlavor& f);

// The model keys that make a full spec ("family": "transformer" plus these): layers, hidden, heads, vocab.
inline constexpr const char* REQUIRED_MODEL_KEYS[] = {"layers", "hidden", "heads", "vocab"};

}  // namespace trainsim::plan::import_detail
