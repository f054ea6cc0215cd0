/* stop.h: a graceful stop on SIGTERM or SIGINT. */
#ifndef KG_STOP_H
#define KG_STOP_H

/* A graceful stop: the first SIGTERM or SIGINT asks the run to stop (tasks stop fetching, what was completely
 * written is committed); a second one ends the process at once. kg_stop_signal is the first signal, 0 when none
 * came. Installs the handlers; call once, before any thread starts. */
void kg_stop_install(void);
int kg_stop_signal(void);
/* A child's process group (its pid, leader of its own group) that the second signal also ends, before this process
 * ends: a Hadoop client the run waits for. 0: none. */
void kg_stop_also_signal(int pgid);

#endif
