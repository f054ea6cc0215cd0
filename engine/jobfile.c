/* jobfile.c: reading a job file into properties: a job.lua script, or a Gobblin properties file.
 *
 * A job.lua returns a table. Its string, number and boolean values become properties; nested tables
 * without array items spell dotted names ({kafka = {brokers = "..."}} is kafka.brokers); an array of
 * strings becomes a comma-separated list. The job's code (decodeRecord and the other keys gobblin.runtime
 * lists in HOOKS) stays in the script, which every task loads again in its own Lua state: gobblin.runtime
 * checks it and hands over the rest (load_properties), so a function here is a key nothing would call. */
#include <lauxlib.h>
#include <lua.h>
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

/* Writes the value at IDX as a property string; false for a type that cannot be a property. */
static bool scalar_to_string(lua_State *L, int idx, kg_buf_t *out) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    kg_buf_append(out, s, n);
    return true;
  }
  case LUA_TNUMBER: {
    double d = lua_tonumber(L, idx);
    if (d > -9e18 && d < 9e18 && d == (double)(long long)d) /* the range first: a larger cast is undefined */
      kg_buf_appendf(out, "%lld", (long long)d);
    else
      kg_buf_appendf(out, "%.17g", d);
    return true;
  }
  case LUA_TBOOLEAN: kg_buf_appendf(out, "%s", lua_toboolean(L, idx) ? "true" : "false"); return true;
  default: return false;
  }
}

static int flatten(lua_State *L, int idx, const char *prefix, const char *file, kg_props_t *props, char *errbuf) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int vidx = lua_gettop(L);
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      if (!*prefix) continue; /* array items of the top level are not properties */
      return kg_fail(errbuf, KG_EINVAL, "%s: property %s: mixes list items and named keys", file, prefix);
    }
    char *key = *prefix ? kg_xasprintf("%s.%s", prefix, lua_tostring(L, -2)) : kg_xstrdup(lua_tostring(L, -2));
    int type = lua_type(L, vidx);
    int rc = KG_OK;
    if (type == LUA_TTABLE) {
      size_t len = lua_objlen(L, vidx);
      if (len > 0) {
        kg_buf_t list = {0};
        kg_buf_append(&list, "", 0);
        for (size_t i = 1; i <= len && rc == KG_OK; i++) {
          lua_rawgeti(L, vidx, (int)i);
          if (i > 1) kg_buf_append(&list, ",", 1);
          if (!scalar_to_string(L, -1, &list))
            rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s: list item %zu is a %s, expected a string or number", file,
                         key, i, luaL_typename(L, -1));
          lua_pop(L, 1);
        }
        if (rc == KG_OK && list.len) kg_props_set(props, key, list.data, file);
        kg_buf_free(&list);
      } else {
        rc = flatten(L, vidx, key, file, props, errbuf);
      }
    } else {
      kg_buf_t value = {0};
      kg_buf_append(&value, "", 0);
      if (scalar_to_string(L, vidx, &value))
        kg_props_set(props, key, value.data, file);
      else
        rc = kg_fail(errbuf, KG_EINVAL, "%s: property %s is a %s, expected a string, number or boolean", file, key,
                     luaL_typename(L, vidx));
      kg_buf_free(&value);
    }
    free(key);
    lua_pop(L, 1);
    if (rc) {
      lua_pop(L, 1);
      return rc;
    }
  }
  return KG_OK;
}

static int load_lua(const char *path, kg_props_t *props, char *errbuf) {
  FILE *f = fopen(path, "r");
  if (!f) return kg_fail(errbuf, KG_EIO, "%s: cannot read job file: %s", path, strerror(errno));
  fclose(f);
  lua_State *L = kg_lua_state_new(path);
  if (!L) return kg_fail(errbuf, KG_ENOMEM, "cannot create a Lua state");
  lua_getglobal(L, "require");
  lua_pushstring(L, "gobblin.runtime");
  int rc = kg_lua_pcall(L, 1, 1, errbuf);
  if (rc == KG_OK) {
    lua_getfield(L, -1, "load_properties");
    lua_pushstring(L, path);
    rc = kg_lua_pcall(L, 1, 1, errbuf);
  }
  if (rc == KG_OK) rc = flatten(L, lua_gettop(L), "", path, props, errbuf);
  if (rc == KG_OK) rc = kg_props_resolve(props, errbuf);
  lua_close(L);
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
