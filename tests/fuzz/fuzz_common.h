/*
 * fuzz_common.h - helpers shared by the libFuzzer harnesses of tests/fuzz/.
 *
 * A harness is one file fuzz_<target>.c defining LLVMFuzzerTestOneInput
 * (and, if it needs set-up, LLVMFuzzerInitialize); its seed corpus is
 * tests/fuzz/corpus/<target>/.  `make fuzz` builds every fuzz_*.c with
 * clang -fsanitize=fuzzer,address,undefined and runs each for FUZZ_TIME
 * seconds (scripts/fuzz.sh); nothing else needs registering.
 */
#ifndef CCS_FUZZ_COMMON_H
#define CCS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The input as a NUL-terminated string (owned by the caller: free). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* For loaders that take a path: one temporary file per process,
 * rewritten with each input.  `suffix` picks the loader (".yaml"). */
static inline const char *fuzz_file(const uint8_t *data, size_t size,
                                    const char *suffix)
{
    static char path[64];
    FILE *f;

    if (path[0] == '\0') {
        int fd;
        snprintf(path, sizeof(path), "/tmp/ccs-fuzz-XXXXXX%s", suffix);
        fd = mkstemps(path, (int)strlen(suffix));
        if (fd < 0)
            abort();
        close(fd);
    }
    f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (size > 0 && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

#endif /* CCS_FUZZ_COMMON_H */
