/* Names of enumerated values, as they appear in analyzer output and in
 * FORMAT.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commtrace.h"

static const char *const rec_names[CT_REC_TYPE_MAX + 1] = {
	[CT_REC_SAMPLE] = "sample",
	[CT_REC_WP_ARM] = "wp_arm",
	[CT_REC_WP_HIT] = "wp_hit",
	[CT_REC_ALLOC] = "alloc",
	[CT_REC_FREE] = "free",
	[CT_REC_CALLSITE] = "callsite",
	[CT_REC_THREAD_START] = "thread_start",
	[CT_REC_THREAD_END] = "thread_end",
	[CT_REC_MARKER] = "marker",
	[CT_REC_LOST] = "lost",
	[CT_REC_FUNC_ENTER] = "func_enter",
	[CT_REC_FUNC_EXIT] = "func_exit",
	[CT_REC_SKIPPED] = "skipped",
	[CT_REC_OWNER_XFER] = "owner_xfer",
	[CT_REC_OWNER_WIN] = "owner_win",
};

const char *ct_rec_type_name(unsigned type)
{
	return type <= CT_REC_TYPE_MAX ? rec_names[type] : NULL;
}

int ct_rec_type_from_name(const char *name)
{
	if (!name)
		return -1;
	for (int i = 1; i <= CT_REC_TYPE_MAX; i++)
		if (rec_names[i] && !strcmp(rec_names[i], name))
			return i;
	return -1;
}

const char *ct_access_kind_name(unsigned kind)
{
	static const char *const n[] = { "load", "store", "atomic" };
	return kind < 3 ? n[kind] : NULL;
}

const char *ct_lost_reason_name(unsigned reason)
{
	static const char *const n[] = {
		[CT_LOST_BUFFER_FULL] = "buffer_full",
		[CT_LOST_WRITE_ERROR] = "write_error",
		[CT_LOST_PMU] = "pmu",
		[CT_LOST_THROTTLE] = "throttle",
		[CT_LOST_WP_SETUP] = "wp_setup",
	};
	return reason < sizeof n / sizeof *n ? n[reason] : NULL;
}

const char *ct_skip_reason_name(unsigned reason)
{
	static const char *const n[CT_SKIP_REASON_MAX + 1] = {
		[CT_SKIP_NO_MEMORY_OPERAND] = "no_memory_operand",
		[CT_SKIP_LEA_NOP] = "lea_nop",
		[CT_SKIP_GATHER_SCATTER] = "gather_scatter",
		[CT_SKIP_DECODE_FAILED] = "decode_failed",
		[CT_SKIP_UNREADABLE_IP] = "unreadable_ip",
		[CT_SKIP_NOT_LOAD_STORE] = "not_load_store",
		[CT_SKIP_KERNEL] = "kernel",
		[CT_SKIP_RUNTIME] = "runtime",
	};
	return reason <= CT_SKIP_REASON_MAX ? n[reason] : NULL;
}

const char *ct_section_name(unsigned kind)
{
	static const char *const n[CT_SEC_MAX + 1] = {
		[CT_SEC_HEADER] = "header",
		[CT_SEC_THREAD] = "thread",
		[CT_SEC_MACHINE] = "machine",
		[CT_SEC_CONFIG] = "config",
		[CT_SEC_CMDLINE] = "cmdline",
		[CT_SEC_MAPS] = "maps",
		[CT_SEC_SUMMARY] = "summary",
		[CT_SEC_SYMBOLS] = "symbols",
		[CT_SEC_COUNTS] = "counts",
	};
	return kind <= CT_SEC_MAX ? n[kind] : NULL;
}

void ct_marker_omp_name(char *buf, size_t cap, uint64_t fn)
{
	snprintf(buf, cap, CT_MARKER_OMP_PREFIX "0x%llx", (unsigned long long)fn);
}

bool ct_marker_omp_fn(const char *name, uint64_t *fn)
{
	size_t n = strlen(CT_MARKER_OMP_PREFIX);
	if (strncmp(name, CT_MARKER_OMP_PREFIX "0x", n + 2) || !isxdigit((unsigned char)name[n + 2]))
		return false;
	char *end;
	unsigned long long v = strtoull(name + n + 2, &end, 16);
	if (*end)
		return false;
	*fn = v;
	return true;
}
