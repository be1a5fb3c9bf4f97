/*
 * The sandbox's pid 1 (sandbox_init.c): what the zygote (zygote.h) hands
 * it when it clones it, and the fd at which it keeps the overlay's upper
 * dir for sandboxd.
 */
#ifndef LBSD_SANDBOX_INIT_H
#define LBSD_SANDBOX_INIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct lbsd_init_cfg {
    const char *scratch;           /* var/sandboxes/<id>: init mounts the quota tmpfs here
                                    * (in its own mount namespace) with upper/, work/,
                                    * merged/ and tmp/ inside */
    const char *lower;             /* the image's rootfs (owned by the images' ids) */
    const char *tag;               /* lbsd_install_tag(): the overlay's source name (init
                                    * is cloned by the zygote, which has no configuration) */
    int idmap_fd;                  /* user namespace mapping the images' ids to the
                                    * sandbox's range for an idmapped lower layer; -1:
                                    * the sandbox shares the images' range (uidslot.h) */
    int idmap_make;                /* the zygote makes that namespace (idmap_fd -1) mapping
                                    * idmap_base.. to uid_root.. (uidslot.h) */
    uint32_t idmap_base;
    int disk_mib;                  /* size of that tmpfs: writable layer + /tmp */
    uint32_t uid_root;             /* host uid/gid of the sandbox's root (its slot's first) */
    int rlimit_mode;               /* no cgroups: limit memory and pids with rlimits */
    uint64_t memory_bytes;
    int pids;
    uint64_t nofile;               /* RLIMIT_NOFILE of every process (hostlimits.h) */
    int ptys;                      /* devpts max= */
    /* a layered image (image_layers.h); all NULL/empty/-1 for a debootstrap one */
    const char *lowerdirs;         /* overlay's lowerdir ("lower/<hex>/root:..."), lower being
                                    * the idmapped <image_store>/oci/layers */
    const char *hold;              /* the image's record: init holds a shared flock on it for
                                    * the sandbox's life, so gc and rm see the image in use */
    const char *workdir;           /* the shell's and processes' folder ("" /testbed) */
    const char *env;               /* the image's Env, "K=V\0..." (envlen bytes) */
    size_t envlen;
    int64_t uid, gid;              /* the user the shell and processes run as; -1 root */
} lbsd_init_cfg;
__attribute__((noreturn)) void lbsd_init_main(const lbsd_init_cfg *cfg, int ctl);
/* Init holds the overlay's upper dir at this fd for the sandbox's life, so
 * that sandboxd can save it (follow-ups, sandbox_save.c opens
 * /proc/<init>/fd/5): once the old root is detached nothing else reaches
 * it. The sandbox cannot: init is not dumpable, so its fds need
 * CAP_SYS_PTRACE over the host. */
#define LBSD_INIT_UPPER_FD 5

#endif
