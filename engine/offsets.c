/* offsets.c: where each partition starts: the stored offset, the offset policies, and the names of the start
 * reasons. */
#include "offsets.h"

#include <string.h>

kg_offset_decision_t kg_offset_decide(kg_bootstrap_t bootstrap, kg_reset_t reset, bool move_to_latest, bool has_stored,
                                      int64_t stored, int64_t earliest, int64_t latest) {
  kg_offset_decision_t d = {.pull = true, .low = latest, .reason = KG_START_PREVIOUS};
  if (move_to_latest) {
    d.reason = KG_START_MOVE_TO_LATEST;
    d.low = latest;
    return d;
  }
  if (!has_stored) {
    d.reason = KG_START_BOOTSTRAP;
    switch (bootstrap) {
    case KG_BOOTSTRAP_EARLIEST: d.low = earliest; break;
    case KG_BOOTSTRAP_LATEST: d.low = latest; break;
    case KG_BOOTSTRAP_SKIP: d.pull = false; break;
    }
    return d;
  }
  if (stored >= earliest && stored <= latest) {
    d.low = stored;
    return d;
  }
  d.reason = KG_START_RESET;
  switch (reset) {
  case KG_RESET_EARLIEST: d.low = earliest; break;
  case KG_RESET_LATEST: d.low = latest; break;
  case KG_RESET_NEAREST: d.low = stored < earliest ? earliest : latest; break;
  case KG_RESET_SKIP: d.pull = false; break;
  }
  return d;
}

kg_offset_decision_t kg_offset_plan(kg_offset_policy_t policy, const kg_partition_facts_t *f) {
  kg_offset_decision_t d = {.pull = true, .low = f->latest};
  if (!f->move_to_latest && !f->has_stored && f->topic_known && policy.new_partition != KG_NEW_PARTITION_BOOTSTRAP) {
    d.reason = KG_START_NEW_PARTITION;
    d.low = policy.new_partition == KG_NEW_PARTITION_EARLIEST ? f->earliest : f->latest;
    return d;
  }
  if (!f->move_to_latest && f->has_stored && f->recreated) {
    d.reason = KG_START_RECREATED;
    switch (policy.reset) {
    case KG_RESET_EARLIEST:
    case KG_RESET_NEAREST: d.low = f->earliest; break;
    case KG_RESET_LATEST: d.low = f->latest; break;
    case KG_RESET_SKIP: d.pull = false; break;
    }
    return d;
  }
  return kg_offset_decide(policy.bootstrap, policy.reset, f->move_to_latest, f->has_stored, f->stored, f->earliest,
                          f->latest);
}

const char *kg_start_reason_name(kg_start_reason_t r) {
  switch (r) {
  case KG_START_PREVIOUS: return "previous";
  case KG_START_BOOTSTRAP: return "bootstrap";
  case KG_START_MOVE_TO_LATEST: return "move-to-latest";
  case KG_START_RESET: return "reset";
  case KG_START_NEW_PARTITION: return "new-partition";
  case KG_START_RECREATED: return "recreated";
  }
  return "?";
}

bool kg_start_reason_parse(const char *name, kg_start_reason_t *out) {
  for (int r = KG_START_PREVIOUS; r <= KG_START_RECREATED; r++)
    if (!strcmp(name, kg_start_reason_name((kg_start_reason_t)r))) {
      *out = (kg_start_reason_t)r;
      return true;
    }
  return false;
}
