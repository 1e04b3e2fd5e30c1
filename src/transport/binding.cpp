// Core binding (see binding.h). Main thread, once per process.
#include "transport/binding.h"

#include <hwloc.h>

#include <memory>

#include "rankflow/error.h"

namespace rankflow::transport {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

Topology load_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw TransportError("hwloc_topology_init failed");
  Topology topology(raw);
  if (hwloc_topology_load(raw) != 0) throw TransportError("hwloc_topology_load failed");
  return topology;
}

std::string describe_cpuset(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set);
  std::string result = text ? text : "?";
  free(text);
  return result;
}

// The core whose PUs contain the whole binding, or null when the binding spans several cores.
hwloc_obj_t single_core_covering(hwloc_topology_t topology, hwloc_const_bitmap_t binding) {
  const int cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  for (int i = 0; i < cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, i);
    if (hwloc_bitmap_isincluded(binding, core->cpuset)) return core;
  }
  return nullptr;
}

}  // namespace

BindingResult bind_process(int node_local_rank, env::BindPolicy policy) {
  Topology topology = load_topology();
  Bitmap current(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(topology.get(), current.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    return {false, "binding unknown (hwloc_get_cpubind failed); left as is"};
  }
  if (hwloc_obj_t core = single_core_covering(topology.get(), current.get())) {
    return {false, "kept launcher binding: core " + std::to_string(core->logical_index) + " (PUs " +
                       describe_cpuset(current.get()) + ")"};
  }
  if (policy == env::BindPolicy::kNone) {
    return {false, "not bound (RANKFLOW_BIND=none), PUs " + describe_cpuset(current.get())};
  }
  // Round robin over the cores this process may use.
  const int cores =
      hwloc_get_nbobjs_inside_cpuset_by_type(topology.get(), current.get(), HWLOC_OBJ_CORE);
  if (cores <= 0) return {false, "no core found inside PUs " + describe_cpuset(current.get())};
  hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topology.get(), current.get(),
                                                         HWLOC_OBJ_CORE, node_local_rank % cores);
  if (hwloc_set_cpubind(topology.get(), core->cpuset, HWLOC_CPUBIND_PROCESS) != 0) {
    throw TransportError("hwloc_set_cpubind to core " + std::to_string(core->logical_index) +
                         " failed; set RANKFLOW_BIND=none to run unbound");
  }
  return {true, "bound to core " + std::to_string(core->logical_index) + " (PUs " +
                    describe_cpuset(core->cpuset) + ") by node-local rank " +
                    std::to_string(node_local_rank)};
}

int bound_core() {
  Topology topology = load_topology();
  Bitmap current(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(topology.get(), current.get(), HWLOC_CPUBIND_PROCESS) != 0) return -1;
  hwloc_obj_t core = single_core_covering(topology.get(), current.get());
  return core ? static_cast<int>(core->logical_index) : -1;
}

}  // namespace rankflow::transport
