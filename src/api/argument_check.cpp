// ArgumentCheck (see argument_check.h): the members' comparison of a collective's arguments.
// Runs on the thread that calls the communicator.
#include "api/argument_check.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/mpi_session.h"

namespace rankflow::api {
namespace {

// What one member passed, as the words every member gathers: the fields in the order they are
// compared, then the algorithm's name (up to kNameWords * 8 bytes of it) and its length.
constexpr size_t kNameWords = 3;
enum Word : size_t { kCollective, kVariant, kCount, kDType, kOp, kRoot, kInPlace, kBuffers, kName };
constexpr size_t kNameLength = kName + kNameWords;
constexpr size_t kWords = kNameLength + 1;
using Words = std::array<uint64_t, kWords>;

Words encode(const CallArguments& a) {
  Words w{};
  w[kCollective] = static_cast<uint64_t>(a.collective);
  w[kVariant] = a.blocking ? 1 : 0;
  w[kCount] = a.count;
  w[kDType] = static_cast<uint64_t>(static_cast<int64_t>(a.dtype));
  w[kOp] = static_cast<uint64_t>(static_cast<int64_t>(a.op));
  w[kRoot] = static_cast<uint64_t>(static_cast<int64_t>(a.root));
  w[kInPlace] = a.in_place ? 1 : 0;
  w[kBuffers] = static_cast<uint64_t>(a.buffers);
  std::memcpy(&w[kName], a.algorithm.data(), std::min(a.algorithm.size(), kNameWords * 8));
  w[kNameLength] = a.algorithm.size();
  return w;
}

const char* collective_name(uint64_t kind) {
  return kind <= static_cast<uint64_t>(CollectiveKind::kBarrier)
             ? name_of(static_cast<CollectiveKind>(kind))
             : "an unknown collective";
}

// One compared argument's value as a message names it ("count 4", "dtype f32").
std::string describe(Word field, const uint64_t* w) {
  const auto as_int = static_cast<int64_t>(w[field]);
  switch (field) {
    case kCollective: return collective_name(w[field]);
    case kVariant: return w[field] ? "a blocking call" : "a non-blocking call";
    case kCount: return "count " + std::to_string(w[field]);
    case kDType:
      if (as_int >= 0 && as_int <= static_cast<int64_t>(DType::kU64))
        return "dtype " + std::string(to_string(static_cast<DType>(as_int)));
      return "dtype " + std::to_string(as_int);
    case kOp:
      if (as_int >= 0 && as_int <= static_cast<int64_t>(ReduceOp::kMax))
        return "op " + std::string(to_string(static_cast<ReduceOp>(as_int)));
      return "op " + std::to_string(as_int);
    case kRoot: return "root " + std::to_string(as_int);
    case kInPlace: return w[field] ? "in place" : "out of place";
    case kBuffers: {
      static const char* const kinds[] = {
          "plain buffers", "symmetric buffers (Communicator::alloc)", "registered buffers"};
      return w[field] < std::size(kinds) ? kinds[w[field]] : "unknown buffers";
    }
    default: {
      const size_t length = w[kNameLength];
      std::string name(reinterpret_cast<const char*>(&w[kName]), std::min(length, kNameWords * 8));
      return "algorithm '" + name + (length > kNameWords * 8 ? "...'" : "'");
    }
  }
}

bool same(Word field, const uint64_t* a, const uint64_t* b) {
  if (field != kName) return a[field] == b[field];
  return std::equal(a + kName, a + kWords, b + kName);
}

// "count 4 on members 0 and 2, count 8 on member 1": each distinct value with the members that
// passed it (at most eight members named a value, then how many more).
std::string who_passed_what(Word field, const std::vector<Words>& all) {
  std::vector<std::pair<const uint64_t*, std::vector<int>>> values;
  for (int m = 0; m < static_cast<int>(all.size()); ++m) {
    const uint64_t* w = all[static_cast<size_t>(m)].data();
    auto it = std::find_if(values.begin(), values.end(),
                           [&](const auto& v) { return same(field, v.first, w); });
    if (it == values.end())
      values.push_back({w, {m}});
    else
      it->second.push_back(m);
  }
  std::string text;
  for (const auto& [w, members] : values) {
    text += (text.empty() ? "" : ", ") + describe(field, w) +
            (members.size() == 1 ? " on member " : " on members ");
    const size_t named = std::min<size_t>(members.size(), 8);
    for (size_t i = 0; i < named; ++i)
      text += (i == 0 ? "" : i + 1 == members.size() ? " and " : ", ") + std::to_string(members[i]);
    if (members.size() > named) text += " and " + std::to_string(members.size() - named) + " more";
  }
  return text;
}

const char* field_name(Word field) {
  switch (field) {
    case kCollective: return "the collective called";
    case kVariant: return "blocking or non-blocking";
    case kCount: return "count";
    case kDType: return "dtype";
    case kOp: return "reduction";
    case kRoot: return "root";
    case kInPlace: return "whether they run in place";
    case kBuffers: return "the kind of buffers";
    default: return "the algorithm asked for";
  }
}

}  // namespace

const char* name_of(CollectiveKind collective) {
  switch (collective) {
    case CollectiveKind::kAllreduce: return "allreduce";
    case CollectiveKind::kAllgather: return "allgather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kBarrier: return "barrier";
  }
  return "an unknown collective";
}

ArgumentCheck::ArgumentCheck() : enabled_(env::check_args()) {}

void ArgumentCheck::agree(MPI_Comm comm, transport::Context& context) {
  const int mine = enabled_ ? 1 : 0;
  int any = 0;
  MPI_Request request;
  transport::check_mpi(MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm, &request),
                       "MPI_Iallreduce");
  context.mpi_wait(request, "Communicator::from_mpi (agreeing whether to check arguments)");
  if (any != 0 && !enabled_)
    log::info("RANKFLOW_CHECK_ARGS is on for another member: this member compares arguments too");
  enabled_ = any != 0;
}

void ArgumentCheck::compare(MPI_Comm comm, transport::Context& context,
                            const CallArguments& mine) const {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const Words local = encode(mine);
  std::vector<Words> all(static_cast<size_t>(size));
  MPI_Request request;
  transport::check_mpi(MPI_Iallgather(local.data(), kWords, MPI_UINT64_T, all.data(), kWords,
                                      MPI_UINT64_T, comm, &request),
                       "MPI_Iallgather(argument check)");
  context.mpi_wait(request, "argument check (member " + std::to_string(rank) + " of " +
                                std::to_string(size) +
                                " waited for every member's arguments; RANKFLOW_CHECK_ARGS)");
  for (Word field :
       {kCollective, kVariant, kCount, kDType, kOp, kRoot, kName, kInPlace, kBuffers}) {
    const bool differs = std::any_of(all.begin(), all.end(), [&](const Words& w) {
      return !same(field, w.data(), all.front().data());
    });
    if (!differs) continue;
    throw InvalidArgument(std::string(collective_name(local[kCollective])) +
                          ": the members' calls differ in " + field_name(field) +
                          ", so none of them ran it (RANKFLOW_CHECK_ARGS=on compared them): " +
                          who_passed_what(field, all));
  }
}

}  // namespace rankflow::api
