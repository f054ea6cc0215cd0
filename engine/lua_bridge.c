/* lua_bridge.c: every lua_State of the engine, and every call from C into Lua.
 *
 * Two kinds of state. The job state runs a job.lua once in the main thread and is kept until the process
 * ends: its properties, the check at the start of a run and the CUSTOM estimator all use it, so a script's
 * top level runs there once. Each task owns a state of its own, so tasks run in parallel threads without
 * sharing a Lua lock; the engine makes one lua_pcall per batch, the script pulls records from the batch's FFI
 * array and pushes output back through the kg_ffi_* functions (ffi.c), so no C-to-Lua callback happens per
 * record. Every call into Lua is protected and carries a traceback. Each state also gets gobblin.json's core,
 * the C side of the scripts' JSON codec (jsoncodec.h builds its tape and writes its text; the Lua values are made
 * and read here). A pass-through job's batches are written without a call into Lua. No other file includes
 * lua.h. */
#include "lua_bridge.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsoncodec.h"
#include "lua_alloc.h"

struct kg_lua {
  lua_State *L;
  int process_ref; /* registry references of the processor's functions (gobblin.runtime) */
  int stage_ref;
  int collect_ref;
  bool passthrough; /* the processor writes each payload as it is: batches need no call into Lua */
  bool decodes;     /* the job decodes the records itself (decodeRecord, or a source module) */
  bool transforms;  /* it decodes them or has converters: what it writes is its own */
};

/* Where lua/gobblin is, found once per process: $KINGEST_LUA_PATH when set; else KINGEST_LUA_RELDIR taken from
 * the folder of the running executable (<prefix>/bin/kingest finds <prefix>/share/kingest/lua, wherever the
 * prefix was installed or unpacked) when it holds gobblin/init.lua; else the source tree's lua/ (a binary
 * run from its build folder). Logged at DEBUG with where it came from. */
static char lua_dir_found[PATH_MAX];
static const char *lua_dir_value;
static pthread_once_t lua_dir_once = PTHREAD_ONCE_INIT;

/* The library folder next to the running executable, into lua_dir_found; false when there is none. */
static bool lua_dir_beside_exe(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return false;
  *slash = '\0';
  char candidate[PATH_MAX * 2], init[PATH_MAX + 32];
  snprintf(candidate, sizeof candidate, "%s/%s", exe, KINGEST_LUA_RELDIR);
  if (!realpath(candidate, lua_dir_found)) return false;
  snprintf(init, sizeof init, "%s/gobblin/init.lua", lua_dir_found);
  return access(init, R_OK) == 0;
}

static void lua_dir_resolve(void) {
  const char *env = getenv("KINGEST_LUA_PATH");
  const char *origin;
  if (env && *env) {
    lua_dir_value = env;
    origin = "KINGEST_LUA_PATH";
  } else if (lua_dir_beside_exe()) {
    lua_dir_value = lua_dir_found;
    origin = "beside the executable";
  } else {
    lua_dir_value = KINGEST_LUA_DIR;
    origin = "the source tree";
  }
  KG_DEBUG("Lua library: %s (%s)", lua_dir_value, origin);
}

static const char *lua_dir(void) {
  pthread_once(&lua_dir_once, lua_dir_resolve);
  return lua_dir_value;
}

/* os.exit in a job script: the engine decides how a run ends (a script that ended the process would leave the
 * run RUNNING and report an exit status that means something else), so it is an error like any other. */
static int no_exit(lua_State *L) {
  return luaL_error(L, "os.exit is not allowed in a job script: raise an error instead (error(\"...\")), which "
                       "decode.error.policy handles");
}

/* gobblin.json's core (package.preload["gobblin.json.core"]): the codec of jsoncodec.h between JSON text and Lua
 * values. Decoding builds tables of the right size from the parser's tape; JSON null is a light userdata NULL (the
 * value cjson.null has too), and integers beyond 2^53 that fit 64 bits become int64_t or uint64_t cdata, made by
 * the module's hooks.int64 (C cannot make cdata). Encoding walks a value as cjson does: a table whose keys are
 * all integers from 1 is an array (nil holes as null) unless it is too sparse (the largest key above 10 and above
 * twice the keys), any other is an object (number keys written as strings), an empty table is {}; a cdata value
 * is written by hooks.cdata (64-bit integers), anything else is an error. */
#define KG_LUA_TCDATA 10 /* what lua_type says of a cdata in LuaJIT */
#define KG_JSON_MAX_DEPTH 1000

/* Object keys are cached by their place in the document (the Nth key of each document), since a topic's records
 * mostly share their keys: a key equal to the one cached there is pushed from the cache, without hashing and
 * looking it up again (lua_pushlstring). Keys longer than the slot are not cached. */
#define KG_JSON_KEY_SLOTS 256
#define KG_JSON_KEY_MAX 30
typedef struct {
  uint8_t len; /* 0: empty slot (an empty key is not cached) */
  char bytes[KG_JSON_KEY_MAX];
} json_key_t;

/* A state's codec: its buffers grow to the largest document and are kept. It is malloc memory, in a list of every
 * live one, and a Lua userdata holds a pointer to it: a pointer kept only in LuaJIT's own heap (not malloc
 * memory) would leave the buffers unreachable in LeakSanitizer's eyes. The userdata's __gc frees it. */
typedef struct json_state {
  kg_jc_parser_t parser;
  kg_buf_t out;
  json_key_t keys[KG_JSON_KEY_SLOTS]; /* their strings: upvalue 3's table, at the same place + 1 */
  struct json_state *prev, *next;
} json_state_t;

static pthread_mutex_t json_states_lock = PTHREAD_MUTEX_INITIALIZER;
static json_state_t *json_states;

static int json_state_gc(lua_State *L) {
  json_state_t **box = lua_touserdata(L, 1), *st = *box;
  if (!st) return 0;
  *box = NULL;
  pthread_mutex_lock(&json_states_lock);
  if (st->prev)
    st->prev->next = st->next;
  else
    json_states = st->next;
  if (st->next) st->next->prev = st->prev;
  pthread_mutex_unlock(&json_states_lock);
  kg_jc_parser_free(&st->parser);
  kg_buf_free(&st->out);
  free(st);
  return 0;
}

/* The codec's state, hooks and cached keys: upvalues 1, 2 and 3 of each function of the core. */
static json_state_t *json_state(lua_State *L) { return *(json_state_t **)lua_touserdata(L, lua_upvalueindex(1)); }

/* Calls hook NAME of the module with the NARGS arguments on top of the stack, for one result. */
static void json_hook(lua_State *L, const char *name, int nargs) {
  lua_getfield(L, lua_upvalueindex(2), name);
  if (!lua_isfunction(L, -1)) luaL_error(L, "gobblin.json: hook %s is not set", name);
  lua_insert(L, -1 - nargs);
  lua_call(L, nargs, 1);
}

/* Pushes object key token K, the NTH key of the document: from the key cache when it is the key cached there. */
static void json_push_key(lua_State *L, json_state_t *st, const kg_jc_tok_t *k, size_t nth) {
  const char *bytes = kg_jc_string(&st->parser, k);
  if (nth >= KG_JSON_KEY_SLOTS || k->n == 0 || k->n > KG_JSON_KEY_MAX) {
    lua_pushlstring(L, bytes, k->n);
    return;
  }
  json_key_t *slot = &st->keys[nth];
  if (slot->len == k->n && !memcmp(slot->bytes, bytes, k->n)) {
    lua_rawgeti(L, lua_upvalueindex(3), (int)nth + 1);
    return;
  }
  lua_pushlstring(L, bytes, k->n);
  lua_pushvalue(L, -1);
  lua_rawseti(L, lua_upvalueindex(3), (int)nth + 1);
  slot->len = (uint8_t)k->n;
  memcpy(slot->bytes, bytes, k->n);
}

/* Pushes the value of the tape's token at *POS (and of what it holds), moving *POS past them; *NKEYS counts the
 * object keys met. */
static void json_build(lua_State *L, json_state_t *st, size_t *pos, size_t *nkeys) {
  const kg_jc_parser_t *p = &st->parser;
  const kg_jc_tok_t *t = &p->tape[(*pos)++];
  switch (t->type) {
  case KG_JC_NULL: lua_pushlightuserdata(L, NULL); return;
  case KG_JC_FALSE: lua_pushboolean(L, 0); return;
  case KG_JC_TRUE: lua_pushboolean(L, 1); return;
  case KG_JC_NUMBER: lua_pushnumber(L, t->v.d); return;
  case KG_JC_INT:
  case KG_JC_UINT:
    /* The high and low 32 bits, and whether the value is unsigned. */
    lua_pushnumber(L, (double)(t->v.u >> 32));
    lua_pushnumber(L, (double)(t->v.u & 0xffffffffu));
    lua_pushboolean(L, t->type == KG_JC_UINT);
    json_hook(L, "int64", 3);
    return;
  case KG_JC_STRING:
  case KG_JC_ESCAPED_STRING: lua_pushlstring(L, kg_jc_string(p, t), t->n); return;
  case KG_JC_ARRAY: {
    luaL_checkstack(L, 3, "JSON nested too deep");
    lua_createtable(L, t->n > INT_MAX ? INT_MAX : (int)t->n, 0);
    for (uint32_t i = 1; i <= t->n; i++) {
      json_build(L, st, pos, nkeys);
      lua_rawseti(L, -2, (int)i);
    }
    return;
  }
  case KG_JC_OBJECT: {
    luaL_checkstack(L, 3, "JSON nested too deep");
    lua_createtable(L, 0, t->n > INT_MAX ? INT_MAX : (int)t->n);
    for (uint32_t i = 0; i < t->n; i++) {
      json_push_key(L, st, &p->tape[(*pos)++], (*nkeys)++);
      json_build(L, st, pos, nkeys);
      lua_rawset(L, -3);
    }
    return;
  }
  }
}

/* decode(text [, max_depth]): the value of JSON TEXT; with TEXT nil, of the bytes kg_ffi_json_source staged. */
static int json_decode(lua_State *L) {
  json_state_t *st = json_state(L);
  const char *text;
  size_t len;
  if (lua_type(L, 1) == LUA_TSTRING) {
    text = lua_tolstring(L, 1, &len);
  } else if (lua_isnoneornil(L, 1)) {
    if (!kg_jc_take_source(&text, &len)) return luaL_error(L, "gobblin.json: no bytes to decode");
  } else {
    return luaL_error(L, "gobblin.json.decode expects a string or a record view, got %s", luaL_typename(L, 1));
  }
  lua_Integer max_depth = luaL_optinteger(L, 2, KG_JSON_MAX_DEPTH);
  if (max_depth < 1 || max_depth > KG_JSON_MAX_DEPTH)
    return luaL_error(L, "gobblin.json: max_depth must be from 1 to %d", KG_JSON_MAX_DEPTH);
  char err[KG_ERRLEN];
  if (kg_jc_parse(&st->parser, text, len, (int)max_depth, err)) {
    lua_pushstring(L, err);
    return lua_error(L);
  }
  size_t pos = 0, nkeys = 0;
  json_build(L, st, &pos, &nkeys);
  return 1;
}

static void json_encode_value(lua_State *L, kg_buf_t *out, int idx, int depth);

/* The length of the table at IDX as an array, or -1 when it is to be written as an object. */
static double json_array_length(lua_State *L, int idx) {
  double max = 0, items = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    double k;
    if (lua_type(L, -1) != LUA_TNUMBER || (k = lua_tonumber(L, -1)) < 1 || k != floor(k) || k > INT_MAX) {
      lua_pop(L, 1);
      return -1;
    }
    if (k > max) max = k;
    items++;
  }
  if (items == 0 || (max > 10 && max > 2 * items)) return -1;
  return max;
}

static void json_encode_table(lua_State *L, kg_buf_t *out, int idx, int depth) {
  if (depth > KG_JSON_MAX_DEPTH)
    luaL_error(L, "cannot encode as JSON: tables nested more than %d deep (a table that holds itself?)",
               KG_JSON_MAX_DEPTH);
  luaL_checkstack(L, 4, "JSON nested too deep");
  double n = json_array_length(L, idx);
  if (n >= 0) {
    kg_jc_put(out, '[');
    for (int i = 1; i <= (int)n; i++) {
      if (i > 1) kg_jc_put(out, ',');
      lua_rawgeti(L, idx, i);
      json_encode_value(L, out, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
    }
    kg_jc_put(out, ']');
    return;
  }
  kg_jc_put(out, '{');
  bool first = true;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (!first) kg_jc_put(out, ',');
    first = false;
    size_t klen;
    const char *key;
    int ktype = lua_type(L, -2);
    if (ktype == LUA_TSTRING) {
      key = lua_tolstring(L, -2, &klen);
      kg_jc_write_string(out, key, klen);
    } else if (ktype == LUA_TNUMBER) {
      lua_pushvalue(L, -2); /* a copy: lua_tolstring would change the key lua_next needs */
      key = lua_tolstring(L, -1, &klen);
      kg_jc_write_string(out, key, klen);
      lua_pop(L, 1);
    } else {
      luaL_error(L, "cannot encode as JSON: a table key is a %s (object keys are strings or numbers)",
                 luaL_typename(L, -2));
    }
    kg_jc_put(out, ':');
    json_encode_value(L, out, lua_gettop(L), depth + 1);
    lua_pop(L, 1);
  }
  kg_jc_put(out, '}');
}

static void json_encode_value(lua_State *L, kg_buf_t *out, int idx, int depth) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    kg_jc_write_string(out, s, n);
    return;
  }
  case LUA_TNUMBER:
    if (!kg_jc_write_double(out, lua_tonumber(L, idx)))
      luaL_error(L, "cannot encode as JSON: %s (JSON has no NaN or infinity)", lua_tostring(L, idx));
    return;
  case LUA_TBOOLEAN: kg_buf_append(out, lua_toboolean(L, idx) ? "true" : "false", lua_toboolean(L, idx) ? 4 : 5); return;
  case LUA_TNIL: kg_buf_append(out, "null", 4); return;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) {
      kg_buf_append(out, "null", 4);
      return;
    }
    break;
  case LUA_TTABLE: json_encode_table(L, out, idx, depth); return;
  case KG_LUA_TCDATA: {
    lua_pushvalue(L, idx);
    json_hook(L, "cdata", 1);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (s) {
      kg_buf_append(out, s, n);
      lua_pop(L, 1);
      return;
    }
    lua_pop(L, 1);
    luaL_error(L, "cannot encode as JSON: a cdata value that is not a 64-bit integer");
    return;
  }
  default: break;
  }
  luaL_error(L, "cannot encode as JSON: a %s value", luaL_typename(L, idx));
}

/* Encodes argument 1 into the state's buffer. */
static kg_buf_t *json_encode_arg(lua_State *L) {
  json_state_t *st = json_state(L);
  st->out.len = 0;
  luaL_checkany(L, 1);
  json_encode_value(L, &st->out, 1, 0);
  return &st->out;
}

/* encode(value): its JSON text. */
static int json_encode(lua_State *L) {
  kg_buf_t *out = json_encode_arg(L);
  lua_pushlstring(L, out->data, out->len);
  return 1;
}

/* encode_staged(value): encodes it into the state's buffer for the next kg_ffi_json_emit of this thread (the
 * writer takes the text without a Lua string made of it). */
static int json_encode_staged(lua_State *L) {
  kg_buf_t *out = json_encode_arg(L);
  kg_jc_set_output(out->data, out->len);
  return 0;
}

/* The core module, for package.preload; exported so that the specs can load it from libkingest_ffi.so. */
int kg_lua_open_json(lua_State *L);
int kg_lua_open_json(lua_State *L) {
  lua_newtable(L); /* the module */
  json_state_t **box = lua_newuserdata(L, sizeof *box);
  json_state_t *st = *box = kg_xcalloc(1, sizeof *st);
  pthread_mutex_lock(&json_states_lock);
  st->next = json_states;
  if (json_states) json_states->prev = st;
  json_states = st;
  pthread_mutex_unlock(&json_states_lock);
  lua_newtable(L);
  lua_pushcfunction(L, json_state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_newtable(L); /* hooks */
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "hooks");
  lua_createtable(L, KG_JSON_KEY_SLOTS, 0); /* the key cache's strings */
  static const struct {
    const char *name;
    lua_CFunction fn;
  } fns[] = {{"decode", json_decode}, {"encode", json_encode}, {"encode_staged", json_encode_staged}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, fns[i].fn, 3);
    lua_setfield(L, -5, fns[i].name);
  }
  lua_pop(L, 3);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  return 1;
}

/* A new state with the standard libraries and package.path set to lua/gobblin (lua_dir) and the folder of
 * JOB_FILE (may be NULL); NULL when out of memory. */
static lua_State *state_new(const char *job_file) {
  lua_State *L = kg_lua_state_new();
  if (!L) return NULL;
  luaL_openlibs(L);
  lua_getglobal(L, "os");
  lua_pushcfunction(L, no_exit);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
  kg_buf_t path = {0};
  kg_buf_appendf(&path, "%s/?.lua;%s/?/init.lua;", lua_dir(), lua_dir());
  if (job_file) {
    const char *slash = strrchr(job_file, '/');
    if (slash)
      kg_buf_appendf(&path, "%.*s/?.lua;", (int)(slash - job_file), job_file);
    else
      kg_buf_appendf(&path, "./?.lua;");
  }
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, kg_lua_open_json);
  lua_setfield(L, -2, "gobblin.json.core");
  lua_pop(L, 1);
  lua_getfield(L, -1, "path");
  kg_buf_appendf(&path, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  lua_pushstring(L, path.data);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  kg_buf_free(&path);
  if (job_file) {
    lua_pushstring(L, job_file);
    lua_setfield(L, LUA_REGISTRYINDEX, "kingest.job_file");
  }
  return L;
}

/* LuaJIT shortens a chunk name longer than LUA_IDSIZE to "..." and its tail, so an error in a job file under
 * a long path would not say which file: put the job file's whole path back. */
static const char *full_job_file(lua_State *L, const char *msg) {
  lua_getfield(L, LUA_REGISTRYINDEX, "kingest.job_file");
  const char *path = lua_tostring(L, -1); /* stays alive: the registry holds it */
  lua_pop(L, 1);
  if (!path || !*path || strncmp(msg, "...", 3)) return msg;
  size_t len = strlen(path);
  for (size_t k = len - 1 < LUA_IDSIZE ? len - 1 : LUA_IDSIZE; k > 0; k--)
    if (!strncmp(msg + 3, path + len - k, k) && msg[3 + k] == ':') return lua_pushfstring(L, "%s%s", path, msg + 3 + k);
  return msg;
}

/* What a frame of a traceback is: the engine's runtime (gobblin/runtime.lua, which calls the job's hooks), a C
 * function, the Lua library (the rest of lua/gobblin: converters, sources, and the code it generates, such as an
 * Avro schema's encoder, which is no file), or the job's own code (a file outside lua/gobblin). */
typedef enum { FRAME_RUNTIME, FRAME_C, FRAME_LIBRARY, FRAME_JOB } frame_kind_t;

static frame_kind_t frame_kind(const lua_Debug *ar) {
  if (!strcmp(ar->what, "C")) return FRAME_C;
  if (ar->source[0] != '@') return FRAME_LIBRARY;
  const char *dir = lua_dir();
  size_t n = strlen(dir);
  if (strncmp(ar->source + 1, dir, n) || ar->source[1 + n] != '/') return FRAME_JOB;
  return !strcmp(ar->source + 2 + n, "gobblin/runtime.lua") ? FRAME_RUNTIME : FRAME_LIBRARY;
}

#define KG_TRACEBACK_FRAMES 20

/* The message handler of every call into Lua: the error message, then the stack, the script's frames first, as
 * "\tjob.lua:21 (decodeRecord)". The frame the runtime called (the hook) is named by what the runtime ran: the
 * first upvalue, a string or a function returning one (the processor's stage: decodeRecord, converter N,
 * partition), so that a hook whose frame a tail call replaced is still named (a tail call leaves no frame, and
 * the frame that replaced it carries the name the runtime called it by). The frame of error() itself and the
 * runtime's frames (after the script's) say nothing the message does not; when the stack holds nothing else (a
 * syntax error in the job file, a check of the runtime), the message goes alone. */
static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  msg = full_job_file(L, msg);
  /* A string function given a record view (string.find(rec, ...)) says only "got cdata". */
  if (strstr(msg, "(string expected, got cdata)"))
    msg = lua_pushfstring(L, "%s: " KG_RECORD_NOT_A_STRING "call rec:value() for the payload", msg);
  /* The hook's name. */
  char hook[64] = "";
  if (lua_type(L, lua_upvalueindex(1)) == LUA_TSTRING) {
    snprintf(hook, sizeof hook, "%s", lua_tostring(L, lua_upvalueindex(1)));
  } else if (lua_isfunction(L, lua_upvalueindex(1))) {
    lua_pushvalue(L, lua_upvalueindex(1));
    if (lua_pcall(L, 0, 1, 0) == 0 && lua_isstring(L, -1)) snprintf(hook, sizeof hook, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  /* The frames, from the one that raised the error out. */
  lua_Debug frames[KG_TRACEBACK_FRAMES];
  frame_kind_t kinds[KG_TRACEBACK_FRAMES];
  int n = 0, entry = -1, first_runtime = -1;
  bool more = false, script = false;
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (n == KG_TRACEBACK_FRAMES) {
      more = true;
      break;
    }
    frames[n] = ar;
    lua_getinfo(L, "Sln", &frames[n]);
    kinds[n] = frame_kind(&frames[n]);
    if (n == 0 && kinds[n] == FRAME_C && frames[n].name &&
        (!strcmp(frames[n].name, "error") || !strcmp(frames[n].name, "assert")))
      continue; /* error() itself */
    if (kinds[n] == FRAME_RUNTIME && first_runtime < 0) first_runtime = n;
    if ((kinds[n] == FRAME_JOB || kinds[n] == FRAME_LIBRARY) && first_runtime < 0) entry = n;
    script |= kinds[n] == FRAME_JOB || kinds[n] == FRAME_LIBRARY;
    n++;
  }
  if (!script) {
    lua_pushstring(L, msg);
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, msg);
  luaL_addstring(&b, "\nstack traceback:");
  for (int i = 0; i < n; i++) {
    const lua_Debug *ar = &frames[i];
    char line[512];
    if (kinds[i] == FRAME_C) {
      snprintf(line, sizeof line, "\n\t[C] (%s)", ar->name ? ar->name : "?");
    } else {
      char name[160];
      if (i == entry && *hook)
        snprintf(name, sizeof name, "%s", hook);
      else if (!strcmp(ar->what, "main"))
        snprintf(name, sizeof name, "main chunk");
      else if (kinds[i] == FRAME_RUNTIME)
        snprintf(name, sizeof name, "kingest runtime");
      else if (ar->name)
        snprintf(name, sizeof name, "%s", ar->name);
      else
        snprintf(name, sizeof name, "function at line %d", ar->linedefined);
      /* The job file by the path it was given (short_src may be cut short). */
      const char *src = ar->source[0] == '@' ? ar->source + 1 : ar->short_src;
      snprintf(line, sizeof line, "\n\t%s:%d (%s)", src, ar->currentline, name);
    }
    luaL_addstring(&b, line);
  }
  if (more) luaL_addstring(&b, "\n\t...");
  luaL_pushresult(&b);
  return 1;
}

/* Calls the function on top of the stack with NARGS arguments below it, protected, with a traceback in
 * ERRBUF on failure (see traceback; HOOK names the hook the call runs: a string or a function on top of the stack
 * when HOOK is true, which is taken off). Returns KG_OK or KG_ELUA. Leaves NRESULTS results on success. */
static int protected_call_hook(lua_State *L, int nargs, int nresults, bool hook, char *errbuf) {
  if (hook) {
    lua_pushcclosure(L, traceback, 1);
  } else {
    lua_pushcfunction(L, traceback);
  }
  int base = lua_gettop(L) - nargs - 1;
  lua_insert(L, base);
  int rc = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (rc) {
    kg_fail(errbuf, KG_ELUA, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(no message)");
    lua_pop(L, 1);
    return KG_ELUA;
  }
  return KG_OK;
}

static int protected_call(lua_State *L, int nargs, int nresults, char *errbuf) {
  return protected_call_hook(L, nargs, nresults, false, errbuf);
}

/* A new state for JOB_FILE (NULL: none) with gobblin.runtime loaded and on top of its stack: the one place
 * that loads the runtime. Returns KG_OK, or KG_ENOMEM / KG_ELUA with *OUT NULL. */
static int runtime_state(const char *job_file, lua_State **out, char *errbuf) {
  *out = NULL;
  lua_State *L = state_new(job_file);
  if (!L) return kg_fail(errbuf, KG_ENOMEM, "cannot create a Lua state");
  lua_getglobal(L, "require");
  lua_pushstring(L, "gobblin.runtime");
  if (protected_call(L, 1, 1, errbuf)) {
    kg_lua_state_close(L);
    return KG_ELUA;
  }
  *out = L;
  return KG_OK;
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

/* Adds the properties of the table at IDX to PROPS, their names under PREFIX ("" at the top), with FILE as
 * their origin. */
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

/* The job state: the job file it ran, the state, and registry references of gobblin.runtime, the job table and
 * the job's properties (the table load_properties returned, flattened on request). */
typedef struct {
  char *job_file;
  lua_State *L;
  int runtime_ref;
  int job_ref;
  int props_ref;
} kg_lua_job_t;

static kg_lua_job_t *loaded_job; /* main thread only */

static void job_close(void) {
  if (!loaded_job) return;
  kg_lua_state_close(loaded_job->L);
  free(loaded_job->job_file);
  free(loaded_job);
  loaded_job = NULL;
}

/* The job state of JOB_FILE: the one kept, or a new one that ran the file (kept from then on). */
static int job_state(const char *job_file, kg_lua_job_t **out, char *errbuf) {
  *out = NULL;
  if (loaded_job && !strcmp(loaded_job->job_file, job_file)) {
    *out = loaded_job;
    return KG_OK;
  }
  lua_State *L = NULL;
  int rc = runtime_state(job_file, &L, errbuf);
  if (rc) return rc;
  lua_getfield(L, -1, "load_properties");
  lua_pushstring(L, job_file);
  if ((rc = protected_call(L, 1, 2, errbuf))) {
    kg_lua_state_close(L);
    return rc;
  }
  static bool at_exit;
  if (!at_exit) atexit(job_close); /* LuaJIT's heap is not malloc memory: closing frees what Lua objects hold */
  at_exit = true;
  job_close();
  kg_lua_job_t *job = kg_xcalloc(1, sizeof *job);
  job->job_file = kg_xstrdup(job_file);
  job->L = L;
  job->job_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  job->props_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  job->runtime_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  loaded_job = job;
  *out = job;
  return KG_OK;
}

int kg_lua_job_properties(const char *job_file, kg_props_t *props, char *errbuf) {
  kg_lua_job_t *job;
  int rc = job_state(job_file, &job, errbuf);
  if (rc) return rc;
  lua_State *L = job->L;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, job->props_ref);
  rc = flatten(L, lua_gettop(L), "", job_file, props, errbuf);
  lua_settop(L, top);
  return rc;
}

int kg_lua_job_check(const char *job_file, char *errbuf) {
  if (!job_file) {
    kg_lua_t *probe = NULL;
    int rc = kg_lua_new(NULL, &probe, errbuf);
    kg_lua_destroy(probe);
    return rc;
  }
  kg_lua_job_t *job;
  int rc = job_state(job_file, &job, errbuf);
  if (rc) return rc;
  lua_State *L = job->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, job->runtime_ref);
  lua_getfield(L, -1, "job_processor");
  lua_remove(L, -2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, job->job_ref);
  rc = protected_call(L, 1, 1, errbuf);
  if (!rc) lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0); /* the processor is garbage: what it made goes with it */
  return rc;
}

int kg_lua_job_describe(const char *job_file, kg_buf_t *out, char *errbuf) {
  lua_State *L = NULL;
  kg_lua_job_t *job = NULL;
  int rc;
  if (job_file) {
    if ((rc = job_state(job_file, &job, errbuf))) return rc;
    L = job->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, job->runtime_ref);
  } else if ((rc = runtime_state(NULL, &L, errbuf))) {
    return rc;
  }
  int top = lua_gettop(L) - 1;
  lua_getfield(L, -1, "describe");
  lua_remove(L, -2);
  if (job)
    lua_rawgeti(L, LUA_REGISTRYINDEX, job->job_ref);
  else
    lua_newtable(L);
  rc = protected_call(L, 1, 1, errbuf);
  if (!rc && lua_istable(L, -1)) {
    int list = lua_gettop(L);
    for (int i = 1; i <= (int)lua_objlen(L, list); i++) {
      lua_rawgeti(L, list, i);
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      kg_buf_appendf(out, "%s\t%s\n", lua_tostring(L, -2) ? lua_tostring(L, -2) : "?",
                     lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
      lua_pop(L, 3);
    }
  }
  lua_settop(L, top);
  if (!job) kg_lua_state_close(L);
  return rc;
}

static void set_number(lua_State *L, const char *name, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, name);
}

int kg_lua_job_estimate(const char *job_file, const kg_workunit_t *units, size_t n,
                        const kg_partition_state_t *const *history, double *sizes, char *errbuf) {
  kg_lua_job_t *job;
  int rc = job_state(job_file, &job, errbuf);
  if (rc) return rc;
  lua_State *L = job->L;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, job->job_ref);
  lua_getfield(L, -1, "estimateSize");
  if (!lua_isfunction(L, -1))
    rc = kg_fail(errbuf, KG_EINVAL,
                 "%s: kafka.workunit.size.estimator.type=CUSTOM needs an estimateSize function in the job table",
                 job_file);
  int fn = lua_gettop(L);
  for (size_t i = 0; !rc && i < n; i++) {
    const kg_workunit_t *wu = &units[i];
    lua_pushvalue(L, fn);
    lua_newtable(L);
    lua_pushstring(L, wu->topic);
    lua_setfield(L, -2, "topic");
    set_number(L, "partition", wu->partition);
    set_number(L, "low", (double)wu->low);
    set_number(L, "high", (double)wu->high);
    set_number(L, "range", (double)(wu->high - wu->low));
    set_number(L, "earliest", (double)wu->earliest);
    set_number(L, "latest", (double)wu->latest);
    const kg_partition_state_t *p = history[i];
    if (p) {
      lua_newtable(L);
      set_number(L, "next_offset", (double)p->next_offset);
      if (p->has_stats) {
        set_number(L, "avg_record_millis", p->avg_record_millis);
        set_number(L, "avg_record_size", p->avg_record_size);
        set_number(L, "records_pulled", (double)p->records_pulled);
      }
    } else {
      lua_pushnil(L);
    }
    char err[KG_ERRLEN];
    lua_pushliteral(L, "estimateSize");
    if (protected_call_hook(L, 2, 1, true, err)) {
      rc = kg_fail(errbuf, KG_ELUA, "estimateSize failed for partition %s:%d: %s", wu->topic, wu->partition, err);
      break;
    }
    if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0 || isnan(lua_tonumber(L, -1)))
      rc = kg_fail(errbuf, KG_ELUA, "estimateSize returned %s for partition %s:%d; expected a number >= 0",
                   lua_isnumber(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1), wu->topic, wu->partition);
    else
      sizes[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return rc;
}

int kg_lua_new(const char *job_file, kg_lua_t **out, char *errbuf) {
  *out = NULL;
  lua_State *L = NULL;
  int rc = runtime_state(job_file, &L, errbuf);
  if (rc) return rc;
  lua_getfield(L, -1, "processor");
  if (job_file)
    lua_pushstring(L, job_file);
  else
    lua_pushnil(L);
  if (protected_call(L, 1, 1, errbuf)) {
    kg_lua_state_close(L);
    return KG_ELUA;
  }
  kg_lua_t *lua = kg_xcalloc(1, sizeof *lua);
  lua->L = L;
  lua_getfield(L, -1, "process");
  lua->process_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "stage");
  lua->stage_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "collect");
  lua->collect_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getfield(L, -1, "passthrough");
  lua->passthrough = lua_toboolean(L, -1);
  lua_getfield(L, -2, "decodes");
  lua->decodes = lua_toboolean(L, -1);
  lua_getfield(L, -3, "transforms");
  lua->transforms = lua_toboolean(L, -1);
  lua_pop(L, 5); /* transforms, decodes, passthrough, the processor and the runtime module */
  *out = lua;
  return KG_OK;
}

bool kg_lua_decodes(const kg_lua_t *lua) { return lua && lua->decodes; }

bool kg_lua_transforms(const kg_lua_t *lua) { return lua && lua->transforms; }

void kg_lua_destroy(kg_lua_t *lua) {
  if (!lua) return;
  kg_lua_state_close(lua->L);
  free(lua);
}

/* The processor's work for a pass-through job, without Lua: each payload to the writer as it is, as
 * gobblin.runtime's process would write the record view. An Avro datum that the output must have resolved or
 * encoded again stops the loop with *REST set: the rest of the batch goes to Lua. Returns KG_OK, or KG_ELUA for a
 * write the sink refused (the sink holds the real error). */
static int passthrough(kg_batch_t *batch, bool *rest, char *errbuf) {
  *rest = false;
  while (batch->next < batch->count) {
    const kg_record_t *r = &batch->records[batch->next];
    if (r->datum_ptr && r->schema != batch->output_schema) {
      *rest = true;
      return KG_OK;
    }
    batch->next++;
    int rc = kg_ffi_batch_emit_value(batch, r);
    if (rc)
      return kg_fail(errbuf, KG_ELUA,
                     "the writer failed (error %d) on the output of %s:%d offset %.0f; the batch stops here", rc,
                     r->topic_ptr, r->partition, r->offset);
  }
  return KG_OK;
}

int kg_lua_process(kg_lua_t *lua, kg_batch_t *batch, char *errbuf) {
  if (lua->passthrough) {
    bool rest;
    int rc = passthrough(batch, &rest, errbuf);
    if (rc || !rest) return rc;
  }
  lua_rawgeti(lua->L, LUA_REGISTRYINDEX, lua->process_ref);
  lua_pushlightuserdata(lua->L, batch);
  lua_rawgeti(lua->L, LUA_REGISTRYINDEX, lua->stage_ref);
  return protected_call_hook(lua->L, 1, 0, true, errbuf);
}

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "stopped: the batch ran past script.batch.timeout.ms");
}

void kg_lua_interrupt(kg_lua_t *lua) {
  /* lua_sethook is the one call LuaJIT allows from another thread (or a signal handler). The hook fires
   * at the next call, return or instruction count in interpreted code; a JIT-compiled loop never checks
   * it, which is why the watchdog has a second, harder stage. */
  lua_sethook(lua->L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

void kg_lua_clear_interrupt(kg_lua_t *lua) {
  if (lua_gethook(lua->L)) lua_sethook(lua->L, NULL, 0, 0);
}

void kg_lua_stage(kg_lua_t *lua, char *out, size_t size) {
  char err[KG_ERRLEN];
  snprintf(out, size, "script");
  lua_rawgeti(lua->L, LUA_REGISTRYINDEX, lua->stage_ref);
  if (protected_call(lua->L, 0, 1, err) == KG_OK) {
    if (lua_isstring(lua->L, -1)) snprintf(out, size, "%s", lua_tostring(lua->L, -1));
    lua_pop(lua->L, 1);
  }
}

int kg_lua_collect(kg_lua_t *lua, kg_metrics_t *metrics, char *errbuf) {
  lua_State *L = lua->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, lua->collect_ref);
  int rc = protected_call(L, 0, 1, errbuf);
  if (rc) return rc;
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TNUMBER)
        kg_metrics_add(metrics, lua_tostring(L, -2), lua_tonumber(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return KG_OK;
}
