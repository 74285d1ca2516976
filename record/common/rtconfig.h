/* The contract between the launcher (commrec) and the preloaded runtime
 * (libcommrec.so): environment variables, set by the launcher, read once by
 * the runtime at load time.  Like uftrace's UFTRACE_* variables: simple and
 * debuggable (a user can set them by hand with LD_PRELOAD). */
#ifndef CT_RTCONFIG_H
#define CT_RTCONFIG_H

#define CT_ENV_SPOOL       "COMMTRACE_SPOOL"        /* spool directory (required) */
#define CT_ENV_SAMPLER     "COMMTRACE_SAMPLER"      /* soft | pebs | ibs | inst (resolved, never auto) */
#define CT_ENV_PERIOD      "COMMTRACE_PERIOD"       /* soft: CPU us; event samplers: events */
#define CT_ENV_EVENTS      "COMMTRACE_EVENTS"       /* pebs: comma list of libpfm4 names[@period] */
#define CT_ENV_WATCHPOINTS "COMMTRACE_WATCHPOINTS"  /* 0..4 */
#define CT_ENV_BOARD       "COMMTRACE_BOARD_SIZE"   /* online bulletin board entries */
#define CT_ENV_LINE_SIZE   "COMMTRACE_LINE_SIZE"    /* bytes */
#define CT_ENV_NO_ALLOC    "COMMTRACE_NO_ALLOC"     /* "1": no allocation records */
#define CT_ENV_FULL        "COMMTRACE_FULL"         /* inst: "1": every access */
#define CT_ENV_VERBOSE     "COMMTRACE_VERBOSE"      /* 0 quiet, 1 normal, 2+ debug */
#define CT_ENV_PID         "COMMTRACE_PID"          /* pid the settings are for: a forked child ignores them */

/* Exit status of commrec when it could not record (the program's own status
 * is returned otherwise).  Chosen outside the range shells use for signals
 * (128+n) and the common 0..3 of programs. */
#define CT_EXIT_RECORD_FAILED 125

#endif
