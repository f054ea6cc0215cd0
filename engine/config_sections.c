/* config_sections.c: the sections whose rows make the job's properties, in the order the rows are read and printed.
 *
 * Each entry takes the next rows of a section (the job's own, config_job.c, or a backend's, in the backend's
 * file), through the row it names or to the section's end; the order is the one `kingest properties` and the
 * README's table show, and the one in which the rows are read, so that a row that depends on another (the codec
 * on the output's format, the Avro schema on the input's framing, the CSV columns on the Avro schema) comes after
 * it. A family entry takes every section that a family's registry lists (writer.c's writers, fs.c's file systems,
 * report.c's reporters) and no entry here names: a new writer, file system or reporter brings its rows with its
 * row in its family's registry. A backend that no family lists (the Kafka source, the registry, the partitioner,
 * the Hadoop launcher) has its own entry here. */
#include "config.h"
#include "fs.h"
#include "kafka_source.h"
#include "mapreduce.h"
#include "partition.h"
#include "avro_registry.h"
#include "report.h"
#include "writer.h"

const kg_config_span_t kg_config_spans[] = {
    {.section = &kg_config_job_section, .through = "log.format"},
    {.section = &kg_kafka_section, .through = "kafka.brokers"},
    {.section = &kg_config_job_section, .through = "topic.missing.policy"},
    {.section = &kg_kafka_section},
    {.section = &kg_registry_section},
    {.section = &kg_config_job_section, .through = "launcher.type"},
    {.section = &kg_mr_section, .through = "mr.streaming.args"},
    {.section = &kg_config_job_section, .through = "writer.destination.type"},
    {.section = &kg_fs_section},
    {.family = kg_fs_section_at},
    {.section = &kg_config_job_section, .through = "writer.file.max.records"},
    {.section = &kg_partition_section},
    {.section = &kg_config_job_section, .through = "extract.namespace"},
    {.section = &kg_writer_simple_section},
    {.section = &kg_writer_section},
    {.section = &kg_writer_avro_section},
    {.section = &kg_writer_csv_section},
    {.family = kg_writer_section_at},
    {.section = &kg_config_job_section, .through = "job.lock.enabled"},
    {.section = &kg_reporter_file_section},
    {.section = &kg_config_job_section, .through = "metrics.report.interval"},
    {.section = &kg_reporter_prom_section},
    {.family = kg_report_section_at},
    {.section = &kg_config_job_section},
    {.section = &kg_mr_section},
};
const size_t kg_config_nspans = sizeof kg_config_spans / sizeof kg_config_spans[0];
