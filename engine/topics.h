/* topics.h: topic selection: which of the broker's topics a job pulls (topic.whitelist, topic.blacklist), the
 * topics named in a list property, and the nearest name for "did you mean". */
#ifndef KG_TOPICS_H
#define KG_TOPICS_H

#include "kg_common.h"

typedef struct kg_topic_filter kg_topic_filter_t;

/* Compiles comma-separated whitelist and blacklist regexes (each must match the whole name). An empty
 * whitelist selects every topic. Returns KG_EINVAL naming the property and the bad pattern. */
int kg_topic_filter_new(const char *whitelist, const char *blacklist, kg_topic_filter_t **out, char *errbuf);
void kg_topic_filter_destroy(kg_topic_filter_t *filter);
/* True when TOPIC is to be pulled. Internal topics (__*) only when whitelisted by exact name. */
bool kg_topic_filter_match(const kg_topic_filter_t *filter, const char *topic);

/* True when TOPIC is named in LIST (comma-separated exact names, or "all"). */
bool kg_topic_in_list(const char *list, const char *topic);

/* True when PATTERN (one topic.whitelist entry) is a plain topic name: only the characters a topic name may
 * have (letters, digits, '.', '_', '-'), so that it can only mean that one topic. */
bool kg_topic_is_name(const char *pattern);
/* The name among NAMES[0..N) closest to NAME, when within a third of its length (at least 1, at most 3) edits;
 * else NULL. For "did you mean". */
const char *kg_topic_nearest(const char *name, const char *const *names, size_t n);
/* Calls FN for each topic.whitelist entry of FILTER that is a plain topic name (kg_topic_is_name). */
void kg_topic_filter_names(const kg_topic_filter_t *filter, void (*fn)(void *ctx, const char *name), void *ctx);

#endif
