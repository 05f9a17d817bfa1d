#pragma once
// Finding functions of a library that the process has already loaded, wherever it was loaded.
//
// PyTorch loads libnccl (and libcublas) as dependencies of extension modules that Python dlopens
// with RTLD_LOCAL, so their symbols are not in the global scope and dlsym(RTLD_NEXT, ...) from an
// LD_PRELOADed wrapper cannot see them. find_loaded_library() walks the loaded objects
// (dl_iterate_phdr), picks the first whose file name matches, and takes a new reference to it with
// dlopen(RTLD_NOLOAD), which never loads anything; dlsym on that handle finds the real functions.
//
// Example:
//   LoadedLibrary nccl = find_loaded_library(is_nccl_library);
//   auto* real = reinterpret_cast<AllReduceFn>(nccl.symbol("ncclAllReduce"));

#include <string>
#include <string_view>

namespace trainsim::tracer {

struct LoadedLibrary {
  void* handle = nullptr;  // from dlopen(RTLD_NOLOAD); null when not found
  std::string path;

  // dlsym on the handle; nullptr when the library was not found or lacks `name`.
  void* symbol(const char* name) const;
  explicit operator bool() const { return handle != nullptr; }
};

// "libnccl.so", "libnccl.so.2", "libnccl.so.2.28.9" (not NCCL's plugins, libnccl-net.so etc.).
bool is_nccl_library(std::string_view file_name);
// "libcublasLt.so*" and "libcublas.so*" respectively.
bool is_cublaslt_library(std::string_view file_name);
bool is_cublas_library(std::string_view file_name);
// "libcupti.so*".
bool is_cupti_library(std::string_view file_name);

// The first loaded object (in load order) whose file name (without folders) matches.
LoadedLibrary find_loaded_library(bool (*matches)(std::string_view file_name));

// The first loaded shared object through which `symbol` resolves to a definition outside the
// object containing `own_address` (the wrapper itself): for a library linked statically into
// another (NCCL inside a framework's shared object) or renamed. The main program is not searched.
LoadedLibrary find_library_defining(const char* symbol, const void* own_address);

}  // namespace trainsim::tracer
