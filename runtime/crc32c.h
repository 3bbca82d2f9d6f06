/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of .ccs files.
 *
 * Reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF
 * (the iSCSI / ext4 / SSE4.2 variant).  Check value: "123456789" gives
 * 0xE3069283.  SSE4.2's crc32 instruction where the CPU has it (plans
 * of hundreds of MB load at disk speed), a byte table otherwise.
 */
#ifndef CCS_CRC32C_H
#define CCS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes.  Incremental: pass 0 for the first piece and the
 * previous result for the next; the result of the last call is the CRC of
 * the concatenation.  buf may be NULL when len is 0. */
uint32_t ccs_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same with the table only: the reference the fast path is tested
 * against. */
uint32_t ccs_crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif /* CCS_CRC32C_H */
