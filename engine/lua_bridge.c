/* lua_bridge.c: every lua_State of the engine, and every call from C into Lua.
 *
 * Two kinds of state. The job state runs a job.lua once in the main thread and is kept until the process
 * ends: its properties, the check at the start of a run and the CUSTOM estimator all use it, so a script's
 * top level runs there once. Each task owns a state of its own, so tasks run in parallel threads without
 * sharing a Lua lock; the engine makes one lua_pcall per batch, the script pulls records from the batch's FFI
 * array and pushes output back through the kg_ffi_* functions (ffi.c), so no C-to-Lua callback happens per
 * record. Every call into Lua is protected and carries a traceback. Each state also gets gobblin.json's core,
 * the C side of the scripts' JSON codec (json.h builds its tape and writes its text; the Lua values are made
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

#include "buf.h"
#include "json.h"
#include "log.h"
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

/* gobblin.json's core (package.preload["gobblin.json.core"]): the codec of json.h between JSON text and Lua
 * values. Decoding builds tables of the right size from the parser's tape; JSON null is a light userdata NULL (the
 * value cjson.null has too), and integers beyond 2^53 that fit 64 bits become int64_t or uint64_t cdata, made by
 * the module's hooks.int64 (C cannot make cdata). Each decoded array gets the metatable array_mt, each object the
 * metatable of its shape (its keys in the document's order; object_mt for {}), so that encoding writes them back
 * as they came: [] as [], {} as {}, the keys of an object in their order.
 *
 * Encoding reads a table's metatable: __jsontype "array" or "object" says what the table is, empty or not;
 * __jsonorder lists the keys an object writes first, in that order (any other key follows, sorted byte-wise);
 * __jsonavro says how the strings of a value decoded from Avro are written (bytes, fixed and decimals) and has NaN
 * and the infinities written as strings. A table without such a metatable is written as cjson writes it: one whose
 * keys are all integers from 1 is an array (nil holes as null) unless it is too sparse (the largest key above 10
 * and above twice the keys), any other is an object (number keys written as strings, in lua_next's order), an
 * empty table is {}. A cdata value is written by hooks.cdata (64-bit integers), anything else is an error. */
#define KG_LUA_TCDATA     10 /* what lua_type says of a cdata in LuaJIT */
#define KG_JSON_MAX_DEPTH 1000

/* Object keys are cached by their place in the document (the Nth key of each document), since a topic's records
 * mostly share their keys: a key equal to the one cached there is pushed from the cache, without hashing and
 * looking it up again (lua_pushlstring). Keys longer than the slot are not cached. Each string a slot is given gets
 * an id of the state's, which names that string for as long as the slot holds it. */
#define KG_JSON_KEY_SLOTS 256
#define KG_JSON_KEY_MAX   30
typedef struct {
  uint8_t len; /* 0: empty slot (an empty key is not cached) */
  uint32_t id; /* the string's id (never 0) */
  char bytes[KG_JSON_KEY_MAX];
} json_key_t;

/* The shapes of decoded objects, cached by the ids of their keys: an object whose keys all came through the key
 * cache, with the ids of the shape cached in the slot those ids hash to, gets that shape's metatable (upvalue 5, at
 * the slot's place + 1) without its keys being read again. Any other object's shape is found by the text of its keys
 * in the table of live shapes (weak values), and made when there is none; the slot then holds it. */
#define KG_JSON_SHAPE_SLOTS 128
typedef struct {
  uint32_t n;    /* keys; 0: an empty slot */
  uint32_t cap;  /* of ids */
  uint32_t *ids; /* malloc */
} json_shape_t;

/* What the encoder read in a metatable, cached by its address for the next tables that have it (a topic's records
 * mostly share a few): upvalue 6 holds each cached metatable at the slot's place * 3 + 1, so that its address is
 * not another's while it is cached, its __jsonorder at + 2 and its __jsonavro.fields at + 3. A metatable's fields
 * are read when the encoder first meets it. */
#define KG_JSON_MT_SLOTS 64
typedef struct {
  const void *mt; /* NULL: an empty slot */
  uint8_t type;   /* json_type_t */
  bool order;     /* it has a __jsonorder */
  bool strings;   /* ... whose keys are all strings */
  bool avro;      /* it has a __jsonavro */
  bool fields;    /* its __jsonavro has fields */
  uint8_t items;  /* its __jsonavro's items: json_kind_t's as, and its scale */
  long scale;
} json_mtinfo_t;

/* A state's codec: its buffers grow to the largest document and are kept. It is malloc memory, in a list of every
 * live one, and a Lua userdata holds a pointer to it: a pointer kept only in LuaJIT's own heap (not malloc
 * memory) would leave the buffers unreachable in LeakSanitizer's eyes. The userdata's __gc frees it. */
typedef struct json_state {
  kg_json_parser_t parser;
  kg_buf_t out;
  json_key_t keys[KG_JSON_KEY_SLOTS]; /* their strings: upvalue 3's table, at the same place + 1 */
  uint32_t last_id;                   /* the last key id given */
  json_shape_t shapes[KG_JSON_SHAPE_SLOTS];
  /* The keys read so far of the objects being built, innermost last: each key's id (0: not cached) and tape index. */
  uint32_t *ids;
  size_t *kpos;
  size_t nopen, open_cap;
  kg_buf_t text; /* a shape's keys as text (json_text_key) */
  json_mtinfo_t mts[KG_JSON_MT_SLOTS];
  bool closed; /* the table being encoded holds no key but those of its order (encode_staged's CLOSED) */
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
  kg_json_parser_free(&st->parser);
  kg_buf_free(&st->out);
  kg_buf_free(&st->text);
  for (size_t i = 0; i < KG_JSON_SHAPE_SLOTS; i++)
    free(st->shapes[i].ids);
  free(st->ids);
  free(st->kpos);
  free(st);
  return 0;
}

/* The codec's state, hooks, cached keys, constants, cached shapes and cached metatables: upvalues 1 to 6 of each
 * function of the core. */
static json_state_t *json_state(lua_State *L) { return *(json_state_t **)lua_touserdata(L, lua_upvalueindex(1)); }
#define JSON_CONSTS    lua_upvalueindex(4)
#define JSON_SHAPE_MTS lua_upvalueindex(5)
#define JSON_MT_REFS   lua_upvalueindex(6)
#define JSON_NUPVALUES 6

/* The constants' places in upvalue 4. */
enum {
  JC_ARRAY_MT = 1, /* json.array_mt */
  JC_OBJECT_MT,    /* json.object_mt */
  JC_SHAPES,       /* the text of a shape's keys -> its metatable, weak values */
  JC_K_TYPE,       /* "__jsontype" */
  JC_K_ORDER,      /* "__jsonorder" */
  JC_K_INDEX,      /* "__jsonindex": key -> its place in __jsonorder */
  JC_K_AVRO,       /* "__jsonavro" */
  JC_K_FIELDS,     /* "fields" */
  JC_K_ITEMS,      /* "items" */
  JC_S_ARRAY,      /* "array" */
  JC_S_OBJECT,     /* "object" */
  JC_S_BYTES,      /* "bytes" */
  JC_S_MIXED,      /* "mixed" */
  JC_NCONSTS = JC_S_MIXED
};
static const char *const json_const_names[] = {
    [JC_K_TYPE] = "__jsontype", [JC_K_ORDER] = "__jsonorder", [JC_K_INDEX] = "__jsonindex", [JC_K_AVRO] = "__jsonavro",
    [JC_K_FIELDS] = "fields",   [JC_K_ITEMS] = "items",       [JC_S_ARRAY] = "array",       [JC_S_OBJECT] = "object",
    [JC_S_BYTES] = "bytes",     [JC_S_MIXED] = "mixed",
};

static inline void json_push_const(lua_State *L, int k) { lua_rawgeti(L, JSON_CONSTS, k); }

/* json.empty_array: a light userdata that encodes as []; its address is this byte's. */
static const char json_empty_array_tag;

/* Calls hook NAME of the module with the NARGS arguments on top of the stack, for one result. */
static void json_hook(lua_State *L, const char *name, int nargs) {
  lua_getfield(L, lua_upvalueindex(2), name);
  if (!lua_isfunction(L, -1)) luaL_error(L, "gobblin.json: hook %s is not set", name);
  lua_insert(L, -1 - nargs);
  lua_call(L, nargs, 1);
}

/* Pushes object key token K, the NTH key of the document: from the key cache when it is the key cached there.
 * Returns the key's id, or 0 when it is not cached. */
static uint32_t json_push_key(lua_State *L, json_state_t *st, const kg_json_tok_t *k, size_t nth) {
  const char *bytes = kg_json_tok_string(&st->parser, k);
  if (nth >= KG_JSON_KEY_SLOTS || k->n == 0 || k->n > KG_JSON_KEY_MAX) {
    lua_pushlstring(L, bytes, k->n);
    return 0;
  }
  json_key_t *slot = &st->keys[nth];
  if (slot->len == k->n && !memcmp(slot->bytes, bytes, k->n)) {
    lua_rawgeti(L, lua_upvalueindex(3), (int)nth + 1);
    return slot->id;
  }
  lua_pushlstring(L, bytes, k->n);
  lua_pushvalue(L, -1);
  lua_rawseti(L, lua_upvalueindex(3), (int)nth + 1);
  slot->len = (uint8_t)k->n;
  memcpy(slot->bytes, bytes, k->n);
  slot->id = ++st->last_id;
  return slot->id;
}

/* Forgets every cached key and shape, so that ids start again from 1 (before they would run out). */
static void json_forget_ids(json_state_t *st) {
  for (size_t i = 0; i < KG_JSON_KEY_SLOTS; i++)
    st->keys[i].len = 0;
  for (size_t i = 0; i < KG_JSON_SHAPE_SLOTS; i++)
    st->shapes[i].n = 0;
  st->last_id = 0;
}

/* Appends one key to the text of a shape: its tag ('s' a string, 'n' a number), its length and its bytes. */
static void json_text_key(kg_buf_t *b, char tag, const void *bytes, size_t n) {
  char *w = kg_buf_reserve(b, 1 + sizeof n + n);
  w[0] = tag;
  memcpy(w + 1, &n, sizeof n);
  memcpy(w + 1 + sizeof n, bytes, n);
  b->len += 1 + sizeof n + n;
}

/* Starts a new shape of N keys: pushes its metatable, its order list and its index. */
static void json_shape_begin(lua_State *L, size_t n) {
  int size = n > INT_MAX ? INT_MAX : (int)n;
  lua_createtable(L, 0, 3);
  json_push_const(L, JC_K_TYPE);
  json_push_const(L, JC_S_OBJECT);
  lua_rawset(L, -3);
  lua_createtable(L, size, 0);
  json_push_const(L, JC_K_ORDER);
  lua_pushvalue(L, -2);
  lua_rawset(L, -4);
  lua_createtable(L, 0, size);
  json_push_const(L, JC_K_INDEX);
  lua_pushvalue(L, -2);
  lua_rawset(L, -5);
}

/* Adds the key on top of the stack to the shape begun below it (metatable, order, index, key) and pops it; returns
 * false, leaving it there, when the shape has it already. */
static bool json_shape_add(lua_State *L) {
  lua_pushvalue(L, -1);
  lua_rawget(L, -3);
  bool there = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (there) return false;
  int n = (int)lua_objlen(L, -3) + 1;
  lua_pushvalue(L, -1);
  lua_pushinteger(L, n);
  lua_rawset(L, -4);
  lua_rawseti(L, -3, n);
  return true;
}

/* With the text of a shape's keys in ST->text: pushes its metatable from the table of shapes and returns true, or
 * pushes the table of shapes and the text (under which to store a new one) and returns false. */
static bool json_shape_find(lua_State *L, json_state_t *st) {
  json_push_const(L, JC_SHAPES);
  lua_pushlstring(L, st->text.data, st->text.len);
  lua_pushvalue(L, -1);
  lua_rawget(L, -3);
  if (!lua_isnil(L, -1)) {
    lua_replace(L, -3);
    lua_pop(L, 1);
    return true;
  }
  lua_pop(L, 1);
  return false;
}

/* Ends a new shape begun above the table of shapes and the text json_shape_find left: stores it, leaving only its
 * metatable. */
static void json_shape_end(lua_State *L) {
  lua_pop(L, 2); /* shapes, text, metatable */
  lua_pushvalue(L, -1);
  lua_insert(L, -4); /* metatable, shapes, text, metatable */
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Pushes the metatable of the object whose N keys are the last N of ST's open keys (from BASE). */
static void json_push_shape(lua_State *L, json_state_t *st, size_t base, size_t n) {
  const uint32_t *ids = st->ids + base;
  uint32_t h = 2166136261u;
  bool cached = true;
  for (size_t i = 0; i < n; i++) {
    if (!ids[i]) {
      cached = false;
      break;
    }
    h = (h ^ ids[i]) * 16777619u;
  }
  size_t slot = (h ^ h >> 15) & (KG_JSON_SHAPE_SLOTS - 1);
  json_shape_t *sh = &st->shapes[slot];
  if (cached && sh->n == n && !memcmp(sh->ids, ids, n * sizeof *ids)) {
    lua_rawgeti(L, JSON_SHAPE_MTS, (int)slot + 1);
    return;
  }
  const kg_json_parser_t *p = &st->parser;
  st->text.len = 0;
  for (size_t i = 0; i < n; i++) {
    const kg_json_tok_t *k = &p->tape[st->kpos[base + i]];
    json_text_key(&st->text, 's', kg_json_tok_string(p, k), k->n);
  }
  if (!json_shape_find(L, st)) {
    json_shape_begin(L, n);
    for (size_t i = 0; i < n; i++) {
      const kg_json_tok_t *k = &p->tape[st->kpos[base + i]];
      lua_pushlstring(L, kg_json_tok_string(p, k), k->n);
      if (!json_shape_add(L)) lua_pop(L, 1); /* a key the document repeats: its first place */
    }
    json_shape_end(L);
  }
  if (!cached) return;
  if (sh->cap < n) {
    sh->ids = kg_xrealloc(sh->ids, n * sizeof *sh->ids);
    sh->cap = (uint32_t)n;
  }
  memcpy(sh->ids, ids, n * sizeof *ids);
  sh->n = (uint32_t)n;
  lua_pushvalue(L, -1);
  lua_rawseti(L, JSON_SHAPE_MTS, (int)slot + 1);
}

/* Records a key of the object being built: its id and tape index. */
static void json_open_key(json_state_t *st, uint32_t id, size_t kpos) {
  if (st->nopen == st->open_cap) {
    st->open_cap = st->open_cap ? 2 * st->open_cap : 64;
    st->ids = kg_xrealloc(st->ids, st->open_cap * sizeof *st->ids);
    st->kpos = kg_xrealloc(st->kpos, st->open_cap * sizeof *st->kpos);
  }
  st->ids[st->nopen] = id;
  st->kpos[st->nopen] = kpos;
  st->nopen++;
}

/* Pushes the value of the tape's token at *POS (and of what it holds), moving *POS past them; *NKEYS counts the
 * object keys met. */
static void json_build(lua_State *L, json_state_t *st, size_t *pos, size_t *nkeys) {
  const kg_json_parser_t *p = &st->parser;
  const kg_json_tok_t *t = &p->tape[(*pos)++];
  switch (t->type) {
  case KG_JSON_TOK_NULL: lua_pushlightuserdata(L, NULL); return;
  case KG_JSON_TOK_FALSE: lua_pushboolean(L, 0); return;
  case KG_JSON_TOK_TRUE: lua_pushboolean(L, 1); return;
  case KG_JSON_TOK_NUMBER: lua_pushnumber(L, t->v.d); return;
  case KG_JSON_TOK_INT:
  case KG_JSON_TOK_UINT:
    /* The high and low 32 bits, and whether the value is unsigned. */
    lua_pushnumber(L, (double)(t->v.u >> 32));
    lua_pushnumber(L, (double)(t->v.u & 0xffffffffu));
    lua_pushboolean(L, t->type == KG_JSON_TOK_UINT);
    json_hook(L, "int64", 3);
    return;
  case KG_JSON_TOK_STRING:
  case KG_JSON_TOK_ESCAPED_STRING: lua_pushlstring(L, kg_json_tok_string(p, t), t->n); return;
  case KG_JSON_TOK_ARRAY: {
    luaL_checkstack(L, 3, "JSON nested too deep");
    lua_createtable(L, t->n > INT_MAX ? INT_MAX : (int)t->n, 0);
    for (uint32_t i = 1; i <= t->n; i++) {
      json_build(L, st, pos, nkeys);
      lua_rawseti(L, -2, (int)i);
    }
    json_push_const(L, JC_ARRAY_MT);
    lua_setmetatable(L, -2);
    return;
  }
  case KG_JSON_TOK_OBJECT: {
    luaL_checkstack(L, 10, "JSON nested too deep");
    lua_createtable(L, 0, t->n > INT_MAX ? INT_MAX : (int)t->n);
    if (!t->n) {
      json_push_const(L, JC_OBJECT_MT);
      lua_setmetatable(L, -2);
      return;
    }
    size_t base = st->nopen;
    for (uint32_t i = 0; i < t->n; i++) {
      size_t kpos = (*pos)++;
      uint32_t id = json_push_key(L, st, &p->tape[kpos], (*nkeys)++);
      json_open_key(st, id, kpos);
      json_build(L, st, pos, nkeys);
      lua_rawset(L, -3);
    }
    json_push_shape(L, st, base, t->n);
    lua_setmetatable(L, -2);
    st->nopen = base;
    return;
  }
  }
}

/* The bytes the next decode on this thread reads when it is given none (kg_lua_json_set_source), and the text the
 * next kg_ffi_json_emit on this thread writes (encode_staged's): each taken once. */
static __thread const char *json_source_data;
static __thread size_t json_source_len;
static __thread bool json_source_set;
static __thread const char *json_output_data;
static __thread size_t json_output_len;
static __thread bool json_output_set;

void kg_lua_json_set_source(const char *data, size_t len) {
  json_source_data = data;
  json_source_len = len;
  json_source_set = true;
}

static bool json_take_source(const char **data, size_t *len) {
  if (!json_source_set) return false;
  *data = json_source_data;
  *len = json_source_len;
  json_source_set = false;
  return true;
}

static void json_set_output(const char *data, size_t len) {
  json_output_data = data;
  json_output_len = len;
  json_output_set = true;
}

bool kg_lua_json_take_output(const char **data, size_t *len) {
  if (!json_output_set) return false;
  *data = json_output_data;
  *len = json_output_len;
  json_output_set = false;
  return true;
}

/* decode(text [, max_depth]): the value of JSON TEXT; with TEXT nil, of the bytes kg_ffi_json_source staged. */
static int json_decode(lua_State *L) {
  json_state_t *st = json_state(L);
  const char *text;
  size_t len;
  if (lua_type(L, 1) == LUA_TSTRING) {
    text = lua_tolstring(L, 1, &len);
  } else if (lua_isnoneornil(L, 1)) {
    if (!json_take_source(&text, &len)) return luaL_error(L, "gobblin.json: no bytes to decode");
  } else {
    return luaL_error(L, "gobblin.json.decode expects a string or a record view, got %s", luaL_typename(L, 1));
  }
  lua_Integer max_depth = luaL_optinteger(L, 2, KG_JSON_MAX_DEPTH);
  if (max_depth < 1 || max_depth > KG_JSON_MAX_DEPTH)
    return luaL_error(L, "gobblin.json: max_depth must be from 1 to %d", KG_JSON_MAX_DEPTH);
  char err[KG_ERRLEN];
  if (kg_json_parse_tape(&st->parser, text, len, (int)max_depth, err)) {
    lua_pushstring(L, err);
    return lua_error(L);
  }
  /* A document gives at most KG_JSON_KEY_SLOTS ids, so none runs out in the middle of one. */
  if (st->last_id > UINT32_MAX - KG_JSON_KEY_SLOTS) json_forget_ids(st);
  st->nopen = 0;
  size_t pos = 0, nkeys = 0;
  json_build(L, st, &pos, &nkeys);
  return 1;
}

/* order(keys): the metatable of objects whose members are written in the order of the array KEYS (strings and
 * numbers), the same table for the same keys; object_mt for none. */
static int json_order(lua_State *L) {
  json_state_t *st = json_state(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t n = lua_objlen(L, 1);
  if (!n) {
    json_push_const(L, JC_OBJECT_MT);
    return 1;
  }
  st->text.len = 0;
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, (int)i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      json_text_key(&st->text, 's', s, len);
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      double d = lua_tonumber(L, -1);
      if (d != d) return luaL_error(L, "gobblin.json.order: key %d is NaN", (int)i);
      json_text_key(&st->text, 'n', &d, sizeof d);
    } else {
      return luaL_error(L, "gobblin.json.order: key %d is a %s (keys are strings or numbers)", (int)i,
                        luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  if (json_shape_find(L, st)) return 1;
  json_shape_begin(L, n);
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, (int)i);
    if (!json_shape_add(L))
      return luaL_error(L, "gobblin.json.order: the key %s is in the list twice", lua_tostring(L, -1));
  }
  json_shape_end(L);
  return 1;
}

static void json_encode_value(lua_State *L, kg_buf_t *out, int idx, int depth, bool avro);

/* How a value of a table decoded from Avro is written when it is a string (its __jsonavro's fields or items). */
typedef struct {
  enum { JSON_TEXT, JSON_BYTES, JSON_DECIMAL, JSON_MIXED } as; /* MIXED: text when it is UTF-8, else bytes */
  long scale; /* JSON_DECIMAL: the decimal's scale (-1: not one kg_json_write_decimal takes) */
} json_kind_t;

/* What a table is to the encoder. */
typedef enum { JSON_PLAIN, JSON_ARRAY, JSON_OBJECT } json_type_t;

/* The kind named by the value at stack index IDX: "bytes", "mixed", or a number (a decimal's scale). */
static json_kind_t json_kind_at(lua_State *L, int idx) {
  json_kind_t k = {JSON_TEXT, 0};
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double s = lua_tonumber(L, idx);
    k.as = JSON_DECIMAL;
    k.scale = s >= 0 && s <= KG_JSON_DECIMAL_MAX_SCALE && s == floor(s) ? (long)s : -1;
  } else if (lua_type(L, idx) == LUA_TSTRING) {
    json_push_const(L, JC_S_BYTES);
    json_push_const(L, JC_S_MIXED);
    if (lua_rawequal(L, -2, idx))
      k.as = JSON_BYTES;
    else if (lua_rawequal(L, -1, idx))
      k.as = JSON_MIXED;
    lua_pop(L, 2);
  }
  return k;
}

/* The kind of the member whose key is at stack index KEY: FIELDS[key] (FIELDS a stack index, 0 for none), else
 * ITEMS. */
static json_kind_t json_member_kind(lua_State *L, int fields, json_kind_t items, int key) {
  if (!fields) return items;
  lua_pushvalue(L, key);
  lua_rawget(L, fields);
  json_kind_t k = lua_isnil(L, -1) ? items : json_kind_at(L, lua_gettop(L));
  lua_pop(L, 1);
  return k;
}

/* Writes the value at stack index IDX, a string as KIND says. */
static void json_encode_member(lua_State *L, kg_buf_t *out, int idx, int depth, bool avro, json_kind_t kind) {
  if (kind.as != JSON_TEXT && lua_type(L, idx) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    if (kind.as == JSON_BYTES || (kind.as == JSON_MIXED && !kg_utf8_valid(s, n))) {
      kg_json_write_bytes(out, s, n);
      return;
    }
    if (kind.as == JSON_MIXED) {
      kg_json_write_string(out, s, n);
      return;
    }
    if (!kg_json_write_decimal(out, (const unsigned char *)s, n, kind.scale))
      luaL_error(L, "cannot encode as JSON: a decimal of %d bytes with scale %d (at most %d bytes and scale %d)",
                 (int)(n > INT_MAX ? INT_MAX : n), (int)kind.scale, KG_JSON_DECIMAL_MAX_BYTES,
                 KG_JSON_DECIMAL_MAX_SCALE);
    return;
  }
  json_encode_value(L, out, idx, depth, avro);
}

/* Writes the key at stack index KEY (a string, or a number written as a string) and its colon. */
static void json_write_key(lua_State *L, kg_buf_t *out, int key) {
  size_t n;
  const char *s;
  int t = lua_type(L, key);
  if (t == LUA_TSTRING) {
    s = lua_tolstring(L, key, &n);
    kg_json_write_string(out, s, n);
  } else if (t == LUA_TNUMBER) {
    lua_pushvalue(L, key); /* a copy: lua_tolstring would change the key lua_next needs */
    s = lua_tolstring(L, -1, &n);
    kg_json_write_string(out, s, n);
    lua_pop(L, 1);
  } else {
    luaL_error(L, "cannot encode as JSON: a table key is a %s (object keys are strings or numbers)",
               luaL_typename(L, key));
  }
  kg_json_put(out, ':');
}

/* The length of the table at IDX as an array: 0 when it is empty, -1 when it is to be written as an object. */
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
  if (items == 0) return 0;
  if (max > 10 && max > 2 * items) return -1;
  return max;
}

/* The index of the order list at stack index ORDER of the metatable at MT: its __jsonindex (which the shapes of
 * json.decode and json.order have), else one made from the list (a key in it twice is an error), without changing
 * the metatable. Pushed, and its stack index returned. */
static int json_order_index(lua_State *L, int mt, int order) {
  json_push_const(L, JC_K_INDEX);
  lua_rawget(L, mt);
  if (lua_istable(L, -1)) return lua_gettop(L);
  lua_pop(L, 1);
  size_t m = lua_objlen(L, order);
  lua_createtable(L, 0, m > INT_MAX ? INT_MAX : (int)m);
  int index = lua_gettop(L);
  for (size_t i = 1; i <= m; i++) {
    lua_rawgeti(L, order, (int)i);
    int t = lua_type(L, -1);
    if ((t != LUA_TSTRING && t != LUA_TNUMBER) || (t == LUA_TNUMBER && lua_tonumber(L, -1) != lua_tonumber(L, -1)))
      luaL_error(L, "cannot encode as JSON: __jsonorder holds a %s (keys are strings or numbers)",
                 luaL_typename(L, -1));
    lua_pushvalue(L, -1);
    lua_rawget(L, index);
    if (!lua_isnil(L, -1))
      luaL_error(L, "cannot encode as JSON: __jsonorder has the key %s twice", lua_tostring(L, -2));
    lua_pop(L, 1);
    lua_pushinteger(L, (lua_Integer)i);
    lua_rawset(L, index);
  }
  return index;
}

/* A key json_write_rest writes: its text (anchored in a Lua table) and its place in that table. */
typedef struct {
  const char *s;
  size_t n;
  int at;
} json_rest_t;

static int json_rest_cmp(const void *a, const void *b) {
  const json_rest_t *x = a, *y = b;
  int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
  if (c) return c;
  return x->n < y->n ? -1 : x->n > y->n;
}

/* Writes the members of the table at IDX whose keys are not in INDEX (a stack index; 0: every member), sorted by
 * the bytes of their keys (numbers by their text); *FIRST says whether no member was written before them. */
static void json_write_rest(lua_State *L, kg_buf_t *out, int idx, int index, int depth, bool avro, int fields,
                            json_kind_t items, bool *first) {
  lua_newtable(L); /* each key, then its text */
  int keys = lua_gettop(L);
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (index) {
      lua_pushvalue(L, -1);
      lua_rawget(L, index);
      bool known = !lua_isnil(L, -1);
      lua_pop(L, 1);
      if (known) continue;
    }
    int t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER)
      luaL_error(L, "cannot encode as JSON: a table key is a %s (object keys are strings or numbers)",
                 luaL_typename(L, -1));
    if (n == INT_MAX / 2) luaL_error(L, "cannot encode as JSON: a table of more than %d keys", INT_MAX / 2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, keys, 2 * n + 1);
    lua_pushvalue(L, -1);
    if (t == LUA_TNUMBER) lua_tolstring(L, -1, NULL); /* the copy becomes its text */
    lua_rawseti(L, keys, 2 * n + 2);
    n++;
  }
  json_rest_t *rest = lua_newuserdata(L, (size_t)(n ? n : 1) * sizeof *rest);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, keys, 2 * i + 2);
    rest[i].s = lua_tolstring(L, -1, &rest[i].n); /* kept alive by KEYS */
    rest[i].at = 2 * i + 1;
    lua_pop(L, 1);
  }
  qsort(rest, (size_t)n, sizeof *rest, json_rest_cmp);
  for (int i = 0; i < n; i++) {
    if (!*first) kg_json_put(out, ',');
    *first = false;
    lua_rawgeti(L, keys, rest[i].at);
    lua_pushvalue(L, -1);
    lua_rawget(L, idx);
    int top = lua_gettop(L);
    kg_json_write_string(out, rest[i].s, rest[i].n);
    kg_json_put(out, ':');
    json_encode_member(L, out, top, depth + 1, avro, json_member_kind(L, fields, items, top - 1));
    lua_pop(L, 2);
  }
  lua_pop(L, 2);
}

/* Writes the table at IDX as an object. TYPED: it is marked as one (its metatable's __jsontype), and then ORDER (a
 * stack index, 0 for none) lists the keys written first (STRINGS: all of them strings), the others following
 * sorted; else its members go in lua_next's order. MT: the metatable's stack index. */
static void json_write_object(lua_State *L, kg_buf_t *out, int idx, int depth, bool typed, int mt, int order,
                              bool strings, bool avro, int fields, json_kind_t items) {
  kg_json_put(out, '{');
  bool first = true;
  if (!typed) {
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (!first) kg_json_put(out, ',');
      first = false;
      int top = lua_gettop(L);
      json_write_key(L, out, top - 1);
      json_encode_value(L, out, top, depth + 1, false);
      lua_pop(L, 1);
    }
  } else if (!order) {
    json_write_rest(L, out, idx, 0, depth, avro, fields, items, &first);
  } else {
    size_t m = lua_objlen(L, order), present = 0, total = 0;
    int base = lua_gettop(L);
    if (strings && !avro) {
      /* The common case (a decoded object, a projection) with fewer calls: the key's text is taken from the order
       * list, which keeps it alive, before lua_rawget replaces the key with its value at base + 1. */
      for (size_t i = 1; i <= m; i++) {
        lua_rawgeti(L, order, (int)i);
        size_t klen;
        const char *key = lua_tolstring(L, base + 1, &klen);
        lua_rawget(L, idx);
        if (lua_type(L, base + 1) != LUA_TNIL) {
          if (!first) kg_json_put(out, ',');
          first = false;
          kg_json_write_string(out, key, klen);
          kg_json_put(out, ':');
          json_encode_value(L, out, base + 1, depth + 1, false);
          present++;
        }
        lua_settop(L, base);
      }
    } else {
      /* The key at base + 1, its value at base + 2. A field of an Avro record that is nil is null (as Avro's
       * encoder takes it): every field of the record is written. */
      for (size_t i = 1; i <= m; i++) {
        lua_rawgeti(L, order, (int)i);
        lua_pushvalue(L, base + 1);
        lua_rawget(L, idx);
        bool there = lua_type(L, base + 2) != LUA_TNIL;
        if (there || avro) {
          if (!first) kg_json_put(out, ',');
          first = false;
          json_write_key(L, out, base + 1);
          json_encode_member(L, out, base + 2, depth + 1, avro, json_member_kind(L, fields, items, base + 1));
          present += there;
        }
        lua_settop(L, base);
      }
    }
    /* Keys the list does not have (added by a script) follow, sorted: they are looked for by a walk of the table
     * (a key added by any means, rawset included, is written), which a table known to have none is spared. */
    if (depth == 0 && json_state(L)->closed)
      total = present;
    else {
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        lua_settop(L, base + 1);
        total++;
      }
    }
    if (total > present)
      json_write_rest(L, out, idx, json_order_index(L, mt, order), depth, avro, fields, items, &first);
  }
  kg_json_put(out, '}');
}

/* What the metatable at stack index MT says (json_mtinfo_t), read from the cache or into it; *SLOT: its slot. */
static json_mtinfo_t json_mt_info(lua_State *L, json_state_t *st, int mt, size_t *slot) {
  const void *ptr = lua_topointer(L, mt);
  uintptr_t h = (uintptr_t)ptr;
  *slot = (h >> 4 ^ h >> 11) & (KG_JSON_MT_SLOTS - 1);
  json_mtinfo_t *info = &st->mts[*slot];
  if (info->mt == ptr) return *info;
  json_mtinfo_t got = {ptr, JSON_PLAIN, false, false, false, false, JSON_TEXT, 0};
  int top = lua_gettop(L), refs = 3 * (int)*slot;
  json_push_const(L, JC_ARRAY_MT);
  json_push_const(L, JC_OBJECT_MT);
  json_push_const(L, JC_K_TYPE);
  lua_rawget(L, mt);
  json_push_const(L, JC_S_ARRAY);
  json_push_const(L, JC_S_OBJECT);
  if (lua_rawequal(L, top + 1, mt) || lua_rawequal(L, top + 3, top + 4))
    got.type = JSON_ARRAY;
  else if (lua_rawequal(L, top + 2, mt) || lua_rawequal(L, top + 3, top + 5))
    got.type = JSON_OBJECT;
  lua_settop(L, top);
  lua_pushnil(L); /* the order list */
  lua_pushnil(L); /* __jsonavro's fields */
  if (got.type == JSON_OBJECT) {
    json_push_const(L, JC_K_ORDER);
    lua_rawget(L, mt);
    if (lua_istable(L, -1)) {
      got.order = true;
      got.strings = true;
      json_order_index(L, mt, lua_gettop(L)); /* checks the list: a key in it twice would hide a key added */
      lua_pop(L, 1);
      size_t m = lua_objlen(L, -1);
      for (size_t i = 1; i <= m && got.strings; i++) {
        lua_rawgeti(L, -1, (int)i);
        got.strings = lua_type(L, -1) == LUA_TSTRING;
        lua_pop(L, 1);
      }
      lua_replace(L, top + 1);
    } else {
      lua_pop(L, 1);
    }
  }
  if (got.type != JSON_PLAIN) {
    json_push_const(L, JC_K_AVRO);
    lua_rawget(L, mt);
    if (lua_istable(L, -1)) {
      int av = lua_gettop(L);
      got.avro = true;
      json_push_const(L, JC_K_FIELDS);
      lua_rawget(L, av);
      if (lua_istable(L, -1)) {
        got.fields = true;
        lua_replace(L, top + 2);
      } else {
        lua_pop(L, 1);
      }
      json_push_const(L, JC_K_ITEMS);
      lua_rawget(L, av);
      json_kind_t k = json_kind_at(L, lua_gettop(L));
      got.items = (uint8_t)k.as;
      got.scale = k.scale;
    }
  }
  lua_pushvalue(L, mt);
  lua_rawseti(L, JSON_MT_REFS, refs + 1);
  lua_pushvalue(L, top + 1);
  lua_rawseti(L, JSON_MT_REFS, refs + 2);
  lua_pushvalue(L, top + 2);
  lua_rawseti(L, JSON_MT_REFS, refs + 3);
  lua_settop(L, top);
  *info = got;
  return got;
}

static void json_encode_table(lua_State *L, kg_buf_t *out, int idx, int depth) {
  if (depth > KG_JSON_MAX_DEPTH)
    luaL_error(L, "cannot encode as JSON: tables nested more than %d deep (a table that holds itself?)",
               KG_JSON_MAX_DEPTH);
  luaL_checkstack(L, 16, "JSON nested too deep");
  int top = lua_gettop(L);
  json_type_t type = JSON_PLAIN;
  int mt = 0, order = 0, fields = 0;
  bool avro = false, strings = false;
  json_kind_t items = {JSON_TEXT, 0};
  if (lua_getmetatable(L, idx)) {
    mt = top + 1;
    size_t slot;
    json_mtinfo_t info = json_mt_info(L, json_state(L), mt, &slot);
    type = (json_type_t)info.type;
    avro = info.avro;
    strings = info.strings;
    items.as = info.items;
    items.scale = info.scale;
    if (info.order) {
      lua_rawgeti(L, JSON_MT_REFS, 3 * (int)slot + 2);
      order = lua_gettop(L);
    }
    if (info.fields) {
      lua_rawgeti(L, JSON_MT_REFS, 3 * (int)slot + 3);
      fields = lua_gettop(L);
    }
  }
  if (type != JSON_OBJECT) {
    double n = json_array_length(L, idx);
    if (n > 0 || (n == 0 && type == JSON_ARRAY)) {
      kg_json_put(out, '[');
      int base = lua_gettop(L);
      for (int i = 1; i <= (int)n; i++) {
        if (i > 1) kg_json_put(out, ',');
        lua_rawgeti(L, idx, i);
        json_encode_member(L, out, base + 1, depth + 1, avro, items);
        lua_settop(L, base);
      }
      kg_json_put(out, ']');
      lua_settop(L, top);
      return;
    }
  }
  json_write_object(L, out, idx, depth, type == JSON_OBJECT, mt, order, strings, avro, fields, items);
  lua_settop(L, top);
}

/* Writes a number that JSON cannot hold, in a value decoded from Avro: as Avro's JSON encoding does, a string. */
static void json_write_nonfinite(kg_buf_t *out, double d) {
  if (d != d)
    kg_buf_append(out, "\"NaN\"", 5);
  else if (d > 0)
    kg_buf_append(out, "\"Infinity\"", 10);
  else
    kg_buf_append(out, "\"-Infinity\"", 11);
}

/* Writes the value at stack index IDX. AVRO: it is in a table decoded from Avro. */
static void json_encode_value(lua_State *L, kg_buf_t *out, int idx, int depth, bool avro) {
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    kg_json_write_string(out, s, n);
    return;
  }
  case LUA_TNUMBER:
    if (!kg_json_write_double(out, lua_tonumber(L, idx))) {
      if (avro) {
        json_write_nonfinite(out, lua_tonumber(L, idx));
        return;
      }
      luaL_error(L, "cannot encode as JSON: %s (JSON has no NaN or infinity)", lua_tostring(L, idx));
    }
    return;
  case LUA_TBOOLEAN:
    kg_buf_append(out, lua_toboolean(L, idx) ? "true" : "false", lua_toboolean(L, idx) ? 4 : 5);
    return;
  case LUA_TNIL: kg_buf_append(out, "null", 4); return;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, idx) == NULL) {
      kg_buf_append(out, "null", 4);
      return;
    }
    if (lua_touserdata(L, idx) == &json_empty_array_tag) {
      kg_buf_append(out, "[]", 2);
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
  json_encode_value(L, &st->out, 1, 0, false);
  return &st->out;
}

/* encode(value): its JSON text. */
static int json_encode(lua_State *L) {
  json_state(L)->closed = false; /* (an encode_staged that failed halfway may have left it set) */
  kg_buf_t *out = json_encode_arg(L);
  lua_pushlstring(L, out->data, out->len);
  return 1;
}

/* encode_staged(value [, closed]): encodes it into the state's buffer for the next kg_ffi_json_emit of this thread
 * (the writer takes the text without a Lua string made of it). CLOSED: VALUE is a table that holds no key but those
 * of its __jsonorder (converter.project's, written at once), so that no other key is looked for in it. */
static int json_encode_staged(lua_State *L) {
  json_state_t *st = json_state(L);
  st->closed = lua_toboolean(L, 2);
  lua_settop(L, 1);
  kg_buf_t *out = json_encode_arg(L);
  st->closed = false;
  json_set_output(out->data, out->len);
  return 0;
}

/* Pushes a marker metatable: { __jsontype = TYPE }. */
static void json_push_marker(lua_State *L, const char *type) {
  lua_createtable(L, 0, 1);
  lua_pushstring(L, "__jsontype");
  lua_pushstring(L, type);
  lua_rawset(L, -3);
}

/* The core module, for package.preload; exported so that the specs can load it from libkingest_ffi.so. */
int kg_lua_open_json(lua_State *L);
int kg_lua_open_json(lua_State *L) {
  lua_newtable(L); /* the module */
  int m = lua_gettop(L);
  json_state_t **box = lua_newuserdata(L, sizeof *box); /* upvalue 1 */
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
  lua_newtable(L); /* upvalue 2: the hooks */
  lua_pushvalue(L, -1);
  lua_setfield(L, m, "hooks");
  lua_createtable(L, KG_JSON_KEY_SLOTS, 0); /* upvalue 3: the key cache's strings */
  lua_createtable(L, JC_NCONSTS, 0);        /* upvalue 4: the constants */
  int consts = lua_gettop(L);
  for (int k = JC_K_TYPE; k <= JC_NCONSTS; k++) {
    lua_pushstring(L, json_const_names[k]);
    lua_rawseti(L, consts, k);
  }
  json_push_marker(L, "array");
  lua_rawseti(L, consts, JC_ARRAY_MT);
  json_push_marker(L, "object");
  lua_rawseti(L, consts, JC_OBJECT_MT);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawseti(L, consts, JC_SHAPES);
  lua_createtable(L, KG_JSON_SHAPE_SLOTS, 0);  /* upvalue 5: the cached shapes' metatables */
  lua_createtable(L, 3 * KG_JSON_MT_SLOTS, 0); /* upvalue 6: the metatables the encoder cached */
  static const struct {
    const char *name;
    lua_CFunction fn;
  } fns[] = {
      {"decode", json_decode}, {"encode", json_encode}, {"encode_staged", json_encode_staged}, {"order", json_order}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    for (int u = 1; u <= JSON_NUPVALUES; u++)
      lua_pushvalue(L, m + u);
    lua_pushcclosure(L, fns[i].fn, JSON_NUPVALUES);
    lua_setfield(L, m, fns[i].name);
  }
  lua_rawgeti(L, consts, JC_ARRAY_MT);
  lua_setfield(L, m, "array_mt");
  lua_rawgeti(L, consts, JC_OBJECT_MT);
  lua_setfield(L, m, "object_mt");
  lua_settop(L, m);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  lua_pushlightuserdata(L, (void *)&json_empty_array_tag);
  lua_setfield(L, -2, "empty_array");
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

int kg_lua_job_estimate(const char *job_file, const kg_lua_estimate_t *units, size_t n, double *sizes, char *errbuf) {
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
    const kg_lua_estimate_t *wu = &units[i];
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
    if (wu->has_history) {
      lua_newtable(L);
      set_number(L, "next_offset", (double)wu->next_offset);
      if (wu->has_stats) {
        set_number(L, "avg_record_millis", wu->avg_record_millis);
        set_number(L, "avg_record_size", wu->avg_record_size);
        set_number(L, "records_pulled", (double)wu->records_pulled);
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
