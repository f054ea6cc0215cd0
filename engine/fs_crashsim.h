/* fs_crashsim.h: the simulated power loss of fs_crashsim.c, a test hook (KINGEST_POWERCUT, docs/testing.md). */
#ifndef KG_FS_CRASHSIM_H
#define KG_FS_CRASHSIM_H

#include "fs.h"

/* When KINGEST_POWERCUT is set, puts the simulator in front of the local backend (kg_fs_wrap_local), so that
 * kg_fs_open hands it out for file:/// and kg_fs_point counts the commit's named points; else does nothing. The
 * command line calls it as it starts, before any file system is opened. */
void kg_fs_crashsim_install(void);
/* The simulator, a wrapper of the local backend, when KINGEST_POWERCUT is set, else NULL. */
kg_fs_t *kg_fs_crashsim(void);
/* Counts WHAT as an operation where the power may go; a no-op without KINGEST_POWERCUT. */
void kg_fs_powercut_point(const char *what);

#endif
