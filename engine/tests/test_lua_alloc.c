/* test_lua_alloc.c: the slabs of the engine's Lua states (lua_alloc.c): what scripts compute on them, objects
 * of every size and resized across the size classes, and memory going back when a script lets go of it. */
#include <lauxlib.h>
#include <lualib.h>

#include "lua_alloc.h"
#include "test.h"

/* Runs CODE in L and returns what it returns as a string (NULL on error, printed). */
static const char *run(lua_State *L, const char *code) {
  lua_settop(L, 0);
  if (luaL_loadstring(L, code) || lua_pcall(L, 0, 1, 0)) {
    fprintf(stderr, "lua error: %s\n", lua_tostring(L, -1));
    return NULL;
  }
  return lua_tostring(L, -1);
}

/* Strings and tables of every size class and beyond, interned, resized and collected, give the same answers as
 * arithmetic says they must. */
static void test_compute(void) {
  lua_State *L = kg_lua_state_new();
  CHECK(L != NULL);
  luaL_openlibs(L);
  /* Strings of 1 to 1,500 bytes (small blocks and malloc'd ones), each made from bytes and read back. */
  CHECK_STR(run(L, "local sum = 0\n"
                   "for n = 1, 1500 do\n"
                   "  local s = string.rep(string.char(65 + n % 26), n)\n"
                   "  if #s ~= n or s:byte(n) ~= 65 + n % 26 then return 'bad string ' .. n end\n"
                   "  sum = sum + #s\n"
                   "end\n"
                   "return tostring(sum)"),
            "1125750");
  /* A table grown one element at a time through every size (its array part resized from class to class and
   * into malloc), then shrunk by a collection, its contents checked at each step. */
  CHECK_STR(run(L, "local t = {}\n"
                   "for i = 1, 20000 do t[i] = i * 3 end\n"
                   "for i = 1, 20000 do if t[i] ~= i * 3 then return 'bad element ' .. i end end\n"
                   "local h = {}\n"
                   "for i = 1, 5000 do h['k' .. i] = i end\n"
                   "for i = 1, 5000, 2 do h['k' .. i] = nil end\n"
                   "collectgarbage()\n"
                   "local n = 0\n"
                   "for k, v in pairs(h) do n = n + v end\n"
                   "return tostring(n)"),
            "6252500");
  /* A million short-lived strings that look alike, as records do, with a few kept: interning finds the kept
   * ones again. */
  CHECK_STR(
      run(L, "local kept = {}\n"
             "for i = 1, 1000000 do\n"
             "  local s = string.format('{\"id\":%d,\"user\":\"user-%06d\",\"score\":%.3f}', i, i % 1000, i / 7)\n"
             "  if i % 100000 == 0 then kept[#kept + 1] = s end\n"
             "end\n"
             "collectgarbage()\n"
             "local again = string.format('{\"id\":%d,\"user\":\"user-%06d\",\"score\":%.3f}', 500000, 0, 500000 / 7)\n"
             "return #kept .. ' ' .. tostring(kept[5] == again)"),
      "10 true");
  kg_lua_state_close(L);
}

/* What a script holds is what the state's slabs hold: memory taken for many objects goes back to the system once
 * they are collected, beyond a few empty slabs kept. */
static void test_memory_returns(void) {
  lua_State *L = kg_lua_state_new();
  CHECK(L != NULL);
  luaL_openlibs(L);
  lua_gc(L, LUA_GCCOLLECT, 0);
  size_t base_slabs = 0, base_small = 0, base_large = 0;
  kg_lua_alloc_stats(L, &base_slabs, NULL, &base_small, &base_large);
  CHECK(base_slabs > 0);
  CHECK(base_small > 0);

  CHECK_STR(run(L, "held = {}\n"
                   "for i = 1, 200000 do held[i] = 'record number ' .. i end\n"
                   "return 'ok'"),
            "ok");
  size_t slabs = 0, small = 0, large = 0;
  kg_lua_alloc_stats(L, &slabs, NULL, &small, &large);
  /* 200,000 strings of 15 to 20 bytes (48 with their header): over 9 MB in small blocks, in 140 slabs or more. */
  CHECK(small - base_small >= (size_t)200000 * 48);
  CHECK(slabs >= base_slabs + 140);
  CHECK(large > base_large); /* the table's array part */

  CHECK_STR(run(L, "held = nil for _ = 1, 12 do collectgarbage() end return 'ok'"), "ok");
  size_t empty = 0;
  kg_lua_alloc_stats(L, &slabs, &empty, &small, &large);
  CHECK(small <= base_small + 64 * 1024);
  CHECK(large <= base_large + 64 * 1024); /* the string table shrinks by half a collection */
  CHECK(empty <= 8);
  CHECK(slabs <= base_slabs + 8 + 4); /* the empty ones kept and a few the collection left partly used */
  kg_lua_state_close(L);
}

int main(void) {
  test_compute();
  test_memory_returns();
  TEST_MAIN_END();
}
