/*
 * mem_hint.h - a hint for the loader's large blocks (the file's buffer,
 * the plan's tables): ask the kernel for huge pages, so that a 400 MB plan
 * takes a few hundred page faults instead of a hundred thousand.  Only a
 * hint: where madvise or huge pages are missing nothing changes.
 */
#ifndef CCS_MEM_HINT_H
#define CCS_MEM_HINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define CCS_HUGE_MIN ((size_t)8 << 20)   /* smaller blocks: not worth it */

static inline void ccs_hint_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(huge - 1);

    if (p != NULL && n >= CCS_HUGE_MIN && hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

#endif /* CCS_MEM_HINT_H */
