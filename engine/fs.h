/* fs.h: the file system interface: what the writer, the task, the publisher and the job need of a file
 * system, as a table of functions with one backend per file (fs_local.c for file:///, fs_webhdfs.c for HDFS
 * through the NameNode's REST API at webhdfs://), chosen by the URI scheme of a file system property
 * (writer.fs.uri, fs.uri).
 *
 * A backend is a kg_fs_t whose functions get the kg_fs_t back as their first argument (its DATA holds the
 * backend's own state). Adding one is a new file that fills a kg_fs_t and a row in the registry in fs.c; the
 * rest of the engine sees only the functions below. */
#ifndef KG_FS_H
#define KG_FS_H

#include "buf.h"
#include "config.h"
#include "kg_common.h"

typedef struct kg_fs kg_fs_t;
typedef struct kg_fs_stream kg_fs_stream_t;
typedef struct kg_fs_object_ops kg_fs_object_ops_t;

/* How kg_fs_create opens a file. */
typedef enum {
  KG_FS_CREATE_NEW = 0, /* a new file; fails when one is already there (never overwrites) */
  KG_FS_APPEND,         /* appends to the file, creating it when missing */
} kg_fs_mode_t;

/* The functions of an open stream. Each returns KG_OK or KG_EIO with the REASON alone in ERRBUF (as
 * "No space left on device"), since the caller knows what the file is for and names it. */
typedef struct {
  /* Appends LEN bytes of DATA. Bytes may wait in a buffer until sync or close. */
  int (*write)(kg_fs_stream_t *stream, const void *data, size_t len, char *errbuf);
  /* Cuts the file to its first SIZE bytes (SIZE no more than what was written) and goes on writing there. */
  int (*truncate)(kg_fs_stream_t *stream, int64_t size, char *errbuf);
  /* Hands every byte written to the file and makes it durable (fsync). */
  int (*sync)(kg_fs_stream_t *stream, char *errbuf);
  /* Hands every byte written to the file (without a sync) and closes it. Frees STREAM, also on failure. */
  int (*close)(kg_fs_stream_t *stream, char *errbuf);
  /* Closes and deletes the file. Frees STREAM. */
  void (*abort)(kg_fs_stream_t *stream);
} kg_fs_stream_ops_t;

/* An open file, written from the start (or appended to) and never read. A backend embeds it first in its own
 * stream struct. */
struct kg_fs_stream {
  const kg_fs_stream_ops_t *ops;
};

/* A file system. Paths are absolute paths within it. Unless said otherwise a function returns KG_OK, or
 * KG_EIO with a sentence naming the path and the reason in ERRBUF (which may be NULL). */
struct kg_fs {
  const char *scheme; /* the URI scheme it serves, "file" */
  /* mkdir -p; a folder made is durable (the local backend syncs the folder it was made in, and a sync that fails
   * fails the call). The local backend also leaves errno set on failure. */
  int (*mkdirs)(kg_fs_t *fs, const char *path, char *errbuf);
  /* As mkdirs, the folders it makes readable and writable by their owner only (for what holds the records a run
   * read); NULL when the backend has no modes to give or its mkdirs already does. */
  int (*mkdirs_private)(kg_fs_t *fs, const char *path, char *errbuf);
  /* Opens PATH (whose folder exists) for writing as MODE says; *OUT is owned by the caller, who ends it
   * with its close or abort. On failure the reason alone goes to ERRBUF, as for streams. */
  int (*create)(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf);
  /* Renames file SRC to DST (whose folder exists) without ever replacing a DST that exists (then KG_EIO,
   * "File exists"), and makes the rename durable: the folders of DST and of SRC are synced. A failed sync
   * fails the rename with an error naming the folder; the file is then at DST (not durably). */
  int (*rename)(kg_fs_t *fs, const char *src, const char *dst, char *errbuf);
  /* *EXISTS tells whether something is at PATH. An error only when that cannot be told. */
  int (*exists)(kg_fs_t *fs, const char *path, bool *exists, char *errbuf);
  /* The names in folder PATH (without "." and ".."), in no particular order: *NAMES is a new array of
   * *COUNT new strings (kg_fs_list_free). A missing folder has no names. */
  int (*list)(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf);
  /* rm -rf; a missing PATH is fine. */
  int (*remove_tree)(kg_fs_t *fs, const char *path, char *errbuf);
  /* Makes what PATH (a file or a folder) holds durable: for a folder, the entries created or renamed in it. */
  int (*sync)(kg_fs_t *fs, const char *path, char *errbuf);
  /* Creates folder PATH when missing and checks that a file can be made in it. The error names PROPERTY. */
  int (*check_writable)(kg_fs_t *fs, const char *path, const char *property, char *errbuf);
  /* *SAME tells whether folders A and B are on one volume, so that a rename can go from one to the other.
   * True when it cannot be told (the writability checks report missing folders). */
  int (*same_volume)(kg_fs_t *fs, const char *a, const char *b, bool *same, char *errbuf);
  /* Copies the local file LOCAL_PATH to PATH (whose folder exists) without ever replacing a PATH that exists
   * (then KG_EIO, "File exists"); the copy is durable when it returns. NULL: kg_fs_put copies through create. */
  int (*put)(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf);
  /* Appends the bytes of file PATH (a small one: a few megabytes at most) to OUT. */
  int (*read)(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf);
  /* Releases what open made; NULL when there is nothing to release. */
  void (*close)(kg_fs_t *fs);
  /* An object store's own calls (below); NULL for a file system that renames. An object store has rename NULL and
   * create refusing (it cannot stage task output): the commit publishes to it through these. */
  const kg_fs_object_ops_t *object;
  void *data; /* the backend's state, owned by it */
};

/* ---- object stores: file systems that cannot rename --------------------------------------------------------
 *
 * An object store (S3, Azure Blob) has keys, not folders, and no rename: a file is published by writing its object
 * once, whole, under a condition that fails when the key exists (If-None-Match: *), so that nothing is ever
 * overwritten. A large file goes as an upload in parts that becomes visible only when it is completed; an upload
 * begun has an id (S3's UploadId; a store whose parts need no upload id makes one up), which the commit journals with
 * the key before any byte goes, so that a later run can find the upload, abort it, and start again. Paths are the
 * file system's absolute paths, as for every backend ("/out/topic/part.0.txt"); the backend maps them to keys.
 *
 * Each call returns KG_OK, or KG_EIO with a sentence in ERRBUF naming the store, the container (bucket), the key,
 * the status and the store's own error code (S3's NoSuchBucket, SignatureDoesNotMatch...). */

/* An object, or an unfinished upload. Strings owned (kg_fs_objects_free). */
typedef struct {
  char *path;      /* the file system path of its key */
  int64_t size;    /* bytes; -1 when not known (an unfinished upload) */
  char *etag;      /* the store's ETag, without quotes; NULL when not known */
  char *upload_id; /* an unfinished upload's id; for an object of a store that marks its objects (marks_objects),
                      the id of the upload that wrote it as the object carries it; else NULL */
} kg_fs_object_t;

void kg_fs_object_clear(kg_fs_object_t *object);                /* frees the strings of OBJECT and zeroes it */
void kg_fs_objects_free(kg_fs_object_t *objects, size_t count); /* clears each, then frees the array */

struct kg_fs_object_ops {
  int64_t multipart_threshold; /* a file of this many bytes or more goes as an upload in parts */
  int64_t part_size;           /* bytes of each part but the last */
  int concurrency;             /* parts of one upload sent at once; memory is at most PART_SIZE times this per upload
                                  (a backend that sends parts from the file by pread needs far less) */
  /* Each object carries the id of the upload that wrote it (Azure's x-ms-meta-kingestupload), which head gives back
   * in OUT->upload_id: the commit begins an upload for every file, however small (put_new then writes a small one in
   * one request still, marked with the id), and knows its own objects by the mark, for a store whose ETag cannot be
   * foreseen. */
  bool marks_objects;
  /* The ETag the store will give LOCAL_PATH written as one object (MULTIPART false) or in parts of PART_SIZE, into
   * *ETAG (new, or NULL when the store's ETag cannot be told before it is written, as with SSE-KMS). NULL: never
   * known before. */
  int (*expected_etag)(kg_fs_t *fs, const char *local_path, bool multipart, char **etag, char *errbuf);
  /* Begins an upload in parts to PATH: *UPLOAD_ID a new string. Nothing is visible at PATH until put_new completes
   * it. */
  int (*upload_begin)(kg_fs_t *fs, const char *path, char **upload_id, char *errbuf);
  /* Writes local file LOCAL_PATH to PATH unless something is there: in one request when UPLOAD_ID is NULL, else as
   * the parts of upload UPLOAD_ID, which it completes (a store that marks its objects writes a file smaller than a
   * part in one request, marked UPLOAD_ID). Both under If-None-Match: *. Fills *OUT (path, size, etag) on
   * success. When the key exists (412, or 409 for a store that says so), *EXISTS is true and the call fails with
   * KG_EIO naming the key; the upload UPLOAD_ID is then left for the caller to abort. */
  int (*put_new)(kg_fs_t *fs, const char *local_path, const char *path, const char *upload_id, kg_fs_object_t *out,
                 bool *exists, char *errbuf);
  /* The object at PATH into *OUT (size and etag); OUT->size -1 and OUT->path NULL when there is none. */
  int (*head)(kg_fs_t *fs, const char *path, kg_fs_object_t *out, char *errbuf);
  /* Every object whose path starts with PREFIX (no delimiter: the whole tree), in key order: *OUT a new array
   * (kg_fs_objects_free). */
  int (*list)(kg_fs_t *fs, const char *prefix, kg_fs_object_t **out, size_t *count, char *errbuf);
  /* Every unfinished upload whose path starts with PREFIX (path and upload_id), as list. NULL for a store where a
   * killed run leaves nothing to sweep (its uploads begin with no request, and their parts cannot be dropped). */
  int (*list_uploads)(kg_fs_t *fs, const char *prefix, kg_fs_object_t **out, size_t *count, char *errbuf);
  /* Aborts upload UPLOAD_ID of PATH, dropping its parts; one that is gone already is fine. */
  int (*abort_upload)(kg_fs_t *fs, const char *path, const char *upload_id, char *errbuf);
  /* Deletes the object at PATH; a missing one is fine. */
  int (*remove)(kg_fs_t *fs, const char *path, char *errbuf);
};

/* The file system of URI (file:///, or empty for the local one), looked up by its scheme in the registry.
 * KG_EINVAL naming PROPERTY and the schemes there are when no backend serves it. Ends with kg_fs_close. A backend
 * with property rows of its own (an object store's credentials, endpoint, part size) opens with their defaults:
 * enough to check the URI. */
int kg_fs_open(const char *uri, const char *property, kg_fs_t **out, char *errbuf);
/* The same with the backend's options from CONFIG (NULL: the defaults): the run's file systems. */
int kg_fs_open_config(const char *uri, const char *property, const kg_config_t *config, kg_fs_t **out, char *errbuf);
void kg_fs_close(kg_fs_t *fs); /* NULL is a no-op */

/* The file systems' rows (fs.c): writer.fs.uri, fs.uri, data.publisher.fs.uri, state.store.fs.uri, each checked by
 * the backend of its scheme. kg_fs_section_at gives the I-th backend's own section (NULL past the last). */
extern const kg_config_section_t kg_fs_section;
const kg_config_section_t *kg_fs_section_at(size_t i);

/* The writer's file system URI: writer.fs.uri, else fs.uri, else file:///; *PROPERTY names the one it came from
 * (fs.uri for the default). */
const char *kg_fs_writer_uri(const kg_config_t *config, const char **property);

/* The local file system, for what must be local whatever the properties say: the state store (an SQLite
 * database), the job lock (flock(2)) and the metrics files. Never closed. */
kg_fs_t *kg_fs_local(void);
/* The local file system's mkdirs (mkdir -p, each folder made synced in its parent), the folders it makes with MODE
 * (less the umask): 0700 for the folders of secrets (the state store, task data). Folders that exist keep theirs. */
int kg_fs_local_mkdirs_mode(const char *path, unsigned mode, char *errbuf);
/* fs_local.c's entry in the registry. */
int kg_fs_local_open(const char *uri, kg_fs_t **out, char *errbuf);
/* WebHDFS's options (its section's rows, in fs_webhdfs.c). */
typedef enum { KG_WEBHDFS_AUTH_SIMPLE = 0, KG_WEBHDFS_AUTH_KERBEROS } kg_webhdfs_auth_t;
typedef struct {
  int auth;        /* hadoop.security.authentication: a kg_webhdfs_auth_t */
  char *principal; /* kerberos.principal */
  char *keytab;    /* kerberos.keytab */
  char *ca_file;   /* webhdfs.ssl.ca.location */
} kg_webhdfs_options_t;
extern const kg_config_section_t kg_webhdfs_section;
/* CONFIG's WebHDFS options; NULL for a NULL CONFIG. */
const kg_webhdfs_options_t *kg_webhdfs_options(const kg_config_t *config);

/* fs_webhdfs.c's entry in the registry: HDFS over WebHDFS, webhdfs://[USER@]HOST:PORT[?PARAMS] with PORT the
 * NameNode's HTTP port, or swebhdfs://HOST:PORT[?PARAMS] with PORT its HTTPS port. PARAMS: user.name (else USER,
 * else $USER, else the effective uid's name), auth=simple|kerberos, connect.timeout.ms, timeout.ms, attempts. With
 * OPTIONS (NULL: the defaults, and no Kerberos checks: a URI being read) Kerberos and the CA file; with Kerberos the
 * keytab is checked (readable, its first principal kerberos.principal) and the process logs in from it
 * (KRB5_CLIENT_KTNAME, and a ticket cache in memory of its own as KRB5CCNAME), unless a delegation token was handed
 * over (kg_fs_webhdfs_use_token). Each open makes a new kg_fs_t. */
int kg_fs_webhdfs_open(const char *uri, kg_fs_t **out, char *errbuf);
int kg_fs_webhdfs_open_with(const char *uri, const kg_webhdfs_options_t *options, kg_fs_t **out, char *errbuf);
/* Whether FS is a WebHDFS file system with Kerberos, and its kerberos.principal (NULL when not). */
bool kg_fs_webhdfs_kerberos(const kg_fs_t *fs);
const char *kg_fs_webhdfs_principal(const kg_fs_t *fs);
/* A new delegation token of FS's principal, renewable by RENEWER (a short name), in its URL-safe form: *TOKEN, a new
 * string and a secret. GETDELEGATIONTOKEN with SPNEGO. */
int kg_fs_webhdfs_get_token(kg_fs_t *fs, const char *renewer, char **token, char *errbuf);
/* Cancels TOKEN (CANCELDELEGATIONTOKEN). */
int kg_fs_webhdfs_cancel_token(kg_fs_t *fs, const char *token, char *errbuf);
/* From now on every WebHDFS file system opened with Kerberos in this process authenticates with TOKEN (copied)
 * instead of a keytab: the maps of the Hadoop mode. NULL: no token. */
void kg_fs_webhdfs_use_token(const char *token);
/* fs_s3.c's entry in the registry and its property rows (fs.s3a.*): S3, s3a://BUCKET or s3://BUCKET (fs_s3.h).
 * OPTIONS are the section's (kg_s3_options_t), NULL for their defaults. */
int kg_fs_s3_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf);
extern const kg_config_section_t kg_fs_s3_section;
/* fs_azure.c's entry in the registry: Azure Blob Storage, wasbs://CONTAINER@ACCOUNT.blob.core.windows.net (wasb://
 * over plain HTTP; abfss:// and abfs:// with ACCOUNT.dfs.core.windows.net, through the same Blob API), an object store
 * (its OBJECT calls; no rename). OPTIONS are its section's (kg_fs_azure_section: the account keys, the endpoint, the
 * block size, the retries); NULL for their defaults and no key, enough to check a URI. Each open makes a new kg_fs_t.
 */
int kg_fs_azure_open(const char *uri, const void *options, kg_fs_t **out, char *errbuf);
extern const kg_config_section_t kg_fs_azure_section;
/* Fault injection for tests (as SQLite's xSetSystemCall): the local backend calls FSYNC instead of fsync(2)
 * from now on; NULL puts fsync(2) back. Not thread-safe: set it while nothing else uses the file system. */
void kg_fs_local_set_fsync(int (*fsync_fn)(int fd));

/* A test hook's wrapper in front of the local backend (the simulated power loss of fs_crashsim.c,
 * KINGEST_POWERCUT): from now on kg_fs_open asks WRAPPER for the file system to hand out for file:/// (its answer
 * NULL: the local backend itself), and kg_fs_point passes each named point to POINT. NULL, NULL takes them away.
 * Set it before the first kg_fs_open, while nothing else uses the file system. */
void kg_fs_wrap_local(kg_fs_t *(*wrapper)(void), void (*point)(const char *what));
/* A named point of the commit around its state writes (WHAT), which a test hook's wrapper counts as an operation
 * where the power may go; a no-op without one. */
void kg_fs_point(const char *what);

/* The calls the engine makes; each is the backend's function (see above). */
static inline int kg_fs_mkdirs(kg_fs_t *fs, const char *path, char *errbuf) { return fs->mkdirs(fs, path, errbuf); }
static inline int kg_fs_mkdirs_private(kg_fs_t *fs, const char *path, char *errbuf) {
  return fs->mkdirs_private ? fs->mkdirs_private(fs, path, errbuf) : fs->mkdirs(fs, path, errbuf);
}
static inline int kg_fs_create(kg_fs_t *fs, const char *path, kg_fs_mode_t mode, kg_fs_stream_t **out, char *errbuf) {
  return fs->create(fs, path, mode, out, errbuf);
}
static inline int kg_fs_exists(kg_fs_t *fs, const char *path, bool *exists, char *errbuf) {
  return fs->exists(fs, path, exists, errbuf);
}
static inline int kg_fs_list(kg_fs_t *fs, const char *path, char ***names, size_t *count, char *errbuf) {
  return fs->list(fs, path, names, count, errbuf);
}
static inline int kg_fs_remove_tree(kg_fs_t *fs, const char *path, char *errbuf) {
  return fs->remove_tree(fs, path, errbuf);
}
static inline int kg_fs_sync(kg_fs_t *fs, const char *path, char *errbuf) { return fs->sync(fs, path, errbuf); }
static inline int kg_fs_check_writable(kg_fs_t *fs, const char *path, const char *property, char *errbuf) {
  return fs->check_writable(fs, path, property, errbuf);
}
static inline int kg_fs_read(kg_fs_t *fs, const char *path, kg_buf_t *out, char *errbuf) {
  return fs->read(fs, path, out, errbuf);
}
void kg_fs_list_free(char **names, size_t count);

/* Moves file SRC to DST: creates DST's folder, then renames (never replacing DST, durable; see rename). On
 * failure, the file is at SRC, except after a failed folder sync: then it is at DST, and the caller that must
 * undo the move checks with kg_fs_exists. */
int kg_fs_move(kg_fs_t *fs, const char *src, const char *dst, char *errbuf);

/* Copies the local file LOCAL_PATH to new file PATH on FS (see put); the error names both. */
int kg_fs_put(kg_fs_t *fs, const char *local_path, const char *path, char *errbuf);

/* KG_EINVAL naming both properties when folders A and B are on different volumes (a commit renames from one
 * to the other). */
int kg_fs_check_same_fs(kg_fs_t *fs, const char *a, const char *a_property, const char *b, const char *b_property,
                        char *errbuf);

static inline int kg_fs_stream_write(kg_fs_stream_t *s, const void *data, size_t len, char *errbuf) {
  return s->ops->write(s, data, len, errbuf);
}
static inline int kg_fs_stream_truncate(kg_fs_stream_t *s, int64_t size, char *errbuf) {
  return s->ops->truncate(s, size, errbuf);
}
static inline int kg_fs_stream_sync(kg_fs_stream_t *s, char *errbuf) { return s->ops->sync(s, errbuf); }
static inline int kg_fs_stream_close(kg_fs_stream_t *s, char *errbuf) { return s->ops->close(s, errbuf); }
static inline void kg_fs_stream_abort(kg_fs_stream_t *s) {
  if (s) s->ops->abort(s);
}

#endif
