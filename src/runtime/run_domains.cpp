// RunDomains (see run_domains.h).
#include "runtime/run_domains.h"

#include <algorithm>
#include <cstring>

#include "rankflow/error.h"
#include "rankflow/team.h"
#include "runtime/tensor_access.h"
#include "transport/team_layout.h"

namespace rankflow::runtime {

std::shared_ptr<DomainState> RunDomains::allocate(std::string name, std::vector<int> workers,
                                                  size_t window_bytes,
                                                  std::vector<BufferSpec> buffers,
                                                  std::vector<std::byte>& payload) {
  DomainDesc desc = describe_domain(name, workers, window_bytes, buffers, chips_);
  if (next_id_ > kMaxDomainId) {
    throw InvalidState("allocate_domain('" + name + "'): this worker has allocated " +
                       std::to_string(kMaxDomainId) + " domains, the most one worker can");
  }
  if (submitted_) {
    throw InvalidState("allocate_domain('" + name +
                       "'): domains come before the run's first submit (chips build them "
                       "ahead of every task)");
  }
  for (const auto& live : domains_) {
    if (!live->released && live->run == run_ && live->name == name) {
      throw InvalidArgument("allocate_domain('" + name + "'): a domain of that name is live");
    }
  }
  auto domain = std::make_shared<DomainState>();
  desc.id = next_id_++;
  domain->id = desc.id;
  domain->run = run_;
  domain->name = std::move(name);
  domain->window_bytes = window_bytes;
  domain->buffers = buffers;
  transport::TeamLayout layout(domain_team_buffers(buffers, window_bytes),
                               Team::kDefaultSignalSlots);
  for (const BufferSpec& b : buffers)
    domain->buffer_offsets.push_back(layout.find(b.name).offset);
  domain->workers = std::move(workers);
  payload.resize(sizeof(DomainDesc));
  std::memcpy(payload.data(), &desc, sizeof(DomainDesc));
  domains_.push_back(domain);
  return domain;
}

// A domain buffer's Tensor on `worker` (-1: a sub task): its domain is live in the run being
// built and `worker` is the member whose copy it names.
void RunDomains::check_buffer_use(const Tensor& t, std::string_view task, size_t position,
                                  int worker, std::vector<uint64_t>& after) const {
  const uint32_t id = domain_of_buffer(detail::TensorAccess::buffer(t));
  const std::string which =
      "task '" + std::string(task) + "': argument " + std::to_string(position);
  const auto it =
      std::find_if(domains_.begin(), domains_.end(), [&](const auto& d) { return d->id == id; });
  if (it == domains_.end() || (*it)->released || (*it)->run != run_) {
    throw InvalidArgument(which +
                          " is a buffer of a domain that was released (a domain and its buffers "
                          "live for the run that allocated it)");
  }
  const DomainState& domain = **it;
  if (worker != t.home()) {
    throw InvalidArgument(
        which + " is chip worker " + std::to_string(t.home()) + "'s buffer of domain '" +
        domain.name + "', but the task runs on " +
        (worker < 0 ? std::string("a host sub-worker") : "chip worker " + std::to_string(worker)) +
        "; copy it with copy_from, or name that worker's own buffer");
  }
  after.push_back(domain.creation_task);
}

void RunDomains::check_args(const std::vector<TaskArg>& args, std::string_view task, int worker,
                            std::vector<uint64_t>& after) const {
  size_t position = 0;
  for (const TaskArg& a : args) {
    if (a.kind == ArgKind::kScalar) continue;
    const size_t i = position++;
    if (a.kind == ArgKind::kTensor && is_domain_buffer(detail::TensorAccess::buffer(a.tensor))) {
      check_buffer_use(a.tensor, task, i, worker, after);
      continue;
    }
    if (a.kind != ArgKind::kDomain) continue;
    const auto& domain = DomainState::of(a.domain);
    if (!domain) {
      throw InvalidArgument("task '" + std::string(task) + "': argument " + std::to_string(i) +
                            " is an empty Domain handle");
    }
    const std::string which = "task '" + std::string(task) + "': argument " + std::to_string(i) +
                              " (domain '" + domain->name + "')";
    if (domain->released || domain->run != run_) {
      throw InvalidState(which + " was released; a domain lives for the run that allocated it");
    }
    if (worker < 0) throw InvalidArgument(which + ": the host is not a member; use a chip task");
    if (std::find(domain->workers.begin(), domain->workers.end(), worker) ==
        domain->workers.end()) {
      throw InvalidArgument(which + ": chip worker " + std::to_string(worker) + " is not a member");
    }
    after.push_back(domain->creation_task);
  }
}

std::map<std::string, Domain> RunDomains::live() const {
  std::map<std::string, Domain> live;
  for (const auto& domain : domains_) {
    if (!domain->released && domain->run == run_) {
      live.emplace(domain->name, DomainState::handle(domain));
    }
  }
  return live;
}

void RunDomains::end_run(uint64_t run) {
  std::erase_if(domains_, [&](const auto& domain) {
    if (domain->run != run) return false;
    domain->released = true;
    return true;
  });
}

}  // namespace rankflow::runtime
