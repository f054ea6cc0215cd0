/* config.h: the job's typed configuration, read from its properties and validated once, up front.
 *
 * The properties are rows (kg_property_t) grouped in sections (kg_config_section_t): the job's own rows, which land
 * in kg_config_t and are what the phases read (config_job.c), and one section per backend (the Kafka source, the
 * schema registry, the file systems, the writers, the time partitioner, the reporters, the Hadoop launcher), each
 * declared in the backend's own file with the struct its rows land in and the setters that check its values.
 * config_sections.c lists the sections in the order their rows are read and printed; kg_config_new reads every
 * row of that union with one loop, and `kingest properties`, `kingest validate`, the did-you-mean of a misspelt
 * key and job.strict read the same union. A backend reaches its parsed options with kg_config_options (each
 * backend's header has a typed accessor): kg_config_t itself holds none of them. */
#ifndef KG_CONFIG_H
#define KG_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "props.h"

typedef enum { KG_BOOTSTRAP_EARLIEST = 0, KG_BOOTSTRAP_LATEST, KG_BOOTSTRAP_SKIP } kg_bootstrap_t;
typedef enum { KG_RESET_EARLIEST = 0, KG_RESET_LATEST, KG_RESET_NEAREST, KG_RESET_SKIP } kg_reset_t;
typedef enum { KG_NEW_PARTITION_EARLIEST = 0, KG_NEW_PARTITION_LATEST, KG_NEW_PARTITION_BOOTSTRAP } kg_new_partition_t;
typedef enum { KG_MISSING_WARN = 0, KG_MISSING_FAIL } kg_missing_policy_t;
typedef enum { KG_PATH_TABLENAME = 0, KG_PATH_NAMESPACE_TABLE, KG_PATH_DEFAULT } kg_path_type_t;
typedef enum { KG_ERRORS_SKIP = 0, KG_ERRORS_FAIL, KG_ERRORS_QUARANTINE } kg_error_policy_t;
typedef enum { KG_LIMIT_TIME = 0, KG_LIMIT_RATE, KG_LIMIT_COUNT } kg_limit_type_t;
typedef enum { KG_COMMIT_FULL = 0, KG_COMMIT_SUCCESSFUL } kg_commit_policy_t;
typedef enum { KG_LAUNCHER_LOCAL = 0, KG_LAUNCHER_MAPREDUCE } kg_launcher_t;
typedef enum { KG_ESTIMATOR_AVG_RECORD_TIME = 0, KG_ESTIMATOR_AVG_RECORD_SIZE, KG_ESTIMATOR_CUSTOM } kg_estimator_t;

/* What the phases read of the job. Every field is owned by the config (freed by kg_config_destroy). Paths are
 * absolute. */
typedef struct kg_config kg_config_t;
struct kg_config {
  kg_props_t *props; /* all properties as given, owned */
  char *job_file;    /* the job file's path as given */
  bool job_is_lua;   /* job.lua (true) or a .pull/.properties file */
  void **options;    /* each section's options (kg_config_options), in the order of config_sections.c; owned */
  char *job_name;
  char *topic_whitelist; /* comma-separated regexes, "" = all */
  char *topic_blacklist;
  char *move_to_latest; /* topics.move.to.latest.offset: comma-separated names or "all" */
  kg_bootstrap_t bootstrap;
  kg_reset_t reset;
  kg_new_partition_t new_partition; /* kafka.new.partition.offset: new partitions of a topic already pulled */
  kg_missing_policy_t
      missing_topics;      /* topic.missing.policy: a whitelisted name or stored partition not on the broker */
  char *work_dir;          /* GOBBLIN_WORK_DIR or --work-dir */
  char *state_store_dir;   /* state.store.dir */
  char *task_data_root;    /* task.data.root.dir */
  char *final_dir;         /* data.publisher.final.dir */
  char *lock_dir;          /* job.lock.dir */
  char *extract_namespace; /* extract.namespace */
  kg_path_type_t path_type;
  char *output_format;              /* writer.output.format, lower case: picks the writer (writer.h) */
  int max_mappers;                  /* mr.job.max.mappers */
  kg_commit_policy_t commit_policy; /* job.commit.policy */
  int log_format;                   /* log.format: a kg_log_format_t */
  bool limit_enabled;               /* extract.limit.enabled */
  kg_limit_type_t limit_type;       /* extract.limit.type */
  int64_t limit_time_ms;            /* time: the task's budget */
  double limit_rate_per_s;          /* rate: records per second per task */
  int64_t limit_count;              /* count: records per task */
  kg_estimator_t estimator;         /* kafka.workunit.size.estimator.type */
  int packer;                       /* kafka.workunit.packer.type: kg_packer_type_t */
  double pre_grouping_factor;       /* workunit.pre.grouping.size.factor */
  int threadpool_size;              /* taskexecutor.threadpool.size */
  int publish_threads;              /* parallel.runner.threads */
  bool lock_enabled;                /* job.lock.enabled */
  kg_launcher_t launcher;           /* launcher.type */
  int64_t metrics_interval_ms;      /* metrics.report.interval: interim reports, of every reporter */
  kg_error_policy_t decode_errors;  /* decode.error.policy */
  int64_t skip_error_limit;         /* task.skip.error.records, -1 unlimited; see skip_error_limit_set */
  bool skip_error_limit_set;        /* given: bounds every script failure; not given: converters 0, decode unlimited */
  double error_max_ratio;           /* decode.error.max.ratio: most failed records per record a task may read */
  bool fail_on_partial;             /* job.fail.on.partial: a run that stopped short of a high watermark fails */
  int64_t progress_interval_ms;     /* progress.interval.ms: progress log lines when stderr is not a terminal */
  int64_t batch_timeout_ms;         /* script.batch.timeout.ms: longest one call into the script may run */
  int64_t roll_bytes;               /* writer.file.max.size: bytes after which a file rolls, 0 for no limit */
  int64_t roll_records;             /* writer.file.max.records: records after which a file rolls, 0 for none */
};

/* Builds a config from PROPS (takes ownership of PROPS, even on failure). JOB_FILE is the job file's path;
 * WORK_DIR (may be NULL) overrides GOBBLIN_WORK_DIR. Logs one INFO line for MapReduce-only properties and a
 * WARN for each unknown one. Returns KG_OK or KG_EINVAL with a message naming the property, its origin and
 * the allowed values. */
int kg_config_new(kg_props_t *props, const char *job_file, bool job_is_lua, const char *work_dir, kg_config_t **out,
                  char *errbuf);
void kg_config_destroy(kg_config_t *config);

/* Loads a job file: a .lua script returning a table, or Gobblin properties (.pull, .properties, .job,
 * .conf). Returns a new property map in *OUT, or an error naming the file (and line for syntax errors). */
int kg_jobfile_load(const char *path, kg_props_t **out, bool *is_lua, char *errbuf);

/* A property row: one per property kingest knows, read by one loop in kg_config_new and printed by `kingest
 * properties` (and, with --markdown, as docs/properties.md's table). A row says how a value is parsed (TYPE, with
 * MIN/MAX or NAMES), what applies when the job does not give it (DEF, parsed by the same code as a user's value;
 * or COMPUTED), where the value lands in its section's options (OFFSET and SIZE, or SET for the odd ones) and
 * what it means (DOC, one line; `code` and [links](#anchors) to the manual's headings are Markdown). */
typedef enum {
  KG_PROP_STRING, /* char *: the value as given */
  KG_PROP_PATH,   /* char *: absolute (against the current folder; a file:// prefix is accepted); the default
                     may start with "<work dir>/" */
  KG_PROP_BOOL,   /* bool: true or false, any case */
  KG_PROP_INT,    /* int or int64_t (by SIZE): a whole number from MIN to MAX */
  KG_PROP_DOUBLE, /* double: a number from DMIN to DMAX */
  KG_PROP_ENUM,   /* int (or an enum type): the index of the value in NAMES, matched case-insensitively */
  KG_PROP_CLASS,  /* nothing stored (a setter gets the index in NAMES): a class name whose last dotted component is
                     one of NAMES */
} kg_property_type_t;

typedef enum {
  KG_MODE_BOTH = 0,  /* read in every mode */
  KG_MODE_MAPREDUCE, /* MapReduce only: accepted and ignored by a standalone run */
} kg_property_mode_t;

/* A parsed value: S is a new string (STRING and PATH), owned by whoever receives it; E is the index in NAMES
 * (ENUM and CLASS). */
typedef union {
  bool b;
  int64_t i;
  double d;
  int e;
  char *s;
} kg_property_value_t;

typedef struct kg_property kg_property_t;
struct kg_property {
  const char *name;  /* a trailing ".*" names every key with that prefix */
  const char *alias; /* the other accepted name of the property (Gobblin's newer one), or NULL */
  kg_property_type_t type;
  const char *def;          /* the default, written as a user would write it; NULL: none */
  const char *def_doc;      /* with DEF NULL: how the default is computed, or what no value means */
  const char *required;     /* non-NULL: the job must give the property, which holds this */
  int64_t min, max;         /* KG_PROP_INT */
  double dmin, dmax;        /* KG_PROP_DOUBLE */
  const char *const *names; /* KG_PROP_ENUM and KG_PROP_CLASS: the accepted values, NULL-terminated */
  size_t offset, size;      /* the field of the section's options the value lands in; SIZE 0: none */
  bool empty_is_default;    /* an empty value means the default */
  /* With DEF NULL: the default's text, a new string. OPTIONS are the row's section's, as read so far. */
  char *(*computed)(const kg_config_t *config, const void *options);
  /* Lands a value instead of the store by OFFSET, for the odd ones; KEY is the name the job gave, or NULL for
   * the default. OPTIONS are the row's section's (for the job's own rows, CONFIG itself); CONFIG gives the
   * properties, the job's fields and the options of the sections read before. Takes ownership of VALUE->s.
   * Returns KG_OK or KG_EINVAL with a message in ERRBUF. On a ".*" row it checks each key under the row instead:
   * called with KEY and VALUE->s (the key's value) before any row is read. */
  int (*set)(const kg_config_t *config, void *options, const kg_property_t *property, const char *key,
             kg_property_value_t *value, char *errbuf);
  const char *part_of; /* the name of the row whose setter reads this one (properties read together); the
                          loop skips it */
  kg_property_mode_t mode;
  const char *doc; /* one line */
  bool secret;     /* its value is a secret, never printed (its name says so: kg_props_is_secret) */
};

/* Where a row's value lands: field F of the options struct TYPE (kg_config_t for the job's own rows). */
#define KG_FIELD_OF(type, f) .offset = offsetof(type, f), .size = sizeof(((type *)0)->f)

/* A section: the rows of one part of kingest and the options struct they land in. kg_config_new makes one
 * zeroed struct of SIZE bytes per section (none for SIZE 0) before any row is read; kg_config_destroy frees the
 * strings of its STRING and PATH rows' fields, then calls CLEAR (may be NULL) for what its setters made, then
 * frees the struct. The job's own section (kg_config_job_section) lands in kg_config_t itself. */
typedef struct kg_config_section kg_config_section_t;
struct kg_config_section {
  const char *name; /* what the section configures, as "kafka" or "writer.csv" */
  const kg_property_t *rows;
  size_t nrows;
  size_t size;
  void (*clear)(void *options);
};

/* The job's own rows: what the phases read, in kg_config_t (config_job.c). */
extern const kg_config_section_t kg_config_job_section;

/* The options of SECTION in CONFIG, as its rows and setters made them (kg_config_t itself for the job's own
 * section); NULL when CONFIG has none (a section of no size, or one not in config_sections.c). Each backend's
 * header wraps it in a typed accessor. */
const void *kg_config_options(const kg_config_t *config, const kg_config_section_t *section);

/* One entry of the order in which sections' rows are read and printed (config_sections.c): the next rows of
 * SECTION, through the row named THROUGH (NULL: all that are left); or, with FAMILY, every section that a family
 * of backends (the writers, the file systems, the reporters) lists and no entry names, in the family's order.
 * FAMILY returns its I-th section, NULL past the last. */
typedef struct {
  const kg_config_section_t *section;
  const char *through;
  const kg_config_section_t *(*family)(size_t i);
} kg_config_span_t;
extern const kg_config_span_t kg_config_spans[];
extern const size_t kg_config_nspans;

/* The rows of every section, in the order they are read (and their errors found) and printed: *COUNT of them. */
const kg_property_t *const *kg_config_properties(size_t *count);

/* The row of NAME (its name, its alias, or a key under a ".*" row), or NULL. */
const kg_property_t *kg_config_property(const char *name);

/* The section row P belongs to. */
const kg_config_section_t *kg_config_section_of(const kg_property_t *p);

/* Parses VALUE as property P would: KEY (the name given) and ORIGIN (file:line) go into the error message.
 * WORK_DIR, when not NULL, replaces a leading "<work dir>" of a path (for the default only). Returns KG_OK
 * with *OUT set (a string in OUT->s is the caller's), or KG_EINVAL with a message in ERRBUF. */
int kg_property_parse(const kg_property_t *p, const char *key, const char *origin, const char *value,
                      const char *work_dir, kg_property_value_t *out, char *errbuf);

/* The name the job gives row P by, its name or its alias, in *KEY; NULL when it gives neither. KG_EINVAL naming
 * both when the job gives both with different values. */
int kg_config_given(const kg_config_t *config, const kg_property_t *p, const char **key, char *errbuf);

/* Where the job gave KEY (file:line), or "job" when it has no origin. */
const char *kg_config_origin(const kg_config_t *config, const char *key);

/* A class name without the blanks around it and the package before its last dot, copied into BUF (SIZE bytes),
 * so that gobblin.x.Foo and org.apache.gobblin.x.Foo both give Foo. */
const char *kg_config_class_name(const char *value, char *buf, size_t size);

/* PATH made absolute against the current folder (a file:// prefix is accepted); a new string. */
char *kg_config_absolute(const char *path);

/* The default of path property NAME for WORK_DIR as given (not made absolute): a new string, or NULL when NAME
 * is no path property with a default under the work dir. */
char *kg_config_default_path(const char *name, const char *work_dir);

/* Prints the property table to OUT: for `kingest properties` (a name line, then its doc and its default
 * indented), or with MARKDOWN as docs/properties.md's table. */
void kg_config_print_properties(FILE *out, bool markdown);

/* Parses a value among ALLOWED (a NULL-terminated list, matched case-insensitively). Returns its index,
 * or -1 and an error naming PROPERTY, ORIGIN, the value and the allowed values. */
int kg_config_parse_enum(const char *property, const char *origin, const char *value, const char *const *allowed,
                         char *errbuf);

#endif
