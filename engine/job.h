/* job.h: one run of a job, end to end (BEHAVIOUR.md section 1). */
#ifndef KG_JOB_H
#define KG_JOB_H

#include <stdio.h>

#include "config.h"

/* Runs the job. Returns KG_OK when every step succeeded and the commit is done; otherwise an error with one
 * line in ERRBUF, and the stored offsets and published output as they were before the run. KG_ELOCKED when
 * another run holds the job lock. */
int kg_job_run(const kg_config_t *config, char *errbuf);

/* `kingest plan`: connects, makes the work units from the stored offsets, estimates and packs them, and
 * writes the tasks with their loads to OUT (a table, or JSON), changing nothing: the state is opened read
 * only, and no lock, output or metrics file is touched. */
int kg_job_plan(const kg_config_t *config, bool json, FILE *out, char *errbuf);

/* Finishes a commit an earlier run recorded but did not complete (see README, "Commit protocol"). */
typedef struct kg_state kg_state_t;
int kg_job_recover(kg_state_t *state, char *errbuf);

#endif
