/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of .ccs files.
 *
 * Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF
 * (the iSCSI / ext4 / SSE4.2 variant).  Check value: "123456789" gives
 * 0xE3069283.  The SSE4.2 crc32 instruction where the CPU has it, else
 * slicing-by-8: every rank reads a whole plan file through this, and plans
 * of large rings are hundreds of MB.
 */
#ifndef CCS_CRC32C_H
#define CCS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes.  Incremental: pass 0 for the first piece and the
 * previous result for the next; the result of the last call is the CRC of
 * the concatenation.  buf may be NULL when len is 0. */
uint32_t ccs_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable slicing-by-8 path alone (tests, benchmarks), and whether
 * this CPU takes the hardware path (1) or not (0). */
uint32_t ccs_crc32c_sw(uint32_t crc, const void *buf, size_t len);
int ccs_crc32c_hw_available(void);

#endif /* CCS_CRC32C_H */
