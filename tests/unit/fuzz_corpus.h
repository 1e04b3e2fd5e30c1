// corpus_file(name): the bytes of fuzz/corpus/<name> (a seed or a regression input), for the
// unit tests that replay what a fuzzer found. Header-only; the tests' main thread.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rankflow::test {

inline std::vector<std::byte> corpus_file(const std::string& name) {
  std::ifstream file(std::string(RANKFLOW_FUZZ_CORPUS) + "/" + name, std::ios::binary);
  EXPECT_TRUE(file) << name;
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace rankflow::test
