// AlgorithmChoice: how a communicator picks each collective's algorithm: the environment's
// override rules (RANKFLOW_ALLREDUCE and the others), the machine profile its members agreed on
// (collectives/machine_profile.h), the tables (collectives/registry.h), and a memo of the choices
// made (collectives/choice_memo.h). One per communicator: the environment is read when it is made
// (a bad value fails before anything collective), and the members agree on the profile in
// agree(), collectively. Threads: the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include "collectives/choice_memo.h"
#include "collectives/machine_profile.h"
#include "collectives/registry.h"
#include "common/log.h"
#include "transport/context.h"

namespace rankflow::api {

class AlgorithmChoice {
 public:
  AlgorithmChoice()
      : overrides_(coll::overrides_from_environment()),
        local_profile_(coll::profile_from_environment()) {}

  // Collective over `comm`: every member takes the profile all of them chose, or none where
  // they differ (members on different kinds of machine, or RANKFLOW_MACHINE set on some only).
  void agree(MPI_Comm comm, transport::Context& context);

  // The algorithm of `table` for a message of `bytes` (registry.h: the table's override rules
  // first, then the machine profile's measured rules, then the table's), logged at debug level.
  // Everything the choice depends on is in the memo's key or fixed when the communicator is made
  // (its member count, the override rules and the profile, both looked up here by table).
  template <typename Args>
  const coll::Algorithm<Args>& select(const coll::AlgorithmTable<Args>& table, size_t bytes,
                                      int members, bool has_inbox, coll::Buffers buffers,
                                      bool open_mpi) const {
    const auto& forced = coll::rules_for(overrides_, table);
    auto choose = [&]() -> const coll::Algorithm<Args>& {
      return table.choose(bytes, members, has_inbox, forced, buffers, open_mpi,
                          coll::rules_for(machine_, table));
    };
    if (log_choices_) {
      const auto& chosen = choose();
      table.log_choice(bytes, members, forced, chosen);
      return remember(chosen);
    }
    return remember(memo_.find_or_choose(table, bytes, buffers, open_mpi, has_inbox, choose));
  }
  // Keeps `chosen` as the latest choice (last_chosen) and returns it; also for algorithms the
  // caller names itself.
  template <typename Algorithm>
  const Algorithm& remember(const Algorithm& chosen) const {
    last_chosen_ = chosen.label;
    return chosen;
  }
  // The label of the algorithm chosen last ("broadcast(pushed)"), for benchmarks; "" before any.
  const char* last_chosen() const { return last_chosen_; }

  const coll::Overrides& overrides() const { return overrides_; }
  const coll::MachineRules& machine() const { return machine_; }

 private:
  coll::Overrides overrides_;
  const coll::MachineProfile* local_profile_;  // this member's, before agree()
  coll::MachineRules machine_;                 // the agreed profile's
  mutable coll::ChoiceMemo memo_;              // what select() chose, by table, size and buffers
  bool log_choices_ = log::enabled(env::LogLevel::kDebug);
  mutable const char* last_chosen_ = "";
};

}  // namespace rankflow::api
