// UserMemory (see user_memory.h): sharing the range's pages and registering it with UCX. Runs on
// the thread that uses the Context.
#include "transport/user_memory.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "transport/context.h"

namespace rankflow::transport {

UserMemory::UserMemory(ucp_context_h ucp, std::byte* base, size_t bytes, bool shared)
    : ucp_(ucp), base_(base), bytes_(bytes) {
  if (shared) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(base_) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(base_) + bytes_ + page - 1) & ~(page - 1);
    runs_ = SharedPageTable::instance().share(begin, end);
    return;
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base_;
  params.length = bytes_;
  const ucs_status_t status = ucp_mem_map(ucp_, &params, &memh_);
  if (status != UCS_OK) {
    memh_ = nullptr;
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(base_));
    check_ucs(status, "ucp_mem_map of " + std::to_string(bytes_) + " bytes at " + address);
  }
}

UserMemory::~UserMemory() {
  if (memh_ != nullptr) ucp_mem_unmap(ucp_, memh_);
  release_pages();
}

void UserMemory::release_pages() {
  if (runs_.empty()) return;
  SharedPageTable::instance().release(runs_.front().address,
                                      runs_.back().address + runs_.back().bytes);
  runs_.clear();
}

}  // namespace rankflow::transport
