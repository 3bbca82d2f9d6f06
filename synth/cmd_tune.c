/* PLACEHOLDER: replaced by the real subcommand. */
#include "cli.h"
#include "commands.h"

int cmd_tune(int argc, char **argv)
{
    (void)argc; (void)argv;
    return cli_fail("tune", CLI_EXIT_INTERNAL, "not built yet");
}
