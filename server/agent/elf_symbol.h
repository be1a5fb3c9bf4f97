/* Looks a symbol up in a shared object's full symbol table (.symtab), the
 * one dlsym does not see: it tells a plugin whose entry point exists but
 * was not exported (built with -fvisibility=hidden and no
 * LLMBOX_PLUGIN_EXPORT) from one that has no entry point at all. */
#ifndef LB_ELF_SYMBOL_H
#define LB_ELF_SYMBOL_H

/* 1 when path is a 64-bit ELF file whose .symtab defines name, 0 when its
 * .symtab does not, -1 when that cannot be told (not ELF64, stripped,
 * unreadable, malformed). Reads the file only; never loads it. */
int lb_elf_symbol_defined(const char *path, const char *name);

#endif
