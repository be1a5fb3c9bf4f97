/* Operator caps on what one sandbox may ask for, resolved against this
 * host once at load: the web (which validates specs with a clear 400) and
 * sandboxd (the authority, which enforces them) read the same numbers. */
#include "config_priv.h"

#include <stdio.h>
#include <string.h>

int lb_cfg_cap_memory_mib(int configured, uint64_t ram_mib)
{
    if (configured > 0)
        return configured;
    /* half of the host: one sandbox never asks for the whole machine */
    uint64_t half = ram_mib / 2;
    if (half < 64)
        return 64;
    return half > (1u << 20) ? 1 << 20 : (int)half;
}

int lb_cfg_cap_pids(int configured, uint64_t pid_max)
{
    /* the host keeps at least half of its pid space */
    if (pid_max >= 32 && (uint64_t)configured > pid_max / 2)
        return (int)(pid_max / 2);
    return configured;
}

static uint64_t host_read_u64(const char *path, const char *key)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[256];
    unsigned long long v = 0;
    size_t kl = key ? strlen(key) : 0;
    while (fgets(line, sizeof line, f)) {
        if (!key) {
            sscanf(line, "%llu", &v);
            break;
        }
        if (!strncmp(line, key, kl) && sscanf(line + kl, " %llu", &v) == 1)
            break;
    }
    fclose(f);
    return v;
}

void lb_cfgi_resolve_host(lb_config *c)
{
    uint64_t ram_kib = host_read_u64("/proc/meminfo", "MemTotal:");
    c->sandbox_max_memory_mib = lb_cfg_cap_memory_mib(c->sandbox_max_memory_mib, ram_kib / 1024);
    c->sandbox_max_pids = lb_cfg_cap_pids(c->sandbox_max_pids,
                                          host_read_u64("/proc/sys/kernel/pid_max", NULL));
    /* the defaults a spec gets when it names none obey the caps too
     * (sandboxd says so at start when it lowers one) */
    if (c->sandbox_memory_mib > c->sandbox_max_memory_mib)
        c->sandbox_memory_mib = c->sandbox_max_memory_mib;
    if (c->sandbox_pids > c->sandbox_max_pids)
        c->sandbox_pids = c->sandbox_max_pids;
}
