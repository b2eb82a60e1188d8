/* The host-driven runtime's storage of spilled tensors: device memory the host set aside, one region per id.
 *
 * mn_storage_memory has the storage function's signature (mn_storage_fn); the host fills `mn_storage_table` with
 * (id, base address, bytes) triples, one per Spill victim, and `mn_storage_count`, before any task runs. An
 * unknown id or a range beyond the region returns non-zero, which stops the calling kernel. */
#include "mn_kernels.h"

const mn_word *mn_storage_table; /* (id, base, bytes) per object; set by the host */
mn_word mn_storage_count;

int mn_storage_memory(uint32_t id, uint32_t offset, void *buf, uint32_t n, uint32_t write) {
    for (mn_word i = 0; i < mn_storage_count; i++) {
        const mn_word *e = mn_storage_table + 3 * i;
        if (e[0] != id) continue;
        if (offset > e[2] || n > e[2] - offset) return 2;
        uint8_t *at = (uint8_t *)e[1] + offset;
        if (write) memcpy(at, buf, n);
        else memcpy(buf, at, n);
        return 0;
    }
    return 1;
}
