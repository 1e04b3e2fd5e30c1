// SignalKind (see signal_kind.h): the registry of kinds and their indices.
#include "collectives/signal_kind.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace rankflow::coll {

struct SignalKindRegistry {
  std::mutex mutex;
  std::vector<SignalKind*> kinds;
  bool numbered = false;

  static SignalKindRegistry& get() {
    static SignalKindRegistry instance;  // made on first use, so kinds in any file may register
    return instance;
  }
  // Numbers every kind by the order of the names (the same in every process that links the
  // same algorithms); names must be unique. Called with the mutex held.
  void number() {
    if (numbered) return;
    std::sort(kinds.begin(), kinds.end(), [](const SignalKind* a, const SignalKind* b) {
      return std::strcmp(a->name(), b->name()) < 0;
    });
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (i > 0 && std::strcmp(kinds[i - 1]->name(), kinds[i]->name()) == 0)
        throw std::logic_error(std::string("two signal kinds are named ") + kinds[i]->name());
      kinds[i]->index_.store(static_cast<uint32_t>(i), std::memory_order_release);
    }
    numbered = true;
  }
};

SignalKind::SignalKind(const char* name) : name_(name) {
  SignalKindRegistry& r = SignalKindRegistry::get();
  std::lock_guard lock(r.mutex);
  if (r.numbered) throw std::logic_error(std::string("signal kind ") + name + " made too late");
  r.kinds.push_back(this);
}

uint32_t SignalKind::index() const {
  const uint32_t index = index_.load(std::memory_order_acquire);
  if (index != UINT32_MAX) return index;
  count();  // numbers every kind
  return index_.load(std::memory_order_acquire);
}

uint32_t SignalKind::count() {
  SignalKindRegistry& r = SignalKindRegistry::get();
  std::lock_guard lock(r.mutex);
  r.number();
  return static_cast<uint32_t>(r.kinds.size());
}

const SignalKind kReady("mesh.ready");
const SignalKind kReady2("mesh.ready2");
const SignalKind kDone("mesh.done");

}  // namespace rankflow::coll
