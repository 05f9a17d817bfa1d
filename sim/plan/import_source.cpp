#include "sim/plan/import_source.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace trainsim::plan::import_detail {

SourceObject::SourceObject(const core::Json& node, std::string file, std::string path, FieldStyle style,
                           core::Diagnostics& diag)
    : node_(&node), file_(std::move(file)), path_(std::move(path)), style_(style), diag_(&diag) {
  if (!node.is_object()) {
    is_object_ = false;
    diag_->add(file_, path_, fmt::format("expected an object, found {}", core::describe_json(node)));
  }
}

std::string SourceObject::field(std::string_view key) const {
  if (style_ == FieldStyle::POINTER) return core::append_pointer(path_, key);
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool SourceObject::has(std::string_view key) const {
  if (!is_object_) return false;
  const auto it = node_->find(key);
  return it != node_->end() && !it->is_null();
}

const core::Json* SourceObject::get(std::string_view key) {
  read_.emplace(key);
  if (!has(key)) return nullptr;
  return &*node_->find(key);
}

void SourceObject::problem(std::string_view key, std::string message) {
  diag_->add(file_, key.empty() ? path_ : field(key), std::move(message));
}

std::optional<int64_t> SourceObject::integer(std::string_view key, int64_t min, int64_t max) {
  const core::Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  const std::optional<int64_t> i = core::exact_integer(*v);
  if (!i || *i < min || *i > max) {
    const std::string range = max == INT64_MAX ? fmt::format("an integer >= {}", min)
                                               : fmt::format("an integer in [{}, {}]", min, max);
    problem(key, fmt::format("expected {}, found {}", range, core::describe_json(*v)));
    return std::nullopt;
  }
  return i;
}

std::optional<double> SourceObject::number(std::string_view key, double min, double max) {
  const core::Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < min || v->get<double>() > max) {
    problem(key, fmt::format("expected a number in [{:g}, {:g}], found {}", min, max, core::describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> SourceObject::boolean(std::string_view key) {
  const core::Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    problem(key, fmt::format("expected true or false, found {}", core::describe_json(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> SourceObject::string(std::string_view key) {
  const core::Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    problem(key, fmt::format("expected a string, found {}", core::describe_json(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::string> SourceObject::choice(std::string_view key, const std::vector<std::string>& allowed) {
  const std::optional<std::string> s = string(key);
  if (!s) return std::nullopt;
  for (const std::string& a : allowed) {
    if (a == *s) return s;
  }
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + ('"' + allowed[i] + '"');
  const std::string hint = core::closest_match(*s, allowed);
  problem(key, fmt::format("expected {}, found \"{}\"{}", list, core::truncate_echo(*s),
                           hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
  return std::nullopt;
}

std::optional<SourceObject> SourceObject::object(std::string_view key) {
  const core::Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) {
    problem(key, fmt::format("expected {}, found {}", style_ == FieldStyle::DOTTED ? "a table" : "an object",
                             core::describe_json(*v)));
    return std::nullopt;
  }
  return SourceObject(*v, file_, field(key), style_, *diag_);
}

void SourceObject::unread_notes(std::vector<ImportNote>& notes,
                                const std::function<std::string(const std::string& key)>& reason) const {
  if (!is_object_) return;
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    if (read_.contains(it.key()) || it.value().is_null()) continue;  // null: not given
    if (it.value().is_object() && !it.value().empty()) {
      // Each value of a table or object nobody read, under the reason of its top-level key.
      SourceObject inner(it.value(), file_, field(it.key()), style_, *diag_);
      const std::string top = it.key();
      inner.unread_notes(notes, [&](const std::string&) { return reason(top); });
      continue;
    }
    notes.push_back({file_, field(it.key()), echo(it.value()), reason(it.key())});
  }
}

std::string echo(const core::Json& value) {
  if (value.is_string()) return core::truncate_echo(value.get<std::string>());
  return core::truncate_echo(value.dump());
}

void set_value(ImportFragment& f, const std::string& pointer, core::Json value, const std::string& field) {
  f.scenario[core::Json::json_pointer(pointer)] = std::move(value);
  f.origin[pointer] = field;
}

void add_note(ImportFragment& f, std::string field, std::string value, std::string message) {
  f.notes.push_back({f.file, std::move(field), std::move(value), std::move(message)});
}

MoePattern fit_moe_pattern(const std::vector<bool>& moe) {
  const int layers = static_cast<int>(moe.size());
  const auto matches = [&](int first, int freq) {
    for (int i = 0; i < layers; ++i) {
      if (moe[i] != (i >= first && i % freq == 0)) return false;
    }
    return true;
  };
  int first = 0;
  while (first < layers && !moe[first]) ++first;
  for (int freq = 1; freq <= std::max(1, layers); ++freq) {
    // A leading run of dense layers longer than the first MoE index could also come from the rule's
    // offset (first_dense_layers below the first MoE layer): try both.
    for (int f = 0; f <= first; ++f) {
      if (matches(f, freq)) return {f, freq, true};
    }
  }
  int count = 0;
  for (bool m : moe) count += m ? 1 : 0;
  MoePattern best{first, 1, false};
  int best_error = layers + 1;
  for (int freq = 1; freq <= std::max(1, layers); ++freq) {
    int n = 0;
    for (int i = first; i < layers; ++i) n += i % freq == 0 ? 1 : 0;
    if (n > 0 && std::abs(n - count) < best_error) {
      best_error = std::abs(n - count);
      best.moe_layer_freq = freq;
    }
  }
  return best;
}

}  // namespace trainsim::plan::import_detail
