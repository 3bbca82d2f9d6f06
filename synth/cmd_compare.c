/* PLACEHOLDER: replaced by the real subcommand. */
#include "cli.h"
#include "commands.h"

int cmd_compare(int argc, char **argv)
{
    (void)argc; (void)argv;
    return cli_fail("compare", CLI_EXIT_INTERNAL, "not built yet");
}
