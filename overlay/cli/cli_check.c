/* `ddpnet check -c CLUSTER`: validates a cluster file and prints `ok` or
 * every error with its line, so a person fixes them all in one round. */
#include <stdio.h>

#include "config/cluster.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"

int cli_check(int argc, char **argv)
{
    struct cluster c;
    struct cli_args a;
    int ret = cli_args_handle(argc, argv, CLI_OPT_CLUSTER, CLI_OPT_CLUSTER,
                              "-c CLUSTER", &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (cli_cluster_load(a.cluster, &c, stderr) != 0)
        return CLI_EXIT_FAIL;
    cluster_free(&c);
    puts("ok");
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
