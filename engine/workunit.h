/* workunit.h: work units, one partition's share of a run with its watermarks, and their JSON form. */
#ifndef KG_WORKUNIT_H
#define KG_WORKUNIT_H

#include "buf.h"
#include "offsets.h"

/* One partition's share of a run. */
typedef struct {
  char *topic; /* owned */
  int32_t partition;
  int64_t low;      /* first offset to pull */
  int64_t high;     /* pull up to here, exclusive: the broker's latest at planning time */
  int64_t earliest; /* the broker's range at planning time */
  int64_t latest;
  bool has_stored;
  int64_t stored;
  kg_start_reason_t reason;
  double est_size; /* the size estimate the packer uses */
} kg_workunit_t;

void kg_workunit_clear(kg_workunit_t *wu);

/* Appends WU's JSON form to OUT: {"topic", "partition", "low", "high", "range", "earliest", "latest", "stored" (null
 * when none), "start", "estimatedSize"}. EXACT writes the size so that it reads back bit for bit (the form a work
 * unit travels in between the phases of a run); otherwise with 6 significant digits, as `kingest plan --json`
 * shows it. */
void kg_workunit_json(kg_buf_t *out, const kg_workunit_t *wu, bool exact);

typedef struct kg_json kg_json_t;
/* Reads a work unit back from its JSON form V into *WU (its topic a new string: kg_workunit_clear frees it).
 * KG_EINVAL names WHAT and the member that is missing or wrong; *WU is then cleared. */
int kg_workunit_from_json(const kg_json_t *v, const char *what, kg_workunit_t *wu, char *errbuf);

#endif
