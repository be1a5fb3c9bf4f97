/*
 * build/llmbox-sandboxd: the root daemon as an executable of its own.
 *
 *   llmbox-sandboxd [--socket PATH]      serve the sandbox RPC (root)
 *   llmbox-sandboxd image build|list ...  build or list sandbox images
 *   llmbox-sandboxd zygote               (internal: started by sandboxd, zygote.h)
 *
 * It is linked from server/sandboxd/, the frame and request code of
 * server/sandbox/ and the parts of server/common/ that need no HTTP,
 * archive, MIME, database or crypto library (Makefile: SD_OBJ), so the
 * process that runs as root maps libc, libseccomp, cJSON and libinih
 * only. `llmbox sandboxd` and `llmbox image` exec this file (server/main.c).
 */
#include "common/config.h"
#include "common/status.h"
#include "sandboxd/sandboxd_main.h"
#include "sandboxd/zygote.h"
#include "sandboxd_image/image_build.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    /* the zygote (zygote.h) needs no configuration, and has no environment */
    if (argc == 2 && !strcmp(argv[1], "zygote"))
        return lbsd_zygote_main();
    int rc = lb_config_load(lb_cfg_mut());
    if (rc != LB_OK) {
        /* as in llmbox: a daemon that starts with half its settings is
         * worse than one that does not start */
        fprintf(stderr, "llmbox-sandboxd: cannot load the configuration: %s\n",
                lb_config_error()[0] ? lb_config_error() : lb_strerror(rc));
        return 1;
    }
    if (argc >= 2 && !strcmp(argv[1], "image"))
        return lbsd_image_main(argc - 1, argv + 1);
    return lbsd_serve_main(argc, argv);
}
