#!/usr/bin/env bash
# The runtime's own allocations are not the program's: a program built with
# commrec-cc, recorded with --sampler inst, allocates only from main (and
# what it calls: pthread_create, printf), so every allocation call site
# recorded has a frame in the program's code.  The runtime's lookups of the
# functions it wraps (dlsym, dlopen: rt_real) allocate from its
# constructors, with no program frame; recorded, they were heap objects of
# the program, and their libc and loader frames made commrec load those
# files' DWARF.
. "$(dirname "$0")/../lib.sh"

CC_WRAP="$CT_ROOT/record/commrec-cc"
require rec_alloc_self "$COMMREC" "$COMMANALYZE" "$CT_BUILD/libcommrec-inst.so" gcc python3
export COMMREC_INST_LIBDIR="$CT_BUILD"
unset COMMTRACE_SPOOL COMMTRACE_PID
cd "$WORK" || exit 1
cat >prog.c <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static int *buf;
static void *work(void *arg)
{
	for (int i = 0; i < 1000; i++)
		buf[i] += (int)(long)arg;
	return NULL;
}
int main(void)
{
	buf = calloc(1000, sizeof *buf);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d\n", buf[0] + buf[999]);
	return 0;
}
C
if ! CC=gcc "$CC_WRAP" -O1 -pthread prog.c -o prog 2>cc.err; then
	fail rec_alloc_self "commrec-cc: $(head -c 300 cc.err)"
	done_tests
fi
if ! "$COMMREC" -q --keep-spool -o t.zst --sampler inst -- ./prog >/dev/null 2>rec.err; then
	fail rec_alloc_self "commrec: $(head -c 300 rec.err)"
	done_tests
fi
"$COMMANALYZE" dump --raw t.zst >dump.txt 2>/dev/null
# the program's code: its executable mappings in the maps file
python3 - "$WORK/prog" t.zst.spool/maps-*.txt dump.txt <<'PY' >check.out
import sys
prog, maps, dump = sys.argv[1], sys.argv[2], sys.argv[3]
ranges = []
for l in open(maps):
    f = l.split()
    if len(f) >= 5 and f[-1] == prog and 'x' in f[1]:
        lo, hi = (int(x, 16) for x in f[0].split('-'))
        ranges.append((lo, hi))
sites = foreign = 0
for l in open(dump):
    if ' callsite id=' not in l:
        continue
    sites += 1
    pcs = [int(x, 16) for x in l.split('pcs=')[1].split(',')]
    if not any(lo <= p < hi for p in pcs for lo, hi in ranges):
        foreign += 1
        print('no program frame:', l.strip())
print('sites=%d foreign=%d ranges=%d' % (sites, foreign, len(ranges)))
PY
check rec_alloc_self_sites grep -q '^sites=[1-9]' check.out
check rec_alloc_self_only_program sh -c "grep -q ' foreign=0 ranges=[1-9]' check.out || { cat check.out; false; }"
done_tests
