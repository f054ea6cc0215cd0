/* lua_alloc.h: the memory of the engine's Lua states. A script that turns each record into a string or a table
 * makes and drops a few small objects per record, a million times a run; they come from the state's own slabs
 * (one size class per 16 bytes up to 512), not from the general allocator: taking and giving back a block is a
 * pointer swap, and a block just given back (still in the cache) is the next one taken. Larger objects use
 * malloc. A slab whose blocks are all free again goes back to the system, beyond a few kept for the next
 * collection cycle, so a state's memory follows what its script holds. A state is used by one thread at a
 * time, which its slabs rely on. */
#ifndef KG_LUA_ALLOC_H
#define KG_LUA_ALLOC_H

#include <lua.h>
#include <stddef.h>

/* A new Lua state on its own slabs (no libraries opened); NULL when out of memory. */
lua_State *kg_lua_state_new(void);

/* Closes L, a state from kg_lua_state_new, and frees its slabs. */
void kg_lua_state_close(lua_State *L);

/* What L's slabs hold now: SLABS slabs of which EMPTY are kept free, SMALL bytes in small blocks in use, and
 * LARGE bytes of larger objects (from malloc). Any pointer may be NULL. */
void kg_lua_alloc_stats(lua_State *L, size_t *slabs, size_t *empty, size_t *small, size_t *large);

#endif
