/* PLACEHOLDER: replaced by the real subcommand. */
#include "cli.h"
#include "commands.h"

int cmd_trees(int argc, char **argv)
{
    (void)argc; (void)argv;
    return cli_fail("trees", CLI_EXIT_INTERNAL, "not built yet");
}
