/*
 * pause: the CRI sandbox "infra" process for kubelet-ts test images.
 *
 * Written for kubelet-ts after the behaviour of Kubernetes' build/pause/linux/pause.c:
 * it holds the pod's namespaces open, sleeps until SIGINT or SIGTERM, and, when it runs
 * as PID 1 of a shared PID namespace, reaps orphaned zombies (SIGCHLD).
 *
 * Build: gcc -Os -static -o pause pause.c
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STRINGIFY(x) #x
#define VERSION_STRING(x) STRINGIFY(x)
#ifndef VERSION
#define VERSION kubelet-ts-3.9
#endif

static void sigdown(int signo) {
  psignal(signo, "Shutting down, got signal");
  exit(0);
}

static void sigreap(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  int i;
  for (i = 1; i < argc; ++i) {
    if (!strcasecmp(argv[i], "-v")) {
      printf("pause.c %s\n", VERSION_STRING(VERSION));
      return 0;
    }
  }

  if (getpid() != 1)
    /* Not an error: the process may run in the host PID namespace or a shared one. */
    fprintf(stderr, "Warning: pause should be the first process\n");

  struct sigaction down;
  memset(&down, 0, sizeof(down));
  down.sa_handler = sigdown;
  if (sigaction(SIGINT, &down, NULL) < 0) return 1;
  if (sigaction(SIGTERM, &down, NULL) < 0) return 2;

  struct sigaction reap;
  memset(&reap, 0, sizeof(reap));
  reap.sa_handler = sigreap;
  reap.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGCHLD, &reap, NULL) < 0) return 3;

  for (;;)
    pause();
  fprintf(stderr, "Error: infinite loop terminated\n");
  return 42;
}
