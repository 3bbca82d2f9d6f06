/* commands.h - one entry point per subcommand (cmd_<name>.c). */
#ifndef CCS_COMMANDS_H
#define CCS_COMMANDS_H

int cmd_synth(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_matching(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_trees(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);

#endif /* CCS_COMMANDS_H */
