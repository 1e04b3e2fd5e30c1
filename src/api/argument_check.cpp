// ArgumentCheck (see argument_check.h): the members' comparison of a collective's arguments.
// Runs on the thread that calls the communicator.
#include "api/argument_check.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/log.h"
#include "rankflow/error.h"
#include "transport/mpi_session.h"

namespace rankflow::api {
namespace {

using Words = ArgumentCheck::Words;

// What one member passed, as the words every member gathers: one word a field, then the
// algorithm's name (up to kNameWords * 8 bytes of it) and its length.
constexpr size_t kNameWords = 3;
enum Word : size_t { kCollective, kVariant, kCount, kDType, kOp, kRoot, kInPlace, kBuffers, kName };
constexpr size_t kNameLength = kName + kNameWords;
static_assert(ArgumentCheck::kWords == kNameLength + 1);

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
  if (!a.algorithm.empty())  // an empty view's data() may be null, which memcpy must not get
    std::memcpy(&w[kName], a.algorithm.data(), std::min(a.algorithm.size(), kNameWords * 8));
  w[kNameLength] = a.algorithm.size();
  return w;
}

const char* collective_name(uint64_t kind) {
  return kind <= static_cast<uint64_t>(CollectiveKind::kBarrier)
             ? name_of(static_cast<CollectiveKind>(kind))
             : "an unknown collective";
}

int64_t signed_word(const Words& w, Word field) {
  return static_cast<int64_t>(w[field]);
}

std::string describe_collective(const Words& w) {
  return collective_name(w[kCollective]);
}
std::string describe_variant(const Words& w) {
  return w[kVariant] ? "a blocking call" : "a non-blocking call";
}
std::string describe_count(const Words& w) {
  return "count " + std::to_string(w[kCount]);
}
std::string describe_dtype(const Words& w) {
  const int64_t v = signed_word(w, kDType);
  if (v >= 0 && v <= static_cast<int64_t>(DType::kU64))
    return "dtype " + std::string(to_string(static_cast<DType>(v)));
  return "dtype " + std::to_string(v);
}
std::string describe_op(const Words& w) {
  const int64_t v = signed_word(w, kOp);
  if (v >= 0 && v <= static_cast<int64_t>(ReduceOp::kMax))
    return "op " + std::string(to_string(static_cast<ReduceOp>(v)));
  return "op " + std::to_string(v);
}
std::string describe_root(const Words& w) {
  return "root " + std::to_string(signed_word(w, kRoot));
}
std::string describe_algorithm(const Words& w) {
  const size_t length = w[kNameLength];
  const std::string name(reinterpret_cast<const char*>(&w[kName]),
                         std::min(length, kNameWords * 8));
  return "algorithm '" + name + (length > kNameWords * 8 ? "...'" : "'");
}
std::string describe_in_place(const Words& w) {
  return w[kInPlace] ? "in place" : "out of place";
}
std::string describe_buffers(const Words& w) {
  static const char* const kinds[] = {"plain buffers", "symmetric buffers (Communicator::alloc)",
                                      "registered buffers"};
  return w[kBuffers] < std::size(kinds) ? kinds[w[kBuffers]] : "unknown buffers";
}

// The compared arguments, in the order they are compared: the words each covers, what the
// message calls it, and how it names one member's value.
struct Field {
  size_t first, last;  // words [first, last]
  const char* name;
  std::string (*describe)(const Words&);
};
constexpr Field kFields[] = {
    {kCollective, kCollective, "the collective called", describe_collective},
    {kVariant, kVariant, "blocking or non-blocking", describe_variant},
    {kCount, kCount, "count", describe_count},
    {kDType, kDType, "dtype", describe_dtype},
    {kOp, kOp, "reduction", describe_op},
    {kRoot, kRoot, "root", describe_root},
    {kName, kNameLength, "the algorithm asked for", describe_algorithm},
    {kInPlace, kInPlace, "whether they run in place", describe_in_place},
    {kBuffers, kBuffers, "the kind of buffers", describe_buffers},
};

bool same(const Field& f, const Words& a, const Words& b) {
  return std::equal(a.begin() + f.first, a.begin() + f.last + 1, b.begin() + f.first);
}

// "count 4 on members 0 and 2, count 8 on member 1": each distinct value with the members that
// passed it (at most eight members named a value, then how many more).
std::string who_passed_what(const Field& f, const std::vector<Words>& all) {
  std::vector<std::pair<const Words*, std::vector<int>>> values;
  for (int m = 0; m < static_cast<int>(all.size()); ++m) {
    const Words& w = all[static_cast<size_t>(m)];
    auto it = std::find_if(values.begin(), values.end(),
                           [&](const auto& v) { return same(f, *v.first, w); });
    if (it == values.end())
      values.push_back({&w, {m}});
    else
      it->second.push_back(m);
  }
  std::string text;
  for (const auto& [w, members] : values) {
    text += (text.empty() ? "" : ", ") + f.describe(*w) +
            (members.size() == 1 ? " on member " : " on members ");
    const size_t named = std::min<size_t>(members.size(), 8);
    for (size_t i = 0; i < named; ++i)
      text += (i == 0 ? "" : i + 1 == members.size() ? " and " : ", ") + std::to_string(members[i]);
    if (members.size() > named) text += " and " + std::to_string(members.size() - named) + " more";
  }
  return text;
}

// The same text on every member: the collective's name where all called the same one.
[[noreturn]] void throw_difference(const Field& f, const std::vector<Words>& all) {
  const std::string call = &f == &kFields[0] ? "collectives" : describe_collective(all.front());
  throw InvalidArgument(call + ": the members' calls differ in " + f.name +
                        ", so none of them ran it (RANKFLOW_CHECK_ARGS=on compared them): " +
                        who_passed_what(f, all));
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

size_t bytes_or_zero(uint64_t count, int dtype, size_t blocks) {
  if (dtype < 0 || dtype > static_cast<int>(DType::kU64)) return 0;
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, dtype_size(static_cast<DType>(dtype)), &bytes) ||
      __builtin_mul_overflow(bytes, blocks, &bytes))
    return 0;
  return bytes;
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
  if (!enabled_) return;
  transport::check_mpi(MPI_Comm_idup(comm, &comm_, &request), "MPI_Comm_idup");
  context.mpi_wait(request, "Communicator::from_mpi (the argument check's communicator)");
  int rank = 0, size = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  exchange_ = std::make_unique<Exchange>();
  exchange_->all.resize(static_cast<size_t>(size));
  waiting_ = "argument check (member " + std::to_string(rank) + " of " + std::to_string(size) +
             " waited for every member's arguments; RANKFLOW_CHECK_ARGS)";
}

void ArgumentCheck::compare(transport::Context& context, const CallArguments& mine) {
  if (!exchange_) {
    throw InvalidState(std::string(name_of(mine.collective)) +
                       ": an earlier argument check on this communicator did not complete (a "
                       "member did not arrive), so its members are out of step: close it and "
                       "make a new one");
  }
  // Until the wait completes, the request may still read `mine` and write `all` (a late
  // member's arguments): where it does not, the block is left to MPI (released, never freed).
  std::unique_ptr<Exchange> pending = std::move(exchange_);
  Exchange& x = *pending;
  x.mine = encode(mine);
  transport::check_mpi(MPI_Iallgather(x.mine.data(), kWords, MPI_UINT64_T, x.all.data(), kWords,
                                      MPI_UINT64_T, comm_, &x.request),
                       "MPI_Iallgather(argument check)");
  try {
    context.mpi_wait(x.request, waiting_);
  } catch (...) {
    (void)pending.release();  // exchange_ stays null: every later call is InvalidState
    throw;
  }
  exchange_ = std::move(pending);
  for (const Field& f : kFields) {
    const bool differs = std::any_of(x.all.begin(), x.all.end(),
                                     [&](const Words& w) { return !same(f, w, x.all[0]); });
    if (differs) throw_difference(f, x.all);
  }
}

void ArgumentCheck::close() {
  if (comm_ != MPI_COMM_NULL && exchange_) MPI_Comm_free(&comm_);
}

}  // namespace rankflow::api
