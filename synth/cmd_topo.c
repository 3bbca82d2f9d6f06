/* PLACEHOLDER: replaced by the real subcommand. */
#include "cli.h"
#include "commands.h"

int cmd_topo(int argc, char **argv)
{
    (void)argc; (void)argv;
    return cli_fail("topo", CLI_EXIT_INTERNAL, "not built yet");
}
