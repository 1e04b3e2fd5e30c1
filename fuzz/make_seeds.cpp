// fuzz_seeds <corpus dir>: writes the seed corpora of the fuzz targets from the real encoders
// (encode_task, encode_end_of_run, RunDomains::allocate), a few small valid inputs per target,
// into <corpus dir>/<target>/seed-<what>. Run it by hand when a format changes; the seeds are
// checked in (fuzz/corpus/). Single-threaded.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/builtin_kernels.h"
#include "runtime/domains.h"
#include "runtime/run_domains.h"
#include "runtime/task_codec.h"
#include "runtime/tensor_access.h"

namespace {

using namespace rankflow;
using namespace rankflow::runtime;

std::filesystem::path root;

void write(const std::string& target, const std::string& name, const std::vector<std::byte>& b) {
  const auto dir = root / target;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ("seed-" + name), std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A host tensor (home -1) or child tensor (home 0) of f32 at `offset` of its arena.
Tensor tensor(size_t offset, std::vector<size_t> shape, int home = -1) {
  size_t elements = 1;
  for (size_t d : shape)
    elements *= d;
  return detail::TensorAccess::make(1, offset, elements * 4, std::move(shape), DType::kF32, nullptr,
                                    home);
}

std::vector<std::byte> encode(uint64_t id, uint32_t fn, std::vector<TaskArg> args,
                              std::shared_ptr<std::vector<std::byte>> payload = nullptr) {
  TaskState task;
  task.id = id;
  task.fn = fn;
  task.workers = {0};
  task.config = {1, 0};
  task.member_args.push_back(std::move(args));
  task.payload = std::move(payload);
  std::vector<std::byte> slot(kDescStride);
  slot.resize(encode_task(task, 0, slot.data()));
  return slot;
}

std::vector<std::byte> domain_payload(std::vector<int> workers, std::vector<BufferSpec> buffers) {
  RunDomains domains(4);
  domains.begin_run(1);
  std::vector<std::byte> payload;
  domains.allocate("tp", std::move(workers), 1 << 16, std::move(buffers), payload);
  return payload;
}

std::vector<std::byte> text(char selector, const std::string& value) {
  std::vector<std::byte> b{static_cast<std::byte>(selector)};
  for (char c : value)
    b.push_back(static_cast<std::byte>(c));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  root = argv[1];
  // Task descriptors: even ids map the arena in arg_blob_fuzz, odd ones stage it.
  std::vector<std::pair<std::string, std::vector<std::byte>>> tasks;
  tasks.emplace_back("contiguous", encode(2, 3,
                                          {in(tensor(0, {16})), scalar(int32_t{7}),
                                           out(tensor(64, {4, 4})), scalar(0.5)}));
  const Tensor box = tensor(1024, {2, 3, 4, 2, 3}).slice(1, 1, 3).slice(4, 1, 3);
  tasks.emplace_back("strided", encode(3, 4, {in(box), out_existing(box), inout(tensor(0, {8}))}));
  tasks.emplace_back("copy-to-child",
                     encode(5, kCopyKernel, {out(tensor(128, {32}, 0)), in(tensor(256, {32}))}));
  tasks.emplace_back("copy-from-child",
                     encode(6, kCopyKernel, {out(tensor(512, {8, 8})), in(tensor(0, {8, 8}, 0))}));
  auto state = std::make_shared<detail::DomainState>();
  state->id = 1;
  tasks.emplace_back(
      "domain-arg",
      encode(8, 3, {domain_arg(detail::DomainState::handle(state)), in(tensor(0, {4}))}));
  tasks.emplace_back("allocate-domain", encode(9, kCreateDomainKernel, {},
                                               std::make_shared<std::vector<std::byte>>(
                                                   domain_payload({0, 1}, {{"grad", 4096, 64}}))));
  std::vector<std::byte> end(sizeof(DescHeader));
  end.resize(encode_end_of_run(end.data()));
  tasks.emplace_back("end-of-run", end);
  for (const auto& [name, bytes] : tasks) {
    write("task_descriptor", name, bytes);
    write("arg_blob", name, bytes);
  }
  // Domain descriptors: 0 then a chip's payload; 1 then a host request (FuzzedDataProvider).
  auto chip = [](std::vector<std::byte> payload) {
    payload.insert(payload.begin(), std::byte{0});
    return payload;
  };
  write("domain_descriptor", "no-buffers", chip(domain_payload({0}, {})));
  write("domain_descriptor", "two-buffers",
        chip(domain_payload({2, 0, 1}, {{"grad", 4096, 64}, {"flags", 8, 8}})));
  write("domain_descriptor", "host-request", text(1, "tp\x02\x01\x03grad\x10\x40\x06\x01\x02"));
  // Environment values: the selector byte, then the value.
  const std::pair<const char*, std::string> values[] = {
      {"timeout", std::string(1, '\0') + "120"},
      {"timeout-fraction", std::string(1, '\0') + "0.25"},
      {"timeout-exponent", std::string(1, '\0') + "2.5e-3"},
      {"log",
       "\x01"
       "debug"},
      {"bind", "\x02none"},
      {"progress", "\x03thread"},
      {"allreduce-ranges", "\x04onephase:0-64k;twophase:64k-inf"},
      {"allgather-name", "\x05pushed"},
      {"reduce-scatter-ranges", "\x06pushed:1-4K; mesh:4K-1g"},
      {"broadcast-ranges", "\x07streamed:0-4k;direct:4k-inf"},
      {"all-to-all-name", "\x08mesh"},
  };
  for (const auto& [name, value] : values) {
    std::vector<std::byte> b;
    for (char c : value)
      b.push_back(static_cast<std::byte>(c));
    write("env_parsers", name, b);
  }
  return 0;
}
