/* jobfile.c: reading a job file into properties: a job.lua script, or a Gobblin properties file.
 *
 * A job.lua returns a table. Its string, number and boolean values become properties; nested tables
 * without array items spell dotted names ({kafka = {brokers = "..."}} is kafka.brokers); an array of
 * strings becomes a comma-separated list (kg_lua_job_properties). The job's code (decodeRecord and the other
 * keys gobblin.runtime lists in HOOKS) stays in the script, which every task loads again in its own Lua state:
 * gobblin.runtime checks it and hands over the rest (load_properties), so a function here is a key nothing
 * would call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lua_bridge.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

static int load_lua(const char *path, kg_props_t *props, char *errbuf) {
  FILE *f = fopen(path, "r");
  if (!f) return kg_fail(errbuf, KG_EIO, "%s: cannot read job file: %s", path, strerror(errno));
  fclose(f);
  int rc = kg_lua_job_properties(path, props, errbuf);
  if (rc == KG_OK) rc = kg_props_resolve(props, errbuf);
  return rc;
}

int kg_jobfile_load(const char *path, kg_props_t **out, bool *is_lua, char *errbuf) {
  kg_props_t *props = kg_props_new();
  *is_lua = ends_with(path, ".lua");
  int rc = *is_lua ? load_lua(path, props, errbuf) : kg_props_load_file(props, path, errbuf);
  if (rc) {
    kg_props_destroy(props);
    props = NULL;
  }
  *out = props;
  return rc;
}
