/* stop.c: a graceful stop on SIGTERM or SIGINT: the first signal asks the run to stop, a second ends the process. */
#include "stop.h"

#include <signal.h>
#include <string.h>

#include "kg_common.h"
#include "log.h"

/* What the first signal's notice says after its name. */
#define STOP_WHAT                                                                                                      \
  ": finishing the batches in hand and committing what was completely written (signal again to stop at once)"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t stop_group; /* kg_stop_also_signal */

/* Async-signal-safe: the first signal is noted (the run polls it); a second one takes the default action, which
 * ends the process, as a user pressing Ctrl-C twice expects. */
static void on_stop_signal(int sig) {
  if (stop_signal) {
    if (stop_group > 0) kill(-(pid_t)stop_group, sig);
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  stop_signal = sig;
  kg_log_signal_notice(sig == SIGINT ? "stopping on SIGINT" STOP_WHAT : "stopping on SIGTERM" STOP_WHAT,
                       sig == SIGINT ? "SIGINT" : "SIGTERM");
}

void kg_stop_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

int kg_stop_signal(void) { return stop_signal; }

void kg_stop_also_signal(int pgid) { stop_group = pgid; }
