/* partition.h: time-partitioned output paths (Gobblin's TimeBasedWriterPartitioner): a record's output goes to
 * <FP>/<prefix>/<its time, formatted by a pattern>/<suffix>, so that a late record lands in its own hour's folder.
 *
 * The pattern is Joda-Time's DateTimeFormat, as Gobblin's writer.partition.pattern: letters stand for fields
 * (yyyy, MM, dd, HH, ...), text in single quotes and every other character is kept. The time is taken in a time
 * zone (writer.partition.timezone) whose offsets are read once, when the partitioner is made, from the system's
 * time zone database (through the C library), so that formatting in tasks touches no global state. */
#ifndef KG_PARTITION_H
#define KG_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kg_common.h"

typedef struct kg_partitioner kg_partitioner_t;

/* Gobblin's writer.partition.granularity, and the pattern each stands for when no pattern is given. */
typedef enum {
  KG_GRANULARITY_MINUTE = 0,
  KG_GRANULARITY_HOUR,
  KG_GRANULARITY_DAY,
  KG_GRANULARITY_MONTH,
  KG_GRANULARITY_YEAR
} kg_granularity_t;
const char *kg_granularity_pattern(kg_granularity_t granularity);

/* A partitioner for PATTERN in time zone ZONE (an IANA name such as "America/Los_Angeles", or "UTC"), with PREFIX
 * and SUFFIX (may be empty) around the formatted time. KG_EINVAL with ERRBUF naming the problem: an unknown
 * pattern letter (and its position), an unterminated quote, a pattern that makes no folder, a zone the system does
 * not know. Not thread-safe while it runs (it reads the zone through the C library's TZ): call it before threads
 * start. */
int kg_partitioner_new(const char *pattern, const char *zone, const char *prefix, const char *suffix,
                       kg_partitioner_t **out, char *errbuf);
void kg_partitioner_free(kg_partitioner_t *p);

/* The folder of time TIME_MS (milliseconds since the epoch) into OUT (SIZE bytes): prefix/formatted/suffix,
 * without a leading or trailing '/'. Thread-safe. Returns the length written (truncated to SIZE - 1). */
size_t kg_partitioner_path(const kg_partitioner_t *p, int64_t time_ms, char *out, size_t size);

/* The time partitioner's rows (partition.c): writer.partitioner.class and its writer.partition.* rows, from which
 * one partitioner is made when the job's properties are read (before any thread starts). */
typedef struct {
  kg_partitioner_t *partitioner; /* NULL for none; owned */
} kg_partition_options_t;
extern const kg_config_section_t kg_partition_section;
/* The job's partitioner, NULL when it has none. */
const kg_partitioner_t *kg_partitioner_of(const kg_config_t *config);

#endif
