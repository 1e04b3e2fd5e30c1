// The allocate_domain payload without MPI: what the host describes a chip decodes back, and the
// chip refuses with a TransportError, before any MPI call, every payload the host cannot have
// sent. The regressions feed the inputs the fuzz targets crashed on (fuzz/corpus/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_corpus.h"
#include "rankflow/error.h"
#include "runtime/builtin_kernels.h"
#include "runtime/domains.h"
#include "runtime/run_domains.h"
#include "runtime/task_codec.h"

namespace rankflow::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using rankflow::test::corpus_file;

std::vector<std::byte> payload_of(std::vector<int> workers, std::vector<BufferSpec> buffers,
                                  int chips = 4) {
  RunDomains domains(chips);
  domains.begin_run(1);
  std::vector<std::byte> payload;
  domains.allocate("tp", std::move(workers), 1 << 16, std::move(buffers), payload);
  return payload;
}

DomainDesc desc_of(const std::vector<std::byte>& payload) {
  DomainDesc desc;
  std::memcpy(&desc, payload.data(), sizeof(desc));
  return desc;
}

std::vector<std::byte> bytes_of(const DomainDesc& desc) {
  std::vector<std::byte> payload(sizeof(desc));
  std::memcpy(payload.data(), &desc, sizeof(desc));
  return payload;
}

void expect_refused(const std::vector<std::byte>& payload, int chips, int chip,
                    const std::string& what) {
  try {
    decode_domain_desc(payload, chips, chip);
    ADD_FAILURE() << "accepted: " << what;
  } catch (const TransportError& e) {
    EXPECT_THAT(e.what(), HasSubstr(what));
    EXPECT_THAT(e.what(), Not(HasSubstr("invalid argument"))) << "one error code per message";
  }
}

TEST(DomainDesc, WhatTheHostDescribesAMemberDecodes) {
  const auto payload = payload_of({2, 0}, {{"grad", 4096, 64}, {"flags", 8, 8}});
  const DomainDesc desc = decode_domain_desc(payload, 4, 0);
  EXPECT_EQ(desc.members, 2u);
  const DomainPlan plan = plan_domain(desc);
  EXPECT_EQ(plan.name, "tp");
  EXPECT_EQ(plan.ranks, (std::vector<int>{3, 1}));
  ASSERT_GE(plan.buffers.size(), 3u);
  EXPECT_EQ(plan.buffers[0].name, "grad");
  EXPECT_EQ(plan.buffers[1].alignment, 8u);
  EXPECT_EQ(plan.symmetric, 3u);  // grad, flags, the rest of the window
}

TEST(DomainDesc, PayloadsTheHostCannotHaveSentAreRefused) {
  const auto good = payload_of({0, 1}, {{"grad", 4096, 64}});
  expect_refused(std::vector<std::byte>(good.begin(), good.end() - 1), 4, 0,
                 "allocate_domain: a payload of " + std::to_string(good.size() - 1) + " bytes");
  auto edit = [&](auto change) {
    DomainDesc desc = desc_of(good);
    change(desc);
    return bytes_of(desc);
  };
  expect_refused(edit([](DomainDesc& d) { d.members = 0; }), 4, 0, "0 members");
  expect_refused(
      edit([](DomainDesc& d) { d.workers[1] = 4; }), 4, 0,
      "malformed allocate_domain payload: allocate_domain('tp'): worker 4 does not exist");
  expect_refused(edit([](DomainDesc& d) { d.workers[1] = INT32_MAX; }), 4, 0,
                 "worker 2147483647 does not exist");
  expect_refused(edit([](DomainDesc& d) { d.window_bytes = 0; }), 4, 0, "window_bytes");
  expect_refused(edit([](DomainDesc& d) { d.buffer_alignment[0] = 0; }), 4, 0,
                 "buffer 'grad' needs a power-of-two alignment");
  expect_refused(edit([](DomainDesc& d) { d.buffer_alignment[0] = 8192; }), 4, 0,
                 "needs a power-of-two alignment up to 4096 (got 8192)");
  expect_refused(edit([](DomainDesc& d) { d.buffer_bytes[0] = uint64_t{1} << 49; }), 4, 0,
                 "more than the window's");
  expect_refused(edit([](DomainDesc& d) { d.name[0] = '\0'; }), 4, 0, "a name of 1 to 47");
  expect_refused(edit([](DomainDesc& d) { std::memset(d.buffer_names[0], 'x', kMaxDomainName); }),
                 4, 0, "buffer name 'xxxx");
  expect_refused(good, 4, 2, "allocate_domain('tp'): chip worker 2 is not a member");
}

// Found by fuzz/arg_blob_fuzz.cpp: an allocate_domain descriptor whose payload gives buffer
// 'grad' an alignment of 0. The chip divided by it placing the buffers (SIGFPE, the chip dead).
TEST(DomainDesc, FuzzRegressionAZeroAlignmentIsRefused) {
  const auto slot = corpus_file("arg_blob/regression-domain-buffer-alignment-zero");
  DecodedTask task;
  decode_task(slot.data(), slot.size(), task);
  ASSERT_EQ(task.header.kernel, kCreateDomainKernel);
  expect_refused(task.payload, 64, 0, "buffer 'grad' needs a power-of-two alignment");
}

// Found by fuzz/domain_descriptor_fuzz.cpp (first byte 0: chip worker 0, then the payload):
// worker 1 twice. The chip accepted it and would have called MPI_Group_incl with a rank twice.
TEST(DomainDesc, FuzzRegressionADuplicateWorkerIsRefused) {
  const auto input = corpus_file("domain_descriptor/regression-duplicate-worker");
  ASSERT_FALSE(input.empty());
  const std::vector<std::byte> payload(input.begin() + 1, input.end());
  expect_refused(
      payload, 64, static_cast<int>(input[0]) >> 1,
      "malformed allocate_domain payload: allocate_domain('tp'): worker 1 appears twice");
}

// Found by fuzz/domain_descriptor_fuzz.cpp (fuzz/corpus/domain_descriptor/regression-host-name-
// with-nul: a host request through FuzzedDataProvider): the host accepted a 45-byte name with
// NULs in it, and every member decoded the 7 bytes before the first NUL as the domain's name
// (and its message ended at that NUL too).
TEST(DomainDesc, FuzzRegressionANameWithANulIsAnInvalidArgument) {
  const std::string name(
      "\xff\xff\xff\xff\xff\xff\x5f\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"
      "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x67"
      "\x67",
      45);
  RunDomains domains(4);
  domains.begin_run(1);
  std::vector<std::byte> payload;
  try {
    domains.allocate(name, {0}, 1 << 16, {}, payload);
    FAIL() << "accepted a name with a NUL";
  } catch (const InvalidArgument& e) {
    // The message shows each NUL as \0, so it does not end at the first one.
    EXPECT_THAT(e.what(), HasSubstr("allocate_domain('\xff\xff\xff\xff\xff\xff_\\0\\0"));
    EXPECT_THAT(e.what(), HasSubstr("'): a name of 1 to 47 characters, none of them NUL"));
  }
  try {
    domains.allocate("tp", {0}, 1 << 16, {{std::string("a\0b", 3), 8, 8}}, payload);
    FAIL() << "accepted a buffer name with a NUL";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("buffer name 'a\\0b' (1 to 47 characters, none of them NUL)"));
  }
}

// Found by fuzz/domain_descriptor_fuzz.cpp (fuzz/corpus/domain_descriptor/regression-host-
// reserved-buffer-name: a host request through FuzzedDataProvider): the host accepted a buffer
// named rankflow.inbox, which every member's team also holds for the domain's collectives; each
// member would then have failed inside the domain's creation, after MPI_Comm_create_group.
TEST(DomainDesc, FuzzRegressionBufferNamesOfTheRuntimeAreInvalidArguments) {
  for (const char* reserved : {"rankflow.inbox", "rankflow.collectives", "rankflow.rest"}) {
    RunDomains domains(4);
    domains.begin_run(1);
    std::vector<std::byte> payload;
    try {
      domains.allocate("b", {0}, 1 << 16, {{reserved, 64, 64}}, payload);
      ADD_FAILURE() << "accepted a buffer named " << reserved;
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("allocate_domain('b'): buffer name '" +
                                      std::string(reserved) + "' is reserved"));
    }
  }
  // A payload naming one (which no host sends now) is refused before any MPI call.
  DomainDesc desc = desc_of(payload_of({0}, {{"grad", 64, 64}}));
  std::strcpy(desc.buffer_names[0], "rankflow.inbox");
  expect_refused(bytes_of(desc), 4, 0, "buffer name 'rankflow.inbox' is reserved");
}

}  // namespace
}  // namespace rankflow::runtime
