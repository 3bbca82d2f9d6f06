/* topo_init.h - process-wide set-up of the graph library, for main() only.
 *
 * Replaces igraph's abort-on-error handler with one that returns the error
 * code to the caller (every igraph call's return is checked in topo.c).
 * Tests call it too, once, at their start. */
#ifndef CCS_TOPO_INIT_H
#define CCS_TOPO_INIT_H

void topo_global_init(void);

#endif /* CCS_TOPO_INIT_H */
