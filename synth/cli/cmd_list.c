/* cmd_list.c - `ccsynth list`: algorithms and built-in topologies. */
#include <string.h>

#include "algo.h"
#include "cli.h"
#include "options.h"

static void list_usage(FILE *f)
{
    fprintf(f, "usage: ccsynth list\n\nList the algorithms (with the "
            "collectives each implements) and the built-in topologies.\n");
}

int cmd_list(int argc, char **argv)
{
    static const opt_id_t ids[] = { OPT_QUIET, OPT_END };
    static const opt_cmd_t spec = { "list", ids, list_usage, 0 };
    cli_opts_t co;
    int rc = opt_parse(&spec, argc, argv, &co);

    if (rc != CLI_EXIT_OK || co.help)
        return rc;
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
