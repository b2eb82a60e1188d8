/* Spill (TinySeg): the victim's bytes go to storage under its id, in one write. A failed write leaves the storage
 * function's code in mn_status, so the caller stops the invoke before a Fetch reads what was never stored. */
#include "mn_kernels.h"

enum { STORAGE, ID, SRC, NBYTES };

/* The error channel of the kernels that reach storage: the first failing call's code, read and cleared by the
 * caller (the generated model_invoke, the host-driven runtime). Weak: every such kernel defines it. */
__attribute__((weak)) int32_t mn_status;

void mn_spill(const mn_word *args) {
    mn_storage_fn storage = MN_STORAGE(STORAGE);
    const int r = storage((uint32_t)args[ID], 0, MN_P(void, SRC), (uint32_t)args[NBYTES], 1);
    if (r != 0) mn_status = r;
}
