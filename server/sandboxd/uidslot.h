/*
 * One host uid/gid range per sandbox (uid slots).
 *
 * The kernel keeps several counters per *host* uid, whatever the user
 * namespace: pipe buffer pages (fs.pipe-user-pages-soft/-hard), unix fds in
 * flight (ETOOMANYREFS past RLIMIT_NOFILE), epoll watches, locked memory of
 * io_uring/perf rings, watch queues, key quotas. Sandboxes that shared one
 * host range shared all of them: one sandbox could shrink every other's
 * pipes and break their SCM_RIGHTS.
 *
 * Layout of the host ids (BASE = LLMBOX_SANDBOX_UID_BASE, N = 65536):
 *
 *   slot 0   BASE        .. BASE+N-1         the images' ids on disk (idmap.h)
 *   slot k   BASE+k*N    .. BASE+(k+1)*N-1   the live sandbox holding slot k, k >= 1
 *
 * with at most LLMBOX_SANDBOX_UID_SLOTS slots (default 4095: all below 2^31
 * with the default base), never into the last range, 2^32-65536.., which
 * holds (uid_t)-1, the kernel's invalid id that no id map may contain.
 *
 * Ids at or above 2^31: more than 4095 slots with the default base (a
 * lower base would meet systemd-nspawn's and /etc/subuid's ranges instead,
 * docs/SANDBOX.md) use them. The kernel keeps uids as u32 throughout
 * (kuid_t, id maps, ext4 and tmpfs inodes, ucounts); only (u32)-1 is
 * special. llmbox keeps them in uint32_t/uid_t and prints them with %u.
 * What can go wrong is outside: a host tool that parses or stores a uid in
 * a signed int shows such ids negative, and systemd's UIDS-GIDS.md says to
 * avoid 2^31..2^32-2 for that reason. So the default stays below 2^31 and
 * going above is the operator's choice (sandboxd logs it at start). A sandbox's user namespace maps its 0..65535 to its slot;
 * the image (owned by slot 0 on disk) is its overlay's lower layer through an
 * idmapped mount that shows slot 0's ids as the slot's, so the sandbox's root
 * owns its system as before. The upper layer, /tmp and every file sandboxd
 * creates for it get the slot's ids.
 *
 * A slot is also locked host-wide (a byte-range lock over its host ids in
 * /run/llmbox/uid-slots.lock, one descriptor for all slots), so two
 * sandboxds on one host never hand out the same range; the lock goes with
 * the process that holds it.
 *
 * Without idmapped mounts (kernel < 5.19, a filesystem without idmap
 * support) or with LLMBOX_SANDBOX_UID_SLOTS=0, every sandbox uses slot 0,
 * as before, and sandboxd says at start which counters are then shared.
 */
#ifndef LBSD_UIDSLOT_H
#define LBSD_UIDSLOT_H

#include <stddef.h>
#include <stdint.h>
#include "common/config.h"
#include "common/status.h"

#define LBSD_SLOT_MAX 65533   /* ranges above the image's that fit below 2^32 - 65536 */

/* sandboxd start, after the image store and var/sandboxes exist: decides
 * between per-sandbox ranges and the shared one (probing an idmapped
 * overlay), and logs what it decided. Keeps cfg (read only; its
 * sandbox_uid_base, sandbox_uid_slots and paths) for the other calls. */
void lbsd_slot_init(const lb_config *cfg);
/* Slots sandboxes can take; 0: every sandbox shares slot 0. */
int lbsd_slot_count(void);
/* Slots held now. */
int lbsd_slot_used(void);
/* A free slot for a new sandbox (0 in shared mode). LB_E_UNAVAILABLE with a
 * sentence in msg when every slot is taken. */
LB_MUST_CHECK int lbsd_slot_take(int *slot, char *msg, size_t msgsz);
/* Gives the slot back: only once no process of its sandbox is left. */
void lbsd_slot_release(int slot);
/* Host uid (and gid) of the root of the sandbox in slot. */
uint32_t lbsd_slot_root(int slot);
/* Slots whose idmap namespace sandboxd makes once and keeps: one
 * descriptor each for the life of sandboxd. Above, the zygote makes one
 * for each create (zygote.h: ~1 ms in a small process, where a fork of
 * sandboxd with thousands of descriptors cost more) and init drops it once
 * its idmapped mount is made. */
#define LBSD_SLOT_NS_CACHED 1024

/* A user namespace whose ids BASE.. map to slot's range: what the idmapped
 * mount of the image needs. Slots 1..LBSD_SLOT_NS_CACHED only; the fd stays
 * ours. -1 otherwise, or on error, with a sentence in msg. */
int lbsd_slot_userns(int slot, char *msg, size_t msgsz);
/* Makes a user namespace mapping base.. to root.. (LBSD_ID_COUNT ids) in a
 * child parked on a pipe; returns its fd, or -1 with a sentence in msg.
 * ~1 ms plus a fork of the caller. */
int lbsd_userns_make(uint32_t base, uint32_t root, char *msg, size_t msgsz);

#endif
