/* .symtab lookup for the plugin loader's messages; see elf_symbol.h.
 * Every offset read from the file is checked against its size before use:
 * the file is whatever someone dropped into plugins/. */
#include "agent/elf_symbol.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_ELF_MAX_SIZE ((off_t)256 << 20) /* larger files are not looked into */

/* 1 when [off, off + len) lies inside a file of size size. */
static int in_file(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

static int scan(const unsigned char *m, uint64_t size, const char *name)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG) || m[EI_CLASS] != ELFCLASS64)
        return -1;
    Elf64_Ehdr eh;
    memcpy(&eh, m, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
        return -1;
    size_t nlen = strlen(name);
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, strh;
        memcpy(&sh, m + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_SYMTAB)
            continue;
        if (sh.sh_link >= eh.e_shnum || !in_file(sh.sh_offset, sh.sh_size, size))
            return -1;
        memcpy(&strh, m + eh.e_shoff + (uint64_t)sh.sh_link * sizeof strh, sizeof strh);
        if (!in_file(strh.sh_offset, strh.sh_size, size))
            return -1;
        const char *strtab = (const char *)m + strh.sh_offset;
        for (uint64_t o = 0; o + sizeof(Elf64_Sym) <= sh.sh_size; o += sizeof(Elf64_Sym)) {
            Elf64_Sym s;
            memcpy(&s, m + sh.sh_offset + o, sizeof s);
            if (s.st_shndx == SHN_UNDEF || s.st_name >= strh.sh_size || strh.sh_size - s.st_name <= nlen)
                continue;
            if (!memcmp(strtab + s.st_name, name, nlen + 1))
                return 1;
        }
        return 0;
    }
    return -1; /* stripped: no .symtab to look in */
}

int lb_elf_symbol_defined(const char *path, const char *name)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > LB_ELF_MAX_SIZE) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    int rc = scan(m, (uint64_t)st.st_size, name);
    munmap(m, (size_t)st.st_size);
    return rc;
}
