/* cmd_list.c - `ccsynth list`: algorithms and built-in topologies. */
#include <string.h>

#include "algo.h"
#include "cli.h"

int cmd_list(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
                     strcmp(argv[1], "-h") == 0)) {
        printf("usage: ccsynth list\n\nList the algorithms (with the "
               "collectives each implements) and the built-in topologies.\n");
        return CLI_EXIT_OK;
    }
    if (argc > 1)
        return cli_fail("list", CLI_EXIT_USAGE, "unexpected argument '%s'",
                        argv[1]);
    printf("algorithms:\n");
    for (int i = 0; i < algo_count(); i++) {
        const algo_desc_t *a = algo_at(i);
        char colls[128] = "";
        for (int c = 0; c < CCS_COLL_COUNT; c++) {
            if (a->colls & ALGO_COLL_BIT(c)) {
                if (colls[0] != '\0')
                    strncat(colls, ",", sizeof(colls) - strlen(colls) - 1);
                strncat(colls, ccs_coll_str((ccs_coll_t)c),
                        sizeof(colls) - strlen(colls) - 1);
            }
        }
        printf("  %-10s %s\n  %-10s [%s]\n", a->name, a->desc, "", colls);
    }
    printf("\nbuilt-in topologies:\n");
    topo_list_builtins(stdout);
    return CLI_EXIT_OK;
}
