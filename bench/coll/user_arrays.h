// The plain arrays of rankflow-bench's --buffers user and registered: a std::vector, as an
// application's arrays, or with --huge-pages an anonymous mapping on 2 MiB boundaries that asks
// for transparent huge pages (madvise MADV_HUGEPAGE before the first touch, then MADV_COLLAPSE
// for any page the kernel still backed with 4 KiB ones), as an application that advises its own
// arrays. The kernel's single copies between processes (process_vm_readv/writev, which rankflow's
// and Open MPI's plain paths both make) pin the other process's pages one page table entry at a
// time, so 2 MiB pages make them cheaper for both libraries alike. Runs on the bench's thread.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rankflow/error.h"

#ifndef MADV_COLLAPSE  // Linux 6.1; absent from older headers
#define MADV_COLLAPSE 25
#endif

namespace rankflow::bench {

class UserArrays {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  UserArrays() = default;
  UserArrays(const UserArrays&) = delete;
  UserArrays& operator=(const UserArrays&) = delete;
  ~UserArrays() {
    if (mapping_ != nullptr) munmap(mapping_, mapped_);
  }

  // `bytes` of zeroed memory, on huge pages where `huge`.
  void allocate(size_t bytes, bool huge) {
    if (!huge) {
      vector_.assign(bytes, std::byte{0});
      data_ = vector_.data();
      return;
    }
    const size_t before = anon_huge_kib();
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    mapped_ = rounded + kHugePage;  // room to start on a 2 MiB boundary
    mapping_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      throw TransportError("--huge-pages: mmap of " + std::to_string(mapped_) +
                           " bytes failed: " + std::strerror(errno));
    }
    const auto at = (reinterpret_cast<uintptr_t>(mapping_) + kHugePage - 1) & ~(kHugePage - 1);
    data_ = reinterpret_cast<std::byte*>(at);
    advised_ = madvise(data_, rounded, MADV_HUGEPAGE) == 0;
    std::memset(data_, 0, rounded);  // the first touch: huge pages where the kernel has them
    if (advised_) madvise(data_, rounded, MADV_COLLAPSE);  // any page still on 4 KiB ones
    const size_t after = anon_huge_kib();
    huge_mib_ = after > before ? (after - before) >> 10 : 0;
  }

  std::byte* data() const { return data_; }
  // Whether madvise accepted MADV_HUGEPAGE, and how many MiB of huge pages the process gained.
  bool advised() const { return advised_; }
  size_t huge_mib() const { return huge_mib_; }

 private:
  // The process's anonymous memory on transparent huge pages (/proc/self/smaps_rollup), in KiB.
  static size_t anon_huge_kib() {
    std::ifstream in("/proc/self/smaps_rollup");
    std::string key;
    size_t kib = 0;
    while (in >> key) {
      if (key == "AnonHugePages:" && in >> kib) return kib;
      in.ignore(4096, '\n');
    }
    return 0;
  }

  std::vector<std::byte> vector_;
  void* mapping_ = nullptr;
  size_t mapped_ = 0;
  std::byte* data_ = nullptr;
  bool advised_ = false;
  size_t huge_mib_ = 0;
};

}  // namespace rankflow::bench
