/* fault.h: the test hooks production code passes: crash points (KINGEST_CRASH_AT) and injected failures
 * (KINGEST_FAULT), and the warning that any test hook is set (docs/testing.md). */
#ifndef KG_FAULT_H
#define KG_FAULT_H

#include <stdbool.h>

/* A named point where the crash tests may kill the process (KINGEST_CRASH_AT=<point>[:<n>], docs/testing.md); a
 * no-op otherwise. Points: fetch, write, task-output, journaled, publish, finish, recover, map. */
void kg_crash_point(const char *name);

/* Failure injection for tests (KINGEST_FAULT=<point>[:<n>][,<point>[:<n>]...]): true at the n-th time (default
 * the first) the calling code passes POINT, which then fails as the real call would. Off when unset. Points:
 * publish.move and publish.dirsync (a move of the commit's publish step, a folder sync within one: counted in
 * the publish step only, see kg_fault_scope), recover.move and recover.dirsync (the same in the moves that finish
 * an interrupted commit), state.<step>.busy and state.<step>.full for the commit journal's steps journal, finish
 * (also when finishing an interrupted commit) and abort (state.c). */
bool kg_fault(const char *point);
/* Logs a WARN for each test hook set in the environment (KINGEST_CRASH_AT, KINGEST_FAULT, KINGEST_POWERCUT,
 * KINGEST_KAFKA_FAULT, KINGEST_MAP_CRASH_AT; docs/testing.md), naming it and its value. Once per process: the
 * first call does it, later ones do nothing. */
void kg_test_hooks_warn(void);
/* Names the scope of the calling thread's next faults: kg_fault("dirsync") in scope "publish" is the point
 * publish.dirsync; NULL ends the scope. */
void kg_fault_scope(const char *scope);

#endif
