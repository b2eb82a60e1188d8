/* Spill (TinySeg): the victim's bytes go to storage under its id, in one write. A failed write stops here; the
 * Fetch that later reads the id then fails in turn (the storage function knows what went wrong). */
#include "mn_kernels.h"

enum { STORAGE, ID, SRC, NBYTES };

void mn_spill(const mn_word *args) {
    mn_storage_fn storage = MN_STORAGE(STORAGE);
    (void)storage((uint32_t)args[ID], 0, MN_P(void, SRC), (uint32_t)args[NBYTES], 1);
}
