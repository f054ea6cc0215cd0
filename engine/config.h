/* config.h: the job's typed configuration, read from its properties and validated once, up front. */
#ifndef KG_CONFIG_H
#define KG_CONFIG_H

#include <stdio.h>

#include "props.h"
#include "writer.h"

typedef enum { KG_BOOTSTRAP_EARLIEST = 0, KG_BOOTSTRAP_LATEST, KG_BOOTSTRAP_SKIP } kg_bootstrap_t;
typedef enum { KG_RESET_EARLIEST = 0, KG_RESET_LATEST, KG_RESET_NEAREST, KG_RESET_SKIP } kg_reset_t;
typedef enum { KG_NEW_PARTITION_EARLIEST = 0, KG_NEW_PARTITION_LATEST, KG_NEW_PARTITION_BOOTSTRAP } kg_new_partition_t;
typedef enum { KG_MISSING_WARN = 0, KG_MISSING_FAIL } kg_missing_policy_t;
typedef enum { KG_PATH_TABLENAME = 0, KG_PATH_NAMESPACE_TABLE, KG_PATH_DEFAULT } kg_path_type_t;
typedef enum { KG_ERRORS_SKIP = 0, KG_ERRORS_FAIL, KG_ERRORS_QUARANTINE } kg_error_policy_t;
typedef enum { KG_LIMIT_TIME = 0, KG_LIMIT_RATE, KG_LIMIT_COUNT } kg_limit_type_t;
typedef enum { KG_COMMIT_FULL = 0, KG_COMMIT_SUCCESSFUL } kg_commit_policy_t;
typedef enum { KG_REGISTRY_CONFLUENT = 0, KG_REGISTRY_LINKEDIN } kg_registry_kind_t;
typedef enum { KG_DESERIALIZER_BYTE_ARRAY = 0, KG_DESERIALIZER_CONFLUENT_AVRO } kg_deserializer_t;
/* How a record's payload is framed: raw bytes, or an Avro datum after a magic byte and a schema id (kg_avro.h). */
typedef enum { KG_FRAMING_NONE = 0, KG_FRAMING_CONFLUENT, KG_FRAMING_LINKEDIN } kg_framing_t;
typedef enum { KG_LAUNCHER_LOCAL = 0, KG_LAUNCHER_MAPREDUCE } kg_launcher_t;
typedef enum { KG_ESTIMATOR_AVG_RECORD_TIME = 0, KG_ESTIMATOR_AVG_RECORD_SIZE, KG_ESTIMATOR_CUSTOM } kg_estimator_t;

/* Every field is owned by the config (freed by kg_config_destroy). Paths are absolute. */
typedef struct {
  kg_props_t *props; /* all properties as given, owned */
  char *job_file;    /* the job file's path as given */
  bool job_is_lua;   /* job.lua (true) or a .pull/.properties file */
  char *job_name;
  char *brokers;         /* kafka.brokers */
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
  char *output_format; /* writer.output.format, lower case */
  char *file_ext;      /* the output files' extension: the format, and .gz or .zst for a compressed text file */
  char *delimiter;     /* simple.writer.delimiter bytes (may be empty) */
  size_t delimiter_len;
  bool prepend_size;                /* simple.writer.prepend.size */
  kg_codec_t codec;                 /* writer.codec.type (Avro) */
  int deflate_level;                /* writer.deflate.level, 0-9 */
  char *avro_schema;                /* writer.avro.schema (or schema), or the text of writer.avro.schema.file; NULL
                                       unless avro, and when the output takes each topic's latest schema */
  size_t avro_schema_len;           /* its bytes */
  kg_csv_options_t csv;             /* writer.csv.*: the CSV writer's columns (owned) and settings; no columns
                                       unless the output is csv */
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
  bool metrics_enabled;             /* metrics.reporting.file.enabled */
  char *metrics_dir;                /* metrics.log.dir */
  char *metrics_suffix;             /* metrics.reporting.file.suffix, "" for none */
  kg_launcher_t launcher;           /* launcher.type */
  char *mr_hadoop;                  /* mr.hadoop.command */
  char *mr_streaming_jar;           /* mr.streaming.jar, NULL for the one under $HADOOP_HOME */
  char *mr_kingest;                 /* mr.kingest.path, NULL for this binary */
  int mr_attempts;                  /* mr.map.max.attempts */
  char *mr_args;                    /* mr.streaming.args */
  int64_t metrics_interval_ms;
  char *prom_file;                  /* metrics.reporting.prometheus.file: absolute, "" for none */
  char *pushgateway_url;            /* metrics.reporting.prometheus.pushgateway.url without a trailing /, "" for none */
  int64_t pushgateway_timeout_ms;   /* metrics.reporting.prometheus.pushgateway.timeout.ms */
  int64_t metadata_timeout_ms;      /* kafka.metadata.timeout.ms: broker discovery and offset queries */
  int64_t fetch_timeout_ms;         /* kafka.fetch.timeout.ms: longest wait for the next record of a range */
  int batch_size;                   /* kafka.fetch.batch.size: records handed to Lua per call */
  kg_error_policy_t decode_errors;  /* decode.error.policy */
  int64_t skip_error_limit;         /* task.skip.error.records, -1 unlimited; see skip_error_limit_set */
  bool skip_error_limit_set;        /* given: bounds every script failure; not given: converters 0, decode unlimited */
  double error_max_ratio;           /* decode.error.max.ratio: most failed records per record a task may read */
  bool fail_on_partial;             /* job.fail.on.partial: a run that stopped short of a high watermark fails */
  int64_t progress_interval_ms;     /* progress.interval.ms: progress log lines when stderr is not a terminal */
  int64_t batch_timeout_ms;         /* script.batch.timeout.ms: longest one call into the script may run */
  char *registry_url;               /* kafka.schema.registry.url, "" when not given */
  kg_registry_kind_t registry_kind; /* kafka.schema.registry.class; Confluent's when not given */
  char *registry_subject_suffix;    /* kafka.schema_registry.confluent.schema_name_suffix */
  int64_t registry_cache_size;      /* kafka.schema.registry.max.cache.size: entries */
  int64_t registry_cache_expire_min;  /* kafka.schema.registry.cache.expire.after.write.min: minutes, 0: none kept */
  int64_t registry_retry_timeout_ms;  /* kafka.schema.registry.retry.timeout.ms: how long a lookup tries again */
  int64_t roll_bytes;                 /* writer.file.max.size: bytes after which a file rolls, 0 for no limit */
  int64_t roll_records;               /* writer.file.max.records: records after which a file rolls, 0 for none */
  struct kg_partitioner *partitioner; /* writer.partitioner.class: time folders (partition.h), NULL for none */
  kg_deserializer_t deserializer;     /* kafka.deserializer.type */
  kg_framing_t avro_framing;          /* from kafka.deserializer.type and source.class: what payloads hold */
} kg_config_t;

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

/* The property table: one row per property kingest knows, read by one loop in kg_config_new and printed by
 * `kingest properties` (and, with --markdown, as docs/properties.md's table). A row says how a value is parsed (TYPE,
 * with MIN/MAX or NAMES), what applies when the job does not give it (DEF, parsed by the same code as a user's
 * value; or COMPUTED), where the value lands in kg_config_t (OFFSET and SIZE, or SET for the odd ones) and
 * what it means (DOC, one line; `code` and [links](#anchors) to the manual's headings are Markdown). */
typedef enum {
  KG_PROP_STRING, /* char *: the value as given */
  KG_PROP_PATH,   /* char *: absolute (against the current folder; a file:// prefix is accepted); the default
                     may start with "<work dir>/" */
  KG_PROP_BOOL,   /* bool: true or false, any case */
  KG_PROP_INT,    /* int or int64_t (by SIZE): a whole number from MIN to MAX */
  KG_PROP_DOUBLE, /* double: a number from DMIN to DMAX */
  KG_PROP_ENUM,   /* int (or an enum type): the index of the value in NAMES, matched case-insensitively */
  KG_PROP_CLASS,  /* nothing stored: a class name whose last dotted component is one of NAMES */
  KG_PROP_FS_URI, /* nothing stored: a file system URI, which must be file: in standalone mode */
} kg_property_type_t;

typedef enum {
  KG_MODE_BOTH = 0,  /* read in every mode */
  KG_MODE_MAPREDUCE, /* MapReduce only: accepted and ignored by a standalone run */
} kg_property_mode_t;

/* A parsed value: S is a new string (STRING and PATH), owned by whoever receives it. */
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
  size_t offset, size;      /* the field of kg_config_t the value lands in; SIZE 0: none */
  bool empty_is_default;    /* an empty value means the default */
  char *(*computed)(const kg_config_t *config); /* with DEF NULL: the default's text, a new string */
  /* Lands a value instead of the store by OFFSET, for the odd ones; KEY is the name the job gave, or NULL for
   * the default. Takes ownership of VALUE->s. Returns KG_OK or KG_EINVAL with a message in ERRBUF. */
  int (*set)(kg_config_t *config, const kg_property_t *property, const char *key, kg_property_value_t *value,
             char *errbuf);
  const char *part_of; /* the name of the row whose setter reads this one (properties read together); the
                          loop skips it */
  kg_property_mode_t mode;
  const char *doc; /* one line */
};

/* The property table, in the order its rows are read (and their errors found) and printed. */
const kg_property_t *kg_config_properties(size_t *count);

/* The row of NAME (its name, its alias, or a key under a ".*" row), or NULL. */
const kg_property_t *kg_config_property(const char *name);

/* Parses VALUE as property P would: KEY (the name given) and ORIGIN (file:line) go into the error message.
 * WORK_DIR, when not NULL, replaces a leading "<work dir>" of a path (for the default only). Returns KG_OK
 * with *OUT set (a string in OUT->s is the caller's), or KG_EINVAL with a message in ERRBUF. */
int kg_property_parse(const kg_property_t *p, const char *key, const char *origin, const char *value,
                      const char *work_dir, kg_property_value_t *out, char *errbuf);

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

/* The writer's file system URI: writer.fs.uri, else fs.uri, else file:///; *PROPERTY names the one it came from
 * (fs.uri for the default). */
const char *kg_config_writer_fs(const kg_config_t *config, const char **property);

#endif
