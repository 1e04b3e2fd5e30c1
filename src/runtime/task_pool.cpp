// TaskPool (see task_pool.h).
#include "runtime/task_pool.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace rankflow::runtime {

// The free states and control blocks, behind one lock. `out` counts the states made and not yet
// back (each holds one control block); the store goes with the pool or, if states are still
// out then, with the last of them.
struct TaskPool::Store {
  static constexpr size_t kBlockBytes = 128;        // a shared_ptr control block fits
  static constexpr size_t kKeep = size_t{1} << 17;  // free states kept (beyond: freed)
  std::mutex mutex;
  std::vector<TaskState*> states;
  std::vector<void*> blocks;
  size_t out = 0;
  bool pool_gone = false;
  ~Store() {
    for (TaskState* s : states)
      delete s;
    for (void* b : blocks)
      ::operator delete(b);
  }
};

namespace {

void reset(TaskState& t) {
  t.id = 0;
  t.sub = false;
  t.fn = 0;
  t.name = {};
  t.workers.clear();
  t.release_args();  // one member's vector keeps its room for the next task
  if (t.member_args.size() > 1) t.member_args.resize(1);
  t.config = {};
  t.payload.reset();
  t.deps.clear();
  t.driver.reset();
  t.ready_sequence = 0;
  t.pending = 0;
  t.members = {};
  t.dependents.clear();
  t.stream.before.clear();
  t.stream.sequence = 0;
  t.status.store(TaskStatus::kWaiting, std::memory_order_relaxed);
  t.error.clear();
}

// The state's way back: reset outside the lock, then kept (or freed beyond kKeep).
struct Recycle {
  TaskPool::Store* store;
  void operator()(TaskState* t) const {
    reset(*t);
    {
      std::lock_guard lock(store->mutex);
      if (store->states.size() < TaskPool::Store::kKeep) return store->states.push_back(t);
    }
    delete t;
  }
};

}  // namespace

// The control blocks' allocator: the block make() took from the store under its one lock,
// returned to the store when the control block goes (the state's last trace: so this is
// where `out` drops, and where the store goes after the pool).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  TaskPool::Store* store;
  void* block = nullptr;  // taken by make(), handed out by the one allocate() of this block
  PoolAllocator(TaskPool::Store* s, void* b) : store(s), block(b) {}
  template <typename U>
  PoolAllocator(const PoolAllocator<U>& other)  // NOLINT: rebinding
      : store(other.store), block(other.block) {}
  T* allocate(size_t n) {
    static_assert(sizeof(T) <= TaskPool::Store::kBlockBytes);
    if (n == 1 && block != nullptr) return static_cast<T*>(std::exchange(block, nullptr));
    return static_cast<T*>(::operator new(std::max(n * sizeof(T), TaskPool::Store::kBlockBytes)));
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    bool last = false;
    {
      std::lock_guard lock(store->mutex);
      last = --store->out == 0 && store->pool_gone;
      if (!last && store->blocks.size() < TaskPool::Store::kKeep) {
        store->blocks.push_back(p);
        p = nullptr;
      }
    }
    ::operator delete(p);
    if (last) delete store;
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>& other) const {
    return store == other.store;
  }
};

TaskPool::TaskPool() : store_(new Store) {}

TaskPool::~TaskPool() {
  bool last = false;
  {
    std::lock_guard lock(store_->mutex);
    store_->pool_gone = true;
    last = store_->out == 0;
  }
  if (last) delete store_;
}

std::shared_ptr<TaskState> TaskPool::make() {
  TaskState* state = nullptr;
  void* block = nullptr;
  {
    std::lock_guard lock(store_->mutex);
    ++store_->out;
    if (!store_->states.empty()) {
      state = store_->states.back();
      store_->states.pop_back();
    }
    if (!store_->blocks.empty()) {
      block = store_->blocks.back();
      store_->blocks.pop_back();
    }
  }
  try {
    if (state == nullptr) state = new TaskState;
  } catch (...) {
    give_back(block);
    throw;
  }
  try {
    // The one allocate() of this control block takes `block` (a fresh one when it is null).
    return std::shared_ptr<TaskState>(state, Recycle{store_},
                                      PoolAllocator<TaskState>(store_, block));
  } catch (...) {  // only a fresh block's allocation throws; the deleter has recycled the state
    give_back(nullptr);
    throw;
  }
}

// Undoes make()'s count when it fails before a control block exists, keeping `block`.
void TaskPool::give_back(void* block) {
  std::lock_guard lock(store_->mutex);
  --store_->out;
  if (block != nullptr) store_->blocks.push_back(block);
}

}  // namespace rankflow::runtime
