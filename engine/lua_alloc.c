/* lua_alloc.c: the slabs of the engine's Lua states (lua_alloc.h). */
#include "lua_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Under AddressSanitizer, the leak checker does not look into mapped pages; the slabs hold the only pointers to
 * the larger objects (from malloc), so each slab is a root region it scans. */
#if defined(__SANITIZE_ADDRESS__)
#define KG_LSAN_ROOTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KG_LSAN_ROOTS 1
#endif
#endif
#ifdef KG_LSAN_ROOTS
#include <sanitizer/lsan_interface.h>
#endif

#define SLAB_SIZE  ((size_t)64 * 1024) /* also the slabs' alignment: a block's slab is its address rounded down */
#define CLASS_STEP 16
#define NCLASSES   32
#define SMALL_MAX  (NCLASSES * CLASS_STEP) /* 512: larger objects come from malloc */
#define KEEP_EMPTY 8                       /* empty slabs kept for the next cycle, per state */

typedef struct block {
  struct block *next;
} block_t;

/* A slab: this header, then blocks of one size class. */
typedef struct slab {
  struct slab *prev, *next; /* in its class's list of slabs with a free block (next only: the empty list) */
  block_t *free;            /* blocks given back */
  char *bump;               /* the first block never handed out */
  uint32_t live;            /* blocks handed out and not given back */
  uint32_t capacity;        /* blocks in the slab */
  uint32_t cls;
} slab_t; /* in its class's list exactly when it has a free block (live < capacity) */

#define HEADER (((sizeof(slab_t) + CLASS_STEP - 1) / CLASS_STEP) * CLASS_STEP)

typedef struct {
  slab_t *partial[NCLASSES]; /* per class, the slabs with a free block; the first is used first */
  slab_t *empty;             /* empty slabs kept, at most KEEP_EMPTY */
  size_t nempty, nslabs;
  size_t small_bytes, large_bytes;
} pool_t;

static inline uint32_t class_of(size_t n) { return (uint32_t)((n - 1) / CLASS_STEP); }
static inline size_t class_size(uint32_t c) { return (size_t)(c + 1) * CLASS_STEP; }

static void list_add(pool_t *P, slab_t *s) {
  s->prev = NULL;
  s->next = P->partial[s->cls];
  if (s->next) s->next->prev = s;
  P->partial[s->cls] = s;
}

static void list_remove(pool_t *P, slab_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    P->partial[s->cls] = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

/* A slab's memory, mapped at a multiple of its size: pages of its own, which go back to the system when it is
 * unmapped (from malloc, the freed slabs of one state stayed in its thread's arena and the next state, on
 * another thread, took new ones). NULL when out of memory. */
static void *slab_map(void) {
  char *p = mmap(NULL, 2 * SLAB_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  char *aligned = (char *)(((uintptr_t)p + SLAB_SIZE - 1) & ~(uintptr_t)(SLAB_SIZE - 1));
  if (aligned > p) munmap(p, (size_t)(aligned - p));
  if (aligned + SLAB_SIZE < p + 2 * SLAB_SIZE)
    munmap(aligned + SLAB_SIZE, (size_t)(p + 2 * SLAB_SIZE - (aligned + SLAB_SIZE)));
#ifdef KG_LSAN_ROOTS
  __lsan_register_root_region(aligned, SLAB_SIZE);
#endif
  return aligned;
}

static void slab_unmap(slab_t *s) {
#ifdef KG_LSAN_ROOTS
  __lsan_unregister_root_region(s, SLAB_SIZE);
#endif
  munmap(s, SLAB_SIZE);
}

static slab_t *slab_take(pool_t *P, uint32_t c) {
  slab_t *s = P->empty;
  if (s) {
    P->empty = s->next;
    P->nempty--;
  } else {
    if (!(s = slab_map())) return NULL;
    P->nslabs++;
  }
  s->free = NULL;
  s->bump = (char *)s + HEADER;
  s->live = 0;
  s->cls = c;
  s->capacity = (uint32_t)((SLAB_SIZE - HEADER) / class_size(c));
  list_add(P, s);
  return s;
}

static void *small_alloc(pool_t *P, uint32_t c) {
  slab_t *s = P->partial[c];
  if (!s && !(s = slab_take(P, c))) return NULL;
  block_t *b = s->free;
  if (b) {
    s->free = b->next;
  } else {
    b = (block_t *)s->bump;
    s->bump += class_size(c);
  }
  if (++s->live == s->capacity) list_remove(P, s);
  P->small_bytes += class_size(c);
  return b;
}

static void small_free(pool_t *P, void *p, uint32_t c) {
  slab_t *s = (slab_t *)((uintptr_t)p & ~(uintptr_t)(SLAB_SIZE - 1));
  if (s->cls != c || s->live == 0) {
    /* LuaJIT gave back a block with a size it was not taken with: the state's memory can no longer be trusted. */
    fprintf(stderr, "kingest: Lua state memory corrupt: block %p of %zu bytes freed as %zu\n", p, class_size(s->cls),
            class_size(c));
    abort();
  }
  block_t *b = p;
  b->next = s->free;
  s->free = b;
  P->small_bytes -= class_size(c);
  if (s->live == s->capacity) list_add(P, s); /* it was full */
  if (--s->live) return;
  list_remove(P, s);
  if (P->nempty < KEEP_EMPTY) {
    s->next = P->empty;
    P->empty = s;
    P->nempty++;
  } else {
    slab_unmap(s);
    P->nslabs--;
  }
}

/* The lua_Alloc of the states: frees when N is 0, else allocates N bytes or resizes P from O bytes to N. */
static void *state_alloc(void *ud, void *p, size_t o, size_t n) {
  pool_t *P = ud;
  if (!p) o = 0;
  if (n == 0) {
    if (!p) return NULL;
    if (o <= SMALL_MAX) {
      small_free(P, p, class_of(o));
    } else {
      P->large_bytes -= o;
      free(p);
    }
    return NULL;
  }
  if (o > SMALL_MAX && n > SMALL_MAX) {
    void *q = realloc(p, n);
    if (q) P->large_bytes = P->large_bytes - o + n;
    return q;
  }
  if (o && o <= SMALL_MAX && n <= SMALL_MAX && class_of(o) == class_of(n)) return p;
  void *q;
  if (n <= SMALL_MAX) {
    q = small_alloc(P, class_of(n));
  } else if ((q = malloc(n))) {
    P->large_bytes += n;
  }
  if (!q) return NULL; /* LuaJIT raises its memory error; P is left as it was */
  if (o) {
    memcpy(q, p, o < n ? o : n);
    state_alloc(ud, p, o, 0);
  }
  return q;
}

static int panic(lua_State *L) {
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "kingest: unprotected error in a Lua state: %s\n", msg ? msg : "(not a string)");
  return 0;
}

static void pool_free(pool_t *P) {
  for (slab_t *s = P->empty, *next; s; s = next) {
    next = s->next;
    slab_unmap(s);
  }
  for (uint32_t c = 0; c < NCLASSES; c++) {
    for (slab_t *s = P->partial[c], *next; s; s = next) {
      next = s->next;
      slab_unmap(s);
    }
  }
  free(P);
}

lua_State *kg_lua_state_new(void) {
  pool_t *P = calloc(1, sizeof *P);
  if (!P) return NULL;
  lua_State *L = lua_newstate(state_alloc, P);
  if (!L) {
    pool_free(P);
    return NULL;
  }
  lua_atpanic(L, panic);
  return L;
}

void kg_lua_state_close(lua_State *L) {
  if (!L) return;
  void *ud = NULL;
  lua_getallocf(L, &ud);
  lua_close(L);
  /* The state has given back everything it held: what slabs are left are the empty ones kept. */
  pool_free(ud);
}

void kg_lua_alloc_stats(lua_State *L, size_t *slabs, size_t *empty, size_t *small, size_t *large) {
  void *ud = NULL;
  lua_getallocf(L, &ud);
  pool_t *P = ud;
  if (slabs) *slabs = P->nslabs;
  if (empty) *empty = P->nempty;
  if (small) *small = P->small_bytes;
  if (large) *large = P->large_bytes;
}
