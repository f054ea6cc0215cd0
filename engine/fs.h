/* fs.h: the local file system operations the writer, publisher and state store need. */
#ifndef KG_FS_H
#define KG_FS_H

#include "kg_common.h"

/* mkdir -p. KG_OK, or KG_EIO with the failing path and errno text in ERRBUF (errno is kept). */
int kg_fs_mkdirs(const char *path, char *errbuf);
/* Renames SRC to DST after creating DST's folder, and syncs both folders so the move is durable. */
int kg_fs_move(const char *src, const char *dst, char *errbuf);
bool kg_fs_exists(const char *path);
/* rm -rf; a missing PATH is fine. */
int kg_fs_remove_tree(const char *path, char *errbuf);
/* fsync of a folder, so that entries created or renamed in it survive a crash. */
int kg_fs_sync_dir(const char *path);
/* True when a file can be created in PATH (which must exist). */
int kg_fs_check_writable(const char *path, const char *property, char *errbuf);

/* KG_EINVAL naming both properties when folders A and B are on different file systems (a commit renames
 * from one to the other). */
int kg_fs_check_same_fs(const char *a, const char *a_property, const char *b, const char *b_property, char *errbuf);

#endif
