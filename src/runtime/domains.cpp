// Communication domains (see domains.h): the host's validation and handles (main thread), and
// the members' construction and teardown on each chip (its main thread).
#include "runtime/domains.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "api/buffer_placement.h"
#include "api/communicator_internal.h"
#include "rankflow/error.h"
#include "rankflow/task_arg.h"
#include "runtime/tensor_access.h"
#include "transport/mpi_session.h"
#include "transport/team_layout.h"
#include "transport/team_state.h"

namespace rankflow {

namespace {
constexpr const char* kRestOfWindow = "rankflow.rest";
constexpr const char* kReservedPrefix = "rankflow.";  // kRestOfWindow, collective_buffers()
constexpr size_t kMaxAlignment = 4096;                // as TeamLayout allows

// A name as messages show it: a NUL would end the message where it stands.
std::string shown(const std::string& name) {
  std::string text;
  for (char c : name)
    text += c == '\0' ? std::string("\\0") : std::string(1, c);
  return text;
}
}  // namespace

const detail::DomainState& Domain::live(const char* operation) const {
  if (!state_) throw InvalidState(std::string("Domain::") + operation + ": an empty handle");
  if (state_->released) {
    throw InvalidState(std::string("Domain::") + operation + ": domain '" + state_->name +
                       "' was released (a domain lives for the run that allocated it)");
  }
  return *state_;
}

const std::string& Domain::name() const {
  return live("name").name;
}
const std::vector<int>& Domain::workers() const {
  return live("workers").workers;
}
int Domain::size() const {
  return static_cast<int>(live("size").workers.size());
}
size_t Domain::window_bytes() const {
  return live("window_bytes").window_bytes;
}
bool Domain::released() const {
  return !state_ || state_->released;
}
void Domain::release() {
  live("release");
  state_->released = true;
}

int Domain::rank_of(int worker) const {
  const auto& s = live("rank_of");
  for (size_t r = 0; r < s.workers.size(); ++r) {
    if (s.workers[r] == worker) return static_cast<int>(r);
  }
  throw InvalidArgument("domain '" + s.name + "': chip worker " + std::to_string(worker) +
                        " is not a member");
}

size_t Domain::buffer_offset(std::string_view buffer) const {
  const auto& s = live("buffer_offset");
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    if (s.buffers[i].name == buffer) return s.buffer_offsets[i];
  }
  throw InvalidArgument("domain '" + s.name + "' has no buffer '" + std::string(buffer) + "'");
}

Tensor Domain::buffer_tensor(std::string_view buffer, int worker, DType dtype) const {
  const auto& s = live("buffer_tensor");
  const int rank = rank_of(worker);
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    if (s.buffers[i].name != buffer) continue;
    const size_t bytes = s.buffers[i].bytes, element = dtype_size(dtype);
    if (bytes % element != 0) {
      throw InvalidArgument("Domain::buffer_tensor: buffer '" + std::string(buffer) + "' of " +
                            std::to_string(bytes) + " bytes does not hold whole " +
                            std::string(to_string(dtype)) + " elements");
    }
    const uint64_t id =
        runtime::domain_buffer_id(s.id, static_cast<uint32_t>(rank), static_cast<uint32_t>(i));
    return detail::TensorAccess::make(id, s.buffer_offsets[i], bytes, {bytes / element}, dtype,
                                      nullptr, worker);
  }
  throw InvalidArgument("Domain::buffer_tensor: domain '" + s.name + "' has no buffer '" +
                        std::string(buffer) + "'");
}

TaskArg domain_arg(const Domain& domain) {
  detail::DomainState::live(domain, "domain_arg");
  TaskArg arg;
  arg.kind = ArgKind::kDomain;
  arg.access = Access::kNoDep;
  arg.domain = domain;
  return arg;
}

namespace runtime {

std::vector<BufferSpec> domain_team_buffers(const std::vector<BufferSpec>& named,
                                            size_t window_bytes) {
  std::vector<BufferSpec> buffers = named;
  size_t end = 0;
  for (const BufferSpec& b : named)
    end = (end + b.alignment - 1) / b.alignment * b.alignment + b.bytes;
  if (end < window_bytes) buffers.push_back({kRestOfWindow, window_bytes - end, 1});
  return buffers;
}

DomainDesc describe_domain(const std::string& name, const std::vector<int>& workers,
                           size_t window_bytes, const std::vector<BufferSpec>& buffers, int chips) {
  const std::string what = "allocate_domain('" + shown(name) + "')";
  // Names travel as C strings (DomainDesc): one with a NUL would reach the members cut short.
  if (name.empty() || name.size() >= kMaxDomainName || name.find('\0') != std::string::npos) {
    throw InvalidArgument(what + ": a name of 1 to " + std::to_string(kMaxDomainName - 1) +
                          " characters, none of them NUL");
  }
  if (workers.empty() || workers.size() > kMaxDomainMembers) {
    throw InvalidArgument(what + ": needs 1 to " + std::to_string(kMaxDomainMembers) +
                          " workers, got " + std::to_string(workers.size()));
  }
  std::set<int> seen;
  for (int w : workers) {
    if (w < 0 || w >= chips) {
      throw InvalidArgument(what + ": worker " + std::to_string(w) +
                            " does not exist; chip workers are 0.." + std::to_string(chips - 1));
    }
    if (!seen.insert(w).second) {
      throw InvalidArgument(what + ": worker " + std::to_string(w) + " appears twice");
    }
  }
  if (window_bytes == 0) throw InvalidArgument(what + ": window_bytes must be positive");
  if (window_bytes > transport::TeamLayout::kMaxBufferBytes) {
    throw InvalidArgument(what + ": window_bytes " + std::to_string(window_bytes) +
                          " is more than a window holds (" +
                          std::to_string(transport::TeamLayout::kMaxBufferBytes) + ")");
  }
  if (buffers.size() > kMaxDomainBuffers) {
    throw InvalidArgument(what + ": at most " + std::to_string(kMaxDomainBuffers) + " buffers");
  }
  std::set<std::string> names;
  size_t end = 0;
  for (const BufferSpec& b : buffers) {
    if (b.name.empty() || b.name.size() >= kMaxDomainName ||
        b.name.find('\0') != std::string::npos) {
      throw InvalidArgument(what + ": buffer name '" + shown(b.name) + "' (1 to " +
                            std::to_string(kMaxDomainName - 1) + " characters, none of them NUL)");
    }
    if (b.name.starts_with(kReservedPrefix)) {  // the members add buffers of these names
      throw InvalidArgument(what + ": buffer name '" + b.name + "' is reserved (names starting '" +
                            kReservedPrefix + "' are rankflow's own)");
    }
    if (!names.insert(b.name).second) {
      throw InvalidArgument(what + ": buffer '" + b.name + "' appears twice");
    }
    if (b.alignment == 0 || (b.alignment & (b.alignment - 1)) != 0 || b.alignment > kMaxAlignment) {
      throw InvalidArgument(
          what + ": buffer '" + b.name + "' needs a power-of-two alignment up to " +
          std::to_string(kMaxAlignment) + " (got " + std::to_string(b.alignment) + ")");
    }
    if (b.bytes > transport::TeamLayout::kMaxBufferBytes) {  // (the sum below cannot overflow)
      throw InvalidArgument(what + ": buffer '" + b.name + "' needs " + std::to_string(b.bytes) +
                            " bytes, more than the window's " + std::to_string(window_bytes));
    }
    end = (end + b.alignment - 1) / b.alignment * b.alignment + b.bytes;
  }
  if (end > window_bytes) {
    throw InvalidArgument(what + ": the buffers need " + std::to_string(end) +
                          " bytes, more than the window's " + std::to_string(window_bytes));
  }
  DomainDesc desc{};
  desc.members = static_cast<uint32_t>(workers.size());
  for (size_t r = 0; r < workers.size(); ++r)
    desc.workers[r] = workers[r];
  desc.window_bytes = window_bytes;
  desc.buffers = static_cast<uint32_t>(buffers.size());
  std::memcpy(desc.name, name.c_str(), name.size() + 1);
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::memcpy(desc.buffer_names[i], buffers[i].name.c_str(), buffers[i].name.size() + 1);
    desc.buffer_bytes[i] = buffers[i].bytes;
    desc.buffer_alignment[i] = buffers[i].alignment;
  }
  return desc;
}

namespace {

// The buffers a DomainDesc names, as the host gave them to describe_domain.
std::vector<BufferSpec> named_buffers(const DomainDesc& desc) {
  std::vector<BufferSpec> named;
  for (uint32_t i = 0; i < desc.buffers; ++i) {
    named.push_back(
        {std::string(desc.buffer_names[i], strnlen(desc.buffer_names[i], kMaxDomainName)),
         desc.buffer_bytes[i], desc.buffer_alignment[i]});
  }
  return named;
}

}  // namespace

DomainDesc decode_domain_desc(std::span<const std::byte> payload, int chips, int chip) {
  if (payload.size() != sizeof(DomainDesc)) {
    throw TransportError("allocate_domain: a payload of " + std::to_string(payload.size()) +
                         " bytes, expected " + std::to_string(sizeof(DomainDesc)));
  }
  DomainDesc desc;
  std::memcpy(&desc, payload.data(), sizeof(DomainDesc));
  if (desc.members == 0 || desc.members > kMaxDomainMembers || desc.buffers > kMaxDomainBuffers) {
    throw TransportError("allocate_domain: a payload of " + std::to_string(desc.members) +
                         " members and " + std::to_string(desc.buffers) + " buffers");
  }
  desc.name[kMaxDomainName - 1] = '\0';
  // What the host checked before it sent the payload, then what every member's team would check
  // once the domain's communicator exists: refused here, before any member calls into MPI.
  const std::string name(desc.name);
  const std::vector<int> workers(desc.workers, desc.workers + desc.members);
  try {
    (void)describe_domain(name, workers, desc.window_bytes, named_buffers(desc), chips);
    transport::TeamLayout layout(plan_domain(desc).buffers, Team::kDefaultSignalSlots);
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    const std::string prefix = "rankflow " + std::string(to_string(e.code())) + ": ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    throw TransportError("malformed allocate_domain payload: " + what);
  }
  if (std::find(workers.begin(), workers.end(), chip) == workers.end()) {
    throw TransportError("allocate_domain('" + name + "'): chip worker " + std::to_string(chip) +
                         " is not a member");
  }
  return desc;
}

DomainPlan plan_domain(const DomainDesc& desc) {
  DomainPlan plan;
  plan.name.assign(desc.name, strnlen(desc.name, kMaxDomainName));
  plan.ranks.resize(desc.members);
  for (uint32_t r = 0; r < desc.members; ++r)
    plan.ranks[r] = desc.workers[r] + 1;  // chip worker w is world rank w + 1
  // The window is zeroed before its key reaches any member. After the buffers the host placed
  // (domain_team_buffers, so their offsets stay the host's), it holds what the communicator's
  // collectives need to run in place on them: their inbox and their own signals.
  plan.buffers = domain_team_buffers(named_buffers(desc), desc.window_bytes);
  plan.symmetric = plan.buffers.size();
  for (BufferSpec& extra : api::collective_buffers(static_cast<int>(desc.members)))
    plan.buffers.push_back(std::move(extra));
  return plan;
}

void ChipDomains::create(const std::shared_ptr<transport::Context>& context,
                         const DomainDesc& desc) {
  DomainPlan plan = plan_domain(desc);
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  transport::check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  transport::check_mpi(
      MPI_Group_incl(world, static_cast<int>(desc.members), plan.ranks.data(), &members),
      "MPI_Group_incl");
  MPI_Comm comm = MPI_COMM_NULL;
  // Collective over the members only; the tag keeps concurrent creations apart.
  const int status =
      MPI_Comm_create_group(MPI_COMM_WORLD, members, static_cast<int>(desc.id % 32768), &comm);
  MPI_Group_free(&members);
  MPI_Group_free(&world);
  transport::check_mpi(status, "MPI_Comm_create_group (a domain's communicator)");
  std::vector<BufferSpec>& buffers = plan.buffers;
  Team team = transport::create_team(context, comm, buffers, "domain '" + plan.name + "'");
  const BufferSpec& last = buffers[plan.symmetric - 1];
  Communicator communicator = api::communicator_over(comm, team, team.offset(buffers.front().name),
                                                     team.offset(last.name) + last.bytes);
  domains_[desc.id] =
      std::make_unique<DomainContext>(plan.name, comm, std::move(team), std::move(communicator));
}

DomainContext& ChipDomains::find(uint32_t id, int chip) const {
  auto it = domains_.find(id);
  if (it == domains_.end()) {
    throw InvalidState("chip worker " + std::to_string(chip) + " is not a member of domain " +
                       std::to_string(id) + " in this run");
  }
  return *it->second;
}

void ChipDomains::close_all() {
  for (auto& [id, domain] : domains_) {
    domain->communicator().close();
    domain->team().close();
    MPI_Comm comm = domain->mpi_comm();
    MPI_Comm_free(&comm);
  }
  domains_.clear();
}

}  // namespace runtime
}  // namespace rankflow
