/*
 * fuzz_msccl.c - libFuzzer harness for the MSCCL XML importer
 * (synth/msccl): parse, check, lay out and verify arbitrary bytes.
 *
 *   clang -fsanitize=fuzzer,address,undefined -Iruntime -Isynth/msccl ... \
 *       tests/fuzz/fuzz_msccl.c build/lib/libccsynth.a build/lib/libccs.a \
 *       $(pkg-config --libs libxml-2.0 igraph yaml-0.1) -lglpk -lm
 *   ./fuzz_msccl -max_len=65536 corpus/   (seed: the XML files of ../shared/msccl)
 *
 * msccl_fuzz_one never fails; crashes, leaks and sanitizer reports are
 * the findings.
 */
#include <stddef.h>
#include <stdint.h>

#include "msccl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return msccl_fuzz_one(data, size);
}
