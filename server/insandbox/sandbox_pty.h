/*
 * E2B's pty (E2B's protocol): a relay that runs inside the sandbox, forked by the
 * spawner like any of sandboxd's processes (sandbox_proc.h), so it has the
 * sandbox's confinement. It opens a pty on the sandbox's own devpts
 * (/dev/ptmx there; the peer through TIOCGPTPEER, never a path), starts the
 * program on the pty's other side in a session of its own with the pty as
 * its controlling terminal, copies the terminal's output to its stdout (a
 * pipe sandboxd reads, pushed like any process's output) and takes the
 * frames of include/llmbox/sandbox.h (LBSB_PTY_ARGV0) from its stdin:
 * input bytes for the terminal, or a resize (TIOCSWINSZ, which sends the
 * program SIGWINCH). It exits as the program did (by the same signal when
 * a signal ended it); killed, its end hangs the terminal up and the
 * program gets SIGKILL (PR_SET_PDEATHSIG). Bad frames end it: the web is
 * the only writer of its stdin.
 */
#ifndef LBSD_SANDBOX_PTY_H
#define LBSD_SANDBOX_PTY_H

/* In the spawner's child instead of the exec: argv as LBSB_PTY_ARGV0 says;
 * exec_program() execs argv + 3 (it returns only on failure, errno set). */
__attribute__((noreturn)) void lbsd_pty_main(char **argv, void (*exec_program)(char **prog_argv));

#endif
