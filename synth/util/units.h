/*
 * units.h - parse and print numbers with units (sizes, times, bandwidths).
 *
 * The bottom of synth/: no other synth module is included here, so every
 * layer (topology loaders, simulator inputs, options) can use it.
 */
#ifndef CCS_UNITS_H
#define CCS_UNITS_H

#include <stdbool.h>
#include <stddef.h>

/* Parse numbers with suffixes; false on junk or overflow.
 * Sizes: "4G", "64M", "1K", "1000", "1.5G" (binary: K = 1024).
 * Times: "3us", "1.5ms", "2s", "150ns", plain numbers are seconds.
 * Bandwidth: "450GB/s", "100Gb/s" (bits), "16GBps", plain bytes/s. */
bool units_parse_size(const char *s, double *bytes);
bool units_parse_time(const char *s, double *seconds);
/* As units_parse_time, but the unit is required (zero may go without):
 * for command-line options, where a bare "20" is more likely to mean
 * milliseconds or microseconds than seconds.  YAML topologies and arrivals
 * files keep plain seconds (docs/topology.md). */
bool units_parse_time_strict(const char *s, double *seconds);
bool units_parse_bw(const char *s, double *bytes_per_s);
bool units_parse_int(const char *s, long lo, long hi, long *out);
bool units_parse_double(const char *s, double *out);

/* Format helpers for reports: "4 GiB" / "4.00 GB/s" style. */
void units_format_size(double bytes, char *buf, size_t len);

#endif /* CCS_UNITS_H */
