// TaskPool (see task_pool.h).
#include "runtime/task_pool.h"

#include <new>

namespace rankflow::runtime {

// The free states and control blocks, behind one lock.
struct TaskPool::Store {
  static constexpr size_t kBlockBytes = 128;  // a shared_ptr control block fits
  static constexpr size_t kKeep = 4096;       // free states kept (a larger run frees the rest)
  std::mutex mutex;
  std::vector<TaskState*> states;
  std::vector<void*> blocks;
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

}  // namespace

// The control blocks' allocator: fixed-size blocks from the store.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  std::shared_ptr<TaskPool::Store> store;
  explicit PoolAllocator(std::shared_ptr<TaskPool::Store> s) : store(std::move(s)) {}
  template <typename U>
  PoolAllocator(const PoolAllocator<U>& other) : store(other.store) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    static_assert(sizeof(T) <= TaskPool::Store::kBlockBytes);
    if (n == 1) {
      std::lock_guard lock(store->mutex);
      if (!store->blocks.empty()) {
        void* b = store->blocks.back();
        store->blocks.pop_back();
        return static_cast<T*>(b);
      }
    }
    return static_cast<T*>(::operator new(std::max(n * sizeof(T), TaskPool::Store::kBlockBytes)));
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    {
      std::lock_guard lock(store->mutex);
      if (store->blocks.size() < TaskPool::Store::kKeep) return store->blocks.push_back(p);
    }
    ::operator delete(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>& other) const {
    return store == other.store;
  }
};

TaskPool::TaskPool() : store_(std::make_shared<Store>()) {}

std::shared_ptr<TaskState> TaskPool::make() {
  TaskState* state = nullptr;
  {
    std::lock_guard lock(store_->mutex);
    if (!store_->states.empty()) {
      state = store_->states.back();
      store_->states.pop_back();
    }
  }
  if (state == nullptr) state = new TaskState;
  auto recycle = [store = store_](TaskState* t) {
    reset(*t);
    {
      std::lock_guard lock(store->mutex);
      if (store->states.size() < Store::kKeep) return store->states.push_back(t);
    }
    delete t;
  };
  return std::shared_ptr<TaskState>(state, std::move(recycle), PoolAllocator<TaskState>(store_));
}

}  // namespace rankflow::runtime
