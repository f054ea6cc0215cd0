/* job.h: one run of a job, end to end (docs/behaviour.md, section 1). */
#ifndef KG_JOB_H
#define KG_JOB_H

#include "config.h"
#include "packer.h"
#include "source.h"
#include "writer.h"

/* How a run that returned KG_OK ended. */
typedef enum {
  KG_OUTCOME_SUCCESSFUL = 0, /* every partition reached its high watermark (or an extract limit stopped it) */
  KG_OUTCOME_PARTIAL,        /* committed, but fetch errors stopped some partitions short of their high watermark, or
                                the brokers gave no offsets for some, which were not pulled */
  KG_OUTCOME_STOPPED,        /* SIGTERM or SIGINT: what was completely written is committed, the rest waits */
} kg_outcome_t;

/* Runs the job. Returns KG_OK when every step succeeded and the commit is done, with *OUTCOME saying how it
 * ended (for a PARTIAL run, which partitions and why in ERRBUF); otherwise an error with one line in ERRBUF, and the
 * stored offsets and published output as they were before the run. KG_ELOCKED when another run holds the job lock;
 * KG_EBUDGET when a task failed because more records failed in the script than task.skip.error.records or
 * decode.error.max.ratio allow; a failed task's own error otherwise, KG_EFAILED when it has none. */
int kg_job_run(const kg_config_t *config, kg_outcome_t *outcome, char *errbuf);

/* The checks a run makes of its job before it takes the lock or reaches a broker, a file system or the schema
 * registry, and those it makes later without needing any of them, all at once (`kingest validate`, `kingest
 * test`): the file systems and the writer the properties name (*WRITER, may be NULL), MapReduce's settings, the
 * job script as a task loads it (its hooks, its source, the modules it requires as it loads), the topic
 * selection's patterns, the Kafka client's settings, a CUSTOM estimator's estimateSize, and the registry URL of
 * a job that reads Avro. CONFIG has passed kg_config_new. Returns KG_OK, or the error the run would stop with. */
int kg_job_check(const kg_config_t *config, const kg_writer_ops_t **writer, char *errbuf);

/* What `kingest plan` shows: the work units a run would make, and the tasks they pack into. */
typedef struct {
  kg_plan_t plan;     /* the discover phase's work units, their sizes estimated */
  kg_group_t *groups; /* the tasks (kg_pack), each pointing to units of PLAN */
  size_t ngroups;
} kg_job_plan_t;

/* `kingest plan`: connects, makes the work units from the stored offsets, estimates and packs them into *OUT
 * (clear it with kg_job_plan_clear), changing nothing: the state is opened read only, and no lock, output or
 * metrics file is touched. On failure *OUT holds nothing to clear. */
int kg_job_plan(const kg_config_t *config, kg_job_plan_t *out, char *errbuf);
void kg_job_plan_clear(kg_job_plan_t *plan);

#endif
