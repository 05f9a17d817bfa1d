#include "tracer/record/library_lookup.hpp"

#include <dlfcn.h>
#include <link.h>
#include <vector>

namespace trainsim::tracer {
namespace {

bool has_so_name(std::string_view file_name, std::string_view stem) {
  const std::string prefix = std::string(stem) + ".so";
  if (file_name.substr(0, prefix.size()) != prefix) return false;
  return file_name.size() == prefix.size() || file_name[prefix.size()] == '.';
}

int collect(dl_phdr_info* info, size_t /*size*/, void* data) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
  }
  return 0;
}

// Paths of the loaded shared objects, in load order, the main program left out. Collected first and
// opened afterwards: dlopen inside the dl_iterate_phdr callback would take the loader's locks while
// dl_iterate_phdr holds one of them.
std::vector<std::string> loaded_objects() {
  std::vector<std::string> paths;
  dl_iterate_phdr(collect, &paths);
  return paths;
}

std::string_view file_name_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

void* LoadedLibrary::symbol(const char* name) const { return handle == nullptr ? nullptr : dlsym(handle, name); }

bool is_nccl_library(std::string_view file_name) { return has_so_name(file_name, "libnccl"); }
bool is_cublaslt_library(std::string_view file_name) { return has_so_name(file_name, "libcublasLt"); }
bool is_cublas_library(std::string_view file_name) { return has_so_name(file_name, "libcublas"); }
bool is_cupti_library(std::string_view file_name) { return has_so_name(file_name, "libcupti"); }

LoadedLibrary find_loaded_library(bool (*matches)(std::string_view file_name)) {
  LoadedLibrary lib;
  for (const std::string& path : loaded_objects()) {
    if (!matches(file_name_of(path))) continue;
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (lib.handle != nullptr) {
      lib.path = path;
      break;
    }
  }
  return lib;
}

LoadedLibrary find_library_defining(const char* symbol, const void* own_address) {
  Dl_info own{};
  const void* own_base = dladdr(own_address, &own) != 0 ? own.dli_fbase : nullptr;
  LoadedLibrary lib;
  for (const std::string& path : loaded_objects()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* address = dlsym(handle, symbol);
    Dl_info where{};
    if (address != nullptr && dladdr(address, &where) != 0 && where.dli_fbase != own_base) {
      lib.handle = handle;
      lib.path = where.dli_fname != nullptr ? where.dli_fname : path;
      break;
    }
    dlclose(handle);
  }
  return lib;
}

}  // namespace trainsim::tracer
