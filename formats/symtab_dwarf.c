/* DWARF into a symbol table module, with libdwarf (dwarf_init_b,
 * dwarf_next_cu_header_d, dwarf_srclines_b: in the pre-0.1 API of Debian
 * 12's 20210528 and in the 0.x/2.x API of newer distributions, see
 * dwarf_open below).  Reads, per compilation unit:
 *   - the line table (all rows, or only the rows covering given addresses),
 *   - functions with an address range (static ones a stripped .symtab lost),
 *   - variables at a fixed address (DW_OP_addr), globals and function
 *     statics, with their types: structs/unions with members, arrays with
 *     element type and count, and leaves (base types, pointers, enums),
 *   - the types of the blocks that recorded allocation call sites return
 *     ("allocation sites" below: the code after the call, decoded with Zydis,
 *     matched with the variables' locations).
 * Without HAVE_LIBDWARF this file is empty. */
#ifdef HAVE_LIBDWARF
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <libdwarf.h>
#include <Zydis/Zydis.h>

#include "symtab.h"

/* The two APIs differ, for what we use, in dwarf_init_b (an access mode
 * before the group number before 0.1), dwarf_finish (an error pointer
 * before 0.1), the name of a location list's destructor and the integer
 * types of dwarf_get_fde_info_for_cfa_reg3_b.  Chosen at
 * compile time: 0.x and later define
 * DW_LIBDWARF_VERSION_MAJOR and no longer DW_DLC_READ. */
#if defined(DW_LIBDWARF_VERSION_MAJOR) || !defined(DW_DLC_READ)
static int dwarf_open(int fd, Dwarf_Debug *dbg, Dwarf_Error *e)
{
	return dwarf_init_b(fd, DW_GROUPNUMBER_ANY, NULL, NULL, dbg, e);
}
static void dwarf_close(Dwarf_Debug dbg)
{
	dwarf_finish(dbg);
}
static void dwarf_free_loc_head(Dwarf_Loc_Head_c head)
{
	dwarf_dealloc_loc_head_c(head);
}
/* dwarf_get_fde_info_for_cfa_reg3_b's integers and block (fde_cfa) */
typedef Dwarf_Unsigned cfa_int;
typedef Dwarf_Block cfa_block;
#else
static int dwarf_open(int fd, Dwarf_Debug *dbg, Dwarf_Error *e)
{
	return dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, dbg, e);
}
static void dwarf_close(Dwarf_Debug dbg)
{
	Dwarf_Error e = NULL;
	dwarf_finish(dbg, &e);
}
static void dwarf_free_loc_head(Dwarf_Loc_Head_c head)
{
	dwarf_loc_head_c_dealloc(head);
}
typedef Dwarf_Signed cfa_int;
typedef Dwarf_Ptr cfa_block;
#endif

/* The CFA rule at pc, when it is a register plus an offset. */
static bool fde_cfa(Dwarf_Fde fde, Dwarf_Addr pc, int *reg, int64_t *off)
{
	Dwarf_Small vt = 0;
	cfa_int rel = 0, r = 0, o = 0;
	cfa_block blk;
	Dwarf_Addr row = 0, next = 0;
	Dwarf_Bool more = 0;
	Dwarf_Error e = NULL;
	if (dwarf_get_fde_info_for_cfa_reg3_b(fde, pc, &vt, &rel, &r, &o, &blk, &row, &more, &next,
	                                      &e) != DW_DLV_OK || vt != DW_EXPR_OFFSET || !rel)
		return false;
	*reg = (int)r;
	*off = (int64_t)o;   /* signed; 0.x returns it as unsigned */
	return true;
}

#define DIE_DEPTH_MAX 64
#define TYPE_DEPTH_MAX 24

struct memo_ent {
	Dwarf_Off off;
	uint32_t type;
	bool used;
};

struct dw {
	Dwarf_Debug dbg;
	struct st_module *m;
	const struct st_addrs *ips;
	struct memo_ent *memo;          /* DIE offset -> type index */
	size_t memo_cap, memo_n;
	uint32_t *fmap;                 /* per CU: DWARF file number -> module file */
	size_t fmap_n;
	struct site_info *si;           /* allocation sites: NULL when there are none */
	struct cu_pick *pick;           /* CUs read in full: NULL, all of them */
	bool cfi_read;                  /* .eh_frame: read on first use (cfa_at) */
	Dwarf_Cie *cies;
	Dwarf_Fde *fdes;                /* NULL: none */
	Dwarf_Signed ncies, nfdes;
	int oom;
};

/* Allocation sites of this module (file addresses) and what their
 * inference needs from the walk: the functions with an address range and
 * the variables at fixed addresses. */
struct dw_ref {
	uint64_t lo, hi;                /* function range; variable: addr, addr */
	Dwarf_Off off;                  /* its DIE */
};
struct site_info {
	uint64_t *sites;
	size_t nsites;
	struct dw_ref *fns, *globals;
	size_t nfns, cap_fns, nglobals, cap_globals;
};
static void note_ref(struct dw *d, bool fn, Dwarf_Die die, uint64_t lo, uint64_t hi);
static void note_ranges(struct dw *d, Dwarf_Die die);

static size_t memo_slot(const struct dw *d, Dwarf_Off off)
{
	uint64_t h = off * 0x9E3779B97F4A7C15ull;
	size_t mask = d->memo_cap - 1;
	size_t i = (size_t)(h >> 20) & mask;
	while (d->memo[i].used && d->memo[i].off != off)
		i = (i + 1) & mask;
	return i;
}

static bool memo_get(const struct dw *d, Dwarf_Off off, uint32_t *t)
{
	if (!d->memo_cap)
		return false;
	size_t i = memo_slot(d, off);
	if (!d->memo[i].used)
		return false;
	*t = d->memo[i].type;
	return true;
}

static void memo_put(struct dw *d, Dwarf_Off off, uint32_t t)
{
	if ((d->memo_n + 1) * 2 > d->memo_cap) {
		size_t nc = d->memo_cap ? d->memo_cap * 2 : 1024;
		struct memo_ent *old = d->memo;
		size_t oc = d->memo_cap;
		d->memo = calloc(nc, sizeof *d->memo);
		if (!d->memo) {
			d->memo = old;
			d->oom = 1;
			return;
		}
		d->memo_cap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i].used)
				d->memo[memo_slot(d, old[i].off)] = old[i];
		free(old);
	}
	size_t i = memo_slot(d, off);
	if (!d->memo[i].used)
		d->memo_n++;
	d->memo[i] = (struct memo_ent){ off, t, true };
}

/* ---- attribute helpers ---------------------------------------------------- */

static bool attr_u(Dwarf_Die die, Dwarf_Half at, uint64_t *v)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (dwarf_attr(die, at, &a, &e) != DW_DLV_OK)
		return false;
	Dwarf_Unsigned u;
	Dwarf_Signed s;
	bool ok = false;
	if (dwarf_formudata(a, &u, &e) == DW_DLV_OK) {
		*v = u;
		ok = true;
	} else if (dwarf_formsdata(a, &s, &e) == DW_DLV_OK && s >= 0) {
		*v = (uint64_t)s;
		ok = true;
	}
	dwarf_dealloc_attribute(a);
	return ok;
}

static bool attr_ref(Dwarf_Die die, Dwarf_Half at, Dwarf_Off *off)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (dwarf_attr(die, at, &a, &e) != DW_DLV_OK)
		return false;
	bool ok = dwarf_global_formref(a, off, &e) == DW_DLV_OK;
	dwarf_dealloc_attribute(a);
	return ok;
}

static bool attr_flag(Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (dwarf_attr(die, at, &a, &e) != DW_DLV_OK)
		return false;
	Dwarf_Bool b = 0;
	bool ok = dwarf_formflag(a, &b, &e) == DW_DLV_OK && b;
	dwarf_dealloc_attribute(a);
	return ok;
}

/* Expression bytes of an attribute (exprloc or block form). */
static bool attr_expr(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at, const uint8_t **p, uint64_t *len)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (dwarf_attr(die, at, &a, &e) != DW_DLV_OK)
		return false;
	bool ok = false;
	Dwarf_Half form = 0;
	if (dwarf_whatform(a, &form, &e) == DW_DLV_OK) {
		if (form == DW_FORM_exprloc) {
			Dwarf_Unsigned l;
			Dwarf_Ptr ptr;
			if (dwarf_formexprloc(a, &l, &ptr, &e) == DW_DLV_OK) {
				*p = ptr;
				*len = l;
				ok = true;
			}
		} else if (form == DW_FORM_block1 || form == DW_FORM_block2 ||
		           form == DW_FORM_block4 || form == DW_FORM_block) {
			Dwarf_Block *b;
			if (dwarf_formblock(a, &b, &e) == DW_DLV_OK) {
				*p = b->bl_data;   /* points into the section data */
				*len = b->bl_len;
				dwarf_dealloc(dbg, b, DW_DLA_BLOCK);
				ok = true;
			}
		}
	}
	dwarf_dealloc_attribute(a);
	return ok;
}

static uint64_t uleb(const uint8_t **p, const uint8_t *end, bool *ok)
{
	uint64_t v = 0;
	for (int sh = 0; *p < end && sh < 64; sh += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return v;
	}
	*ok = false;
	return 0;
}

static const char *die_name(Dwarf_Die die)
{
	char *n = NULL;
	Dwarf_Error e = NULL;
	if (dwarf_diename(die, &n, &e) != DW_DLV_OK)
		return NULL;
	return n;
}

static Dwarf_Die die_at(struct dw *d, Dwarf_Off off)
{
	Dwarf_Die die = NULL;
	Dwarf_Error e = NULL;
	if (dwarf_offdie_b(d->dbg, off, 1, &die, &e) != DW_DLV_OK)
		return NULL;
	return die;
}

/* ---- types ---------------------------------------------------------------- */

static uint32_t type_of(struct dw *d, Dwarf_Off off, int depth);

static uint64_t type_size(struct dw *d, uint32_t t)
{
	return t < d->m->ntypes ? d->m->types[t].size : 0;
}

static uint32_t leaf(struct dw *d, const char *name, uint64_t size)
{
	return st_add_type(d->m, ST_T_BASE, name, size, ST_NONE, 0);
}

struct mem_tmp {
	const char *name;
	uint64_t off, size;
	uint32_t type;
};

/* A member's byte offset in its struct (a constant, DW_OP_plus_uconst, or
 * a bit offset); 0 when it has none (a union's members). */
static uint64_t member_offset(struct dw *d, Dwarf_Die c)
{
	uint64_t moff = 0;
	if (!attr_u(c, DW_AT_data_member_location, &moff)) {
		const uint8_t *p;
		uint64_t l;
		if (attr_expr(d->dbg, c, DW_AT_data_member_location, &p, &l) && l &&
		    p[0] == DW_OP_plus_uconst) {
			bool ok = true;
			const uint8_t *q = p + 1;
			moff = uleb(&q, p + l, &ok);
			if (!ok)
				moff = 0;
		}
	}
	uint64_t bitpos;
	if (attr_u(c, DW_AT_data_bit_offset, &bitpos))
		moff = bitpos / 8;
	return moff;
}

static uint32_t make_struct(struct dw *d, Dwarf_Die die, Dwarf_Half tag, int depth)
{
	const char *n = die_name(die);
	char name[256];
	if (n)
		snprintf(name, sizeof name, "%s %s",
		         tag == DW_TAG_union_type ? "union" : tag == DW_TAG_class_type ? "class" : "struct", n);
	uint64_t size = 0;
	attr_u(die, DW_AT_byte_size, &size);
	struct mem_tmp *mt = NULL;
	size_t nm = 0, cap = 0;
	Dwarf_Die c = NULL, next;
	Dwarf_Error e = NULL;
	if (dwarf_child(die, &c, &e) == DW_DLV_OK) {
		for (; c; c = next) {
			Dwarf_Half ct = 0;
			if (dwarf_tag(c, &ct, &e) == DW_DLV_OK && ct == DW_TAG_member &&
			    !attr_flag(c, DW_AT_external) && !attr_flag(c, DW_AT_declaration)) {
				uint64_t moff = member_offset(d, c);
				Dwarf_Off to;
				uint32_t mtype = attr_ref(c, DW_AT_type, &to) ? type_of(d, to, depth + 1) : ST_NONE;
				uint64_t msz = type_size(d, mtype);
				uint64_t bs;
				if (attr_u(c, DW_AT_byte_size, &bs))
					msz = bs;
				if (nm == cap) {
					cap = cap ? cap * 2 : 8;
					struct mem_tmp *q = realloc(mt, cap * sizeof *mt);
					if (!q) {
						d->oom = 1;
						dwarf_dealloc_die(c);
						break;
					}
					mt = q;
				}
				mt[nm++] = (struct mem_tmp){ die_name(c), moff, msz, mtype };
			}
			next = NULL;
			if (dwarf_siblingof_b(d->dbg, c, 1, &next, &e) != DW_DLV_OK)
				next = NULL;
			dwarf_dealloc_die(c);
		}
	}
	uint32_t t = st_add_type(d->m, tag == DW_TAG_union_type ? ST_T_UNION : ST_T_STRUCT,
	                         n ? name : NULL, size, ST_NONE, 0);
	for (size_t i = 0; t != ST_NONE && i < nm; i++)
		if (st_add_member(d->m, t, mt[i].name, mt[i].off, mt[i].size, mt[i].type))
			d->oom = 1;
	free(mt);
	return t;
}

static uint32_t make_array(struct dw *d, Dwarf_Die die, int depth)
{
	Dwarf_Off to;
	uint32_t elem = attr_ref(die, DW_AT_type, &to) ? type_of(d, to, depth + 1) : ST_NONE;
	uint64_t counts[8];
	int nc = 0;
	Dwarf_Die c = NULL, next;
	Dwarf_Error e = NULL;
	if (dwarf_child(die, &c, &e) == DW_DLV_OK) {
		for (; c; c = next) {
			Dwarf_Half ct = 0;
			if (dwarf_tag(c, &ct, &e) == DW_DLV_OK && ct == DW_TAG_subrange_type && nc < 8) {
				uint64_t v = 0, lb = 0;
				if (attr_u(c, DW_AT_count, &v))
					counts[nc++] = v;
				else if (attr_u(c, DW_AT_upper_bound, &v)) {
					attr_u(c, DW_AT_lower_bound, &lb);
					counts[nc++] = v >= lb ? v - lb + 1 : 0;
				} else
					counts[nc++] = 0;
			}
			next = NULL;
			if (dwarf_siblingof_b(d->dbg, c, 1, &next, &e) != DW_DLV_OK)
				next = NULL;
			dwarf_dealloc_die(c);
		}
	}
	if (!nc)
		counts[nc++] = 0;
	/* a[3][4]: array of 3 of (array of 4 of elem): build from the innermost */
	uint32_t t = elem;
	for (int i = nc - 1; i >= 0; i--) {
		uint64_t es = type_size(d, t);
		t = st_add_type(d->m, ST_T_ARRAY, NULL, es * counts[i], t, counts[i]);
		if (t == ST_NONE)
			break;
	}
	uint64_t bs;
	if (t != ST_NONE && attr_u(die, DW_AT_byte_size, &bs))
		d->m->types[t].size = bs;
	return t;
}

/* Type index for the DIE at off; typedefs and qualifiers resolve to the
 * underlying type (an anonymous struct takes the typedef's name). */
static uint32_t type_of(struct dw *d, Dwarf_Off off, int depth)
{
	uint32_t t;
	if (memo_get(d, off, &t))
		return t;
	if (depth > TYPE_DEPTH_MAX || d->oom)
		return ST_NONE;
	Dwarf_Die die = die_at(d, off);
	if (!die)
		return ST_NONE;
	Dwarf_Half tag = 0;
	Dwarf_Error e = NULL;
	t = ST_NONE;
	if (dwarf_tag(die, &tag, &e) != DW_DLV_OK) {
		dwarf_dealloc_die(die);
		return ST_NONE;
	}
	uint64_t size = 0;
	Dwarf_Off to;
	switch (tag) {
	case DW_TAG_base_type:
	case DW_TAG_enumeration_type:
		attr_u(die, DW_AT_byte_size, &size);
		t = leaf(d, die_name(die), size);
		break;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type: {
		if (!attr_u(die, DW_AT_byte_size, &size))
			size = 8;
		char name[256] = "pointer";
		Dwarf_Die td;
		if (attr_ref(die, DW_AT_type, &to) && (td = die_at(d, to))) {
			const char *n = die_name(td);
			Dwarf_Half tt = 0;
			dwarf_tag(td, &tt, &e);
			if (n)
				snprintf(name, sizeof name, "%s%s *",
				         tt == DW_TAG_structure_type ? "struct " :
				         tt == DW_TAG_union_type ? "union " : "", n);
			dwarf_dealloc_die(td);
		} else {
			snprintf(name, sizeof name, "void *");
		}
		t = leaf(d, name, size);
		break;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		t = make_struct(d, die, tag, depth);
		break;
	case DW_TAG_array_type:
		t = make_array(d, die, depth);
		break;
	case DW_TAG_typedef:
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
		if (attr_ref(die, DW_AT_type, &to)) {
			t = type_of(d, to, depth + 1);
			if (tag == DW_TAG_typedef && t < d->m->ntypes && d->m->types[t].name == ST_NONE &&
			    d->m->types[t].kind != ST_T_ARRAY) {
				const char *n = die_name(die);
				if (n)
					d->m->types[t].name = st_intern(d->m, n);
			}
		}
		break;
	case DW_TAG_subroutine_type:
		t = leaf(d, "function", 0);
		break;
	default:
		break;
	}
	dwarf_dealloc_die(die);
	memo_put(d, off, t);
	return t;
}

/* ---- variables and functions ---------------------------------------------- */

static void do_variable(struct dw *d, Dwarf_Die die)
{
	const uint8_t *p;
	uint64_t l;
	if (!attr_expr(d->dbg, die, DW_AT_location, &p, &l) || l != 9 || p[0] != DW_OP_addr)
		return;
	uint64_t addr = 0;
	for (int i = 0; i < 8; i++)
		addr |= (uint64_t)p[1 + i] << (8 * i);
	const char *name = die_name(die);
	Dwarf_Off to = 0, spec;
	bool has_type = attr_ref(die, DW_AT_type, &to);
	if ((!name || !has_type) && attr_ref(die, DW_AT_specification, &spec)) {
		Dwarf_Die sd = die_at(d, spec);
		if (sd) {
			if (!name)
				name = die_name(sd);   /* string lives in the section */
			if (!has_type)
				has_type = attr_ref(sd, DW_AT_type, &to);
			dwarf_dealloc_die(sd);
		}
	}
	if (!name || !addr)
		return;
	uint32_t t = has_type ? type_of(d, to, 0) : ST_NONE;
	if (st_add_var(d->m, addr, type_size(d, t), name, t))
		d->oom = 1;
	note_ref(d, false, die, addr, addr);
}

static void do_subprogram(struct dw *d, Dwarf_Die die)
{
	Dwarf_Addr lo = 0, hi = 0;
	Dwarf_Half form = 0;
	enum Dwarf_Form_Class cls;
	Dwarf_Error e = NULL;
	if (dwarf_lowpc(die, &lo, &e) != DW_DLV_OK || !lo) {
		note_ranges(d, die);   /* split (hot/cold) functions: their parts */
		return;
	}
	if (dwarf_highpc_b(die, &hi, &form, &cls, &e) != DW_DLV_OK)
		return;
	if (cls == DW_FORM_CLASS_CONSTANT)
		hi += lo;
	if (hi <= lo)
		return;
	note_ref(d, true, die, lo, hi);
	const char *name = die_name(die);
	Dwarf_Off spec;
	if (!name && (attr_ref(die, DW_AT_specification, &spec) ||
	              attr_ref(die, DW_AT_abstract_origin, &spec))) {
		Dwarf_Die sd = die_at(d, spec);
		if (sd) {
			name = die_name(sd);
			dwarf_dealloc_die(sd);
		}
	}
	if (name && st_add_func(d->m, lo, hi - lo, name))
		d->oom = 1;
}

/* What a walk of a unit reads: in full (a unit whose code holds a recorded
 * instruction or allocation site: every function and its nested scopes,
 * their static variables too), its variables only (the top level and
 * namespaces, where C++ static members are defined too: wanted when the
 * module holds a recorded data address), or its functions' ranges only (a
 * unit that holds a constructor an allocation site calls, see
 * ctor_units). */
enum walk_what { WALK_FULL = 1, WALK_VARS = 2, WALK_FUNCS = 4 };

static void walk(struct dw *d, Dwarf_Die parent, int depth, unsigned what)
{
	if (depth > DIE_DEPTH_MAX || d->oom)
		return;
	Dwarf_Die c = NULL, next;
	Dwarf_Error e = NULL;
	if (dwarf_child(parent, &c, &e) != DW_DLV_OK)
		return;
	for (; c; c = next) {
		Dwarf_Half tag = 0;
		if (dwarf_tag(c, &tag, &e) == DW_DLV_OK) {
			switch (tag) {
			case DW_TAG_variable:
				if (what & (WALK_FULL | WALK_VARS))
					do_variable(d, c);
				break;
			case DW_TAG_subprogram:
				if (what & (WALK_FULL | WALK_FUNCS))
					do_subprogram(d, c);
				if (what & WALK_FULL)
					walk(d, c, depth + 1, what);
				break;
			case DW_TAG_lexical_block:
			case DW_TAG_inlined_subroutine:
				if (what & WALK_FULL)
					walk(d, c, depth + 1, what);
				break;
			case DW_TAG_namespace:
				walk(d, c, depth + 1, what);
				break;
			default:
				break;
			}
		}
		next = NULL;
		if (dwarf_siblingof_b(d->dbg, c, 1, &next, &e) != DW_DLV_OK)
			next = NULL;
		dwarf_dealloc_die(c);
	}
}

/* ---- line tables ----------------------------------------------------------- */

/* Is an address of set (runtime addresses, sorted) in the file range
 * [a, b) of a module at bias?  (Compared as runtime addresses: the set
 * holds every module's, and those below this one's would wrap around.) */
static bool set_hits(const struct st_addrs *set, uint64_t bias, uint64_t a, uint64_t b)
{
	if (!set || !set->n || b <= a)
		return false;
	uint64_t ra = a + bias, rb = b + bias;
	size_t lo = 0, hi = set->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (set->v[mid] < ra)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < set->n && set->v[lo] < rb;
}

/* Is some address of the wanted set in the file range [a, b)? */
static bool wanted(const struct dw *d, uint64_t a, uint64_t b)
{
	if (!d->ips || !d->ips->v)
		return true;
	return set_hits(d->ips, d->m->bias, a, b);
}

static uint32_t file_index(struct dw *d, Dwarf_Line ln, Dwarf_Unsigned fno)
{
	if (fno < d->fmap_n && d->fmap[fno] != ST_NONE)
		return d->fmap[fno];
	char *src = NULL;
	Dwarf_Error e = NULL;
	if (dwarf_linesrc(ln, &src, &e) != DW_DLV_OK || !src)
		return ST_NONE;
	uint32_t f = st_add_file(d->m, src);
	dwarf_dealloc(d->dbg, src, DW_DLA_STRING);
	if (fno < 4096) {
		if (fno >= d->fmap_n) {
			size_t nn = (size_t)fno + 16;
			uint32_t *q = realloc(d->fmap, nn * sizeof *q);
			if (!q)
				return f;
			for (size_t i = d->fmap_n; i < nn; i++)
				q[i] = ST_NONE;
			d->fmap = q;
			d->fmap_n = nn;
		}
		d->fmap[fno] = f;
	}
	return f;
}

static void do_lines(struct dw *d, Dwarf_Die cu)
{
	Dwarf_Unsigned ver = 0;
	Dwarf_Small tc = 0;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Error e = NULL;
	if (dwarf_srclines_b(cu, &ver, &tc, &ctx, &e) != DW_DLV_OK)
		return;
	Dwarf_Line *lines = NULL;
	Dwarf_Signed n = 0;
	for (size_t i = 0; i < d->fmap_n; i++)
		d->fmap[i] = ST_NONE;
	if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &e) == DW_DLV_OK) {
		for (Dwarf_Signed i = 0; i + 1 < n && !d->oom; i++) {
			Dwarf_Bool endseq = 0;
			Dwarf_Addr a = 0, b = 0;
			Dwarf_Unsigned lineno = 0, fno = 0;
			if (dwarf_lineendsequence(lines[i], &endseq, &e) != DW_DLV_OK || endseq)
				continue;
			if (dwarf_lineaddr(lines[i], &a, &e) != DW_DLV_OK ||
			    dwarf_lineaddr(lines[i + 1], &b, &e) != DW_DLV_OK || b <= a || !a)
				continue;
			if (b - a > UINT32_MAX || !wanted(d, a, b))
				continue;
			if (dwarf_lineno(lines[i], &lineno, &e) != DW_DLV_OK)
				continue;
			if (dwarf_line_srcfileno(lines[i], &fno, &e) != DW_DLV_OK)
				fno = UINT32_MAX;
			uint32_t f = file_index(d, lines[i], fno);
			if (st_add_line(d->m, a, (uint32_t)(b - a), f, (uint32_t)lineno))
				d->oom = 1;
		}
	}
	dwarf_srclines_dealloc_b(ctx);
}

/* ---- allocation sites --------------------------------------------------------
 * The type of the block an allocator call returns, from what the code does
 * with the result right after the call (its return address, the site):
 *   - it stays in or moves to registers: a variable the DWARF locates in one
 *     of them at that pc (-O2; an inlined constructor's `this` too);
 *   - it is stored to the frame (rbp+disp, -O0) or to a global (rip+disp): the
 *     variable at that stack slot or address;
 *   - it is passed as the first argument (rdi) to a constructor (C++ `new T`).
 * The block's type is the pointee of that variable's (or `this`') pointer
 * type; `p = malloc(n * sizeof *p)` makes it an array of it (the analyzer
 * indexes by the type's size).  Anything else (a store into a structure, a
 * wrapper that returns the result, void *) leaves the site untyped.  A
 * stack slot's variable is located from the frame base (DW_OP_fbreg): when
 * that is the CFA, the call frame information (.eh_frame) gives it at the
 * store as rsp or rbp plus an offset; without it (a separate debug file), a
 * function with the standard push rbp; mov rsp, rbp prologue is assumed
 * (rbp + 16).  An allocation helper inlined into the caller (LULESH's
 * Allocate<T>) leaves the call in the caller, whose variable is found so. */

#define SITE_INSNS 24       /* instructions decoded after a call */
#define SITE_EVENTS 48

static void note_ref(struct dw *d, bool fn, Dwarf_Die die, uint64_t lo, uint64_t hi)
{
	struct site_info *si = d->si;
	if (!si)
		return;
	Dwarf_Off off = 0;
	Dwarf_Error e = NULL;
	if (dwarf_dieoffset(die, &off, &e) != DW_DLV_OK)
		return;
	struct dw_ref **v = fn ? &si->fns : &si->globals;
	size_t *n = fn ? &si->nfns : &si->nglobals, *cap = fn ? &si->cap_fns : &si->cap_globals;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct dw_ref *q = realloc(*v, nc * sizeof *q);
		if (!q) {
			d->oom = 1;
			return;
		}
		*v = q;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct dw_ref){ lo, hi, off };
}

/* The address ranges of a function described by DW_AT_ranges (DWARF 5
 * .debug_rnglists; DWARF 4's .debug_ranges are not read: such a function
 * leaves its sites untyped). */
static void note_ranges(struct dw *d, Dwarf_Die die)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (!d->si || dwarf_attr(die, DW_AT_ranges, &a, &e) != DW_DLV_OK)
		return;
	Dwarf_Half form = 0;
	Dwarf_Unsigned val = 0, n = 0, goff = 0;
	Dwarf_Off ref = 0;
	Dwarf_Rnglists_Head head = NULL;
	bool ok = dwarf_whatform(a, &form, &e) == DW_DLV_OK &&
	          (form == DW_FORM_rnglistx ? dwarf_formudata(a, &val, &e) == DW_DLV_OK
	           : form == DW_FORM_sec_offset && dwarf_global_formref(a, &ref, &e) == DW_DLV_OK);
	if (form == DW_FORM_sec_offset)
		val = ref;
	if (ok && dwarf_rnglists_get_rle_head(a, form, val, &head, &n, &goff, &e) == DW_DLV_OK) {
		for (Dwarf_Unsigned i = 0; i < n; i++) {
			unsigned len = 0, rle = 0;
			Dwarf_Unsigned r1, r2, lo = 0, hi = 0;
			Dwarf_Bool noaddr = 0;
			if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &rle, &r1, &r2, &noaddr, &lo,
			                                      &hi, &e) == DW_DLV_OK &&
			    !noaddr && rle != DW_RLE_end_of_list && rle != DW_RLE_base_address &&
			    rle != DW_RLE_base_addressx && lo && lo < hi)
				note_ref(d, true, die, lo, hi);
		}
		dwarf_dealloc_rnglists_head(head);
	}
	dwarf_dealloc_attribute(a);
}

/* What the code does with the result, in instruction order. */
enum ev_kind { EV_REGS, EV_STORE, EV_GLOBAL, EV_CALL, EV_MEMBER };
struct site_ev {
	uint8_t kind;
	uint8_t base;           /* EV_STORE, EV_MEMBER: DWARF register number of the base */
	uint16_t regs;          /* EV_REGS, EV_CALL: DWARF registers holding the result */
	uint64_t pc;            /* file address of the instruction */
	int64_t disp;           /* EV_STORE, EV_MEMBER */
	uint64_t addr;          /* EV_GLOBAL: the global; EV_CALL: the callee */
	int64_t fb;             /* EV_STORE: the frame base is base + fb ... */
	bool fb_ok;             /* ... when known (set by store_frame_bases) */
};

/* DWARF x86-64 register number of a general-purpose register, or -1. */
static int dwarf_reg(ZydisRegister r)
{
	static const ZydisRegister map[16] = {
		ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RBX,
		ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSP,
		ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
		ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15,
	};
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	for (int i = 0; i < 16; i++)
		if (map[i] == big)
			return i;
	return -1;
}

/* The stack slots (rsp or rbp plus a displacement) the result was stored
 * to: a spill the code reloads after an instrumentation call (-O2 with
 * -fsanitize=thread) still holds it. */
#define SITE_SLOTS 8
struct site_slot {
	uint8_t base;
	int64_t disp;
};
struct site_slots {
	struct site_slot v[SITE_SLOTS];
	size_t n;
};

static bool slot_find(const struct site_slots *S, int base, int64_t disp, size_t *at)
{
	for (size_t i = 0; i < S->n; i++)
		if (S->v[i].base == base && S->v[i].disp == disp) {
			*at = i;
			return true;
		}
	return false;
}

/* A stack slot operand: its DWARF base register (rsp or rbp), else -1. */
static int slot_base(const ZydisDecodedOperand *o)
{
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.index != ZYDIS_REGISTER_NONE)
		return -1;
	return o->mem.base == ZYDIS_REGISTER_RSP || o->mem.base == ZYDIS_REGISTER_RBP
	       ? dwarf_reg(o->mem.base) : -1;
}

/* A 64-bit move to memory: the slot holds the result when the source
 * does, and no longer when it does not. */
static void slot_store(struct site_slots *S, int base, int64_t disp, bool src_held)
{
	size_t at;
	bool had = slot_find(S, base, disp, &at);
	if (src_held && !had && S->n < SITE_SLOTS)
		S->v[S->n++] = (struct site_slot){ (uint8_t)base, disp };
	else if (!src_held && had)
		S->v[at] = S->v[--S->n];
}

/* rsp moved (push, pop, sub): its slots are no longer where they were. */
static void slots_drop_rsp(struct site_slots *S)
{
	for (size_t i = 0; i < S->n;)
		if (S->v[i].base == 7)
			S->v[i] = S->v[--S->n];
		else
			i++;
}

/* Decode from the site to the first jump or return (or SITE_INSNS
 * instructions, or the end of the function, or until neither a register nor
 * a stack slot holds the result) and list the events. */
static size_t site_events(const uint8_t *code, size_t len, uint64_t pc, struct site_ev *ev)
{
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	uint16_t held = 1;      /* rax */
	struct site_slots slots = { .n = 0 };
	size_t n = 0, off = 0;
	for (int k = 0; k < SITE_INSNS && off < len && (held || slots.n) && n + 2 <= SITE_EVENTS; k++) {
		ev[n++] = (struct site_ev){ .kind = EV_REGS, .regs = held, .pc = pc + off };
		ZydisDecodedInstruction in;
		ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, len - off, &in, op)))
			break;
		uint64_t next = pc + off + in.length;
		if (in.mnemonic == ZYDIS_MNEMONIC_CALL) {
			uint64_t target = 0;
			if (in.operand_count_visible && op[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
			    op[0].imm.is_relative)
				target = next + op[0].imm.value.u;
			if (target && (held & 1u << 5))   /* rdi: the first argument */
				ev[n++] = (struct site_ev){ .kind = EV_CALL, .regs = held, .pc = pc + off,
				                            .addr = target };
			/* the callee keeps rbx, rbp, r12-r15 (instrumentation calls
			 * come between the allocation and the store) and the
			 * caller's frame */
			held &= 1u << 3 | 1u << 6 | 0xf000;
			off += in.length;
			continue;
		}
		if (in.meta.category == ZYDIS_CATEGORY_UNCOND_BR || in.meta.category == ZYDIS_CATEGORY_RET)
			break;
		bool mov = in.mnemonic == ZYDIS_MNEMONIC_MOV && in.operand_count_visible == 2;
		bool src_held = mov && op[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		                op[1].size == 64 && dwarf_reg(op[1].reg.value) >= 0 &&
		                (held >> dwarf_reg(op[1].reg.value) & 1);
		int sbase = mov ? slot_base(&op[0]) : -1;
		/* (%rsp) has no displacement: 0 */
		if (src_held && op[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    op[0].mem.index == ZYDIS_REGISTER_NONE) {
			if (op[0].mem.base == ZYDIS_REGISTER_RIP)
				ev[n++] = (struct site_ev){ .kind = EV_GLOBAL, .pc = pc + off,
				                            .addr = next + (uint64_t)op[0].mem.disp.value };
			else if (sbase >= 0)
				ev[n++] = (struct site_ev){ .kind = EV_STORE, .pc = pc + off,
				                            .base = (uint8_t)sbase,
				                            .disp = op[0].mem.disp.value };
			else if (dwarf_reg(op[0].mem.base) >= 0)   /* into a structure */
				ev[n++] = (struct site_ev){ .kind = EV_MEMBER, .pc = pc + off,
				                            .base = (uint8_t)dwarf_reg(op[0].mem.base),
				                            .disp = op[0].mem.disp.value };
		}
		if (sbase >= 0 && op[0].size == 64)
			slot_store(&slots, sbase, op[0].mem.disp.value, src_held);
		/* a 64-bit load from a slot that holds the result */
		size_t at;
		int lbase = mov && op[0].type == ZYDIS_OPERAND_TYPE_REGISTER && op[0].size == 64
		            ? slot_base(&op[1]) : -1;
		int loaded = lbase >= 0 && slot_find(&slots, lbase, op[1].mem.disp.value, &at)
		             ? dwarf_reg(op[0].reg.value) : -1;
		/* registers written lose the result; a 64-bit move of it copies it */
		for (unsigned i = 0; i < in.operand_count; i++) {
			if (op[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !(op[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
				continue;
			int r = dwarf_reg(op[i].reg.value);
			if (r < 0)
				continue;
			if (r == 7)
				slots_drop_rsp(&slots);
			if (i == 0 && mov && src_held && op[0].size == 64)
				held |= (uint16_t)(1u << r);
			else
				held &= (uint16_t)~(1u << r);
		}
		if (loaded >= 0)
			held |= (uint16_t)(1u << loaded);
		off += in.length;
	}
	return n;
}

/* The DIE that carries a variable's name and type: itself, or what its
 * DW_AT_abstract_origin (inlined, concrete instances) or
 * DW_AT_specification points to. */
static Dwarf_Off decl_of(Dwarf_Die die, Dwarf_Off self)
{
	Dwarf_Off o;
	if (attr_ref(die, DW_AT_type, &o))
		return self;
	if (attr_ref(die, DW_AT_abstract_origin, &o) || attr_ref(die, DW_AT_specification, &o))
		return o;
	return self;
}

/* The type DIE the pointer-typed DIE at decl points to (qualifiers and
 * typedefs of the pointer resolved; refs: a reference too): false for
 * void * or a non-pointer. */
static bool pointee_die(struct dw *d, Dwarf_Off decl, bool refs, Dwarf_Off *out)
{
	Dwarf_Die die = die_at(d, decl);
	Dwarf_Off to;
	if (!die)
		return false;
	bool ok = attr_ref(die, DW_AT_type, &to);
	dwarf_dealloc_die(die);
	for (int depth = 0; ok && depth < 8; depth++) {
		Dwarf_Die t = die_at(d, to);
		Dwarf_Half tag = 0;
		Dwarf_Error e = NULL;
		if (!t || dwarf_tag(t, &tag, &e) != DW_DLV_OK) {
			if (t)
				dwarf_dealloc_die(t);
			return false;
		}
		ok = attr_ref(t, DW_AT_type, &to);
		dwarf_dealloc_die(t);
		if (tag == DW_TAG_pointer_type || (refs && tag == DW_TAG_reference_type)) {
			*out = to;
			return ok;
		}
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
		    tag != DW_TAG_restrict_type)
			return false;
	}
	return false;
}

/* The type the pointer-typed DIE at decl points to, as a module type;
 * ST_NONE for void * or a non-pointer. */
static uint32_t pointee(struct dw *d, Dwarf_Off decl)
{
	Dwarf_Off to;
	if (!pointee_die(d, decl, false, &to))
		return ST_NONE;
	uint32_t ty = type_of(d, to, 0);
	return ty < d->m->ntypes && d->m->types[ty].size ? ty : ST_NONE;
}

/* The member at byte offset off of the struct or class at the type DIE st
 * (typedefs and qualifiers resolved): its DIE offset, 0 if none. */
static Dwarf_Off member_at(struct dw *d, Dwarf_Off st, uint64_t off)
{
	Dwarf_Die t = NULL;
	Dwarf_Half tag = 0;
	Dwarf_Error e = NULL;
	for (int depth = 0; depth < 8; depth++) {
		if (!(t = die_at(d, st)) || dwarf_tag(t, &tag, &e) != DW_DLV_OK)
			break;
		if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type)
			break;
		bool next = (tag == DW_TAG_typedef || tag == DW_TAG_const_type ||
		             tag == DW_TAG_volatile_type) && attr_ref(t, DW_AT_type, &st);
		dwarf_dealloc_die(t);
		t = NULL;
		if (!next)
			break;
	}
	Dwarf_Off found = 0;
	Dwarf_Die c = NULL, next;
	if (t && dwarf_child(t, &c, &e) == DW_DLV_OK) {
		for (; c; c = next) {
			Dwarf_Half ct = 0;
			if (!found && dwarf_tag(c, &ct, &e) == DW_DLV_OK && ct == DW_TAG_member &&
			    !attr_flag(c, DW_AT_external) && member_offset(d, c) == off &&
			    dwarf_dieoffset(c, &found, &e) != DW_DLV_OK)
				found = 0;
			next = NULL;
			if (dwarf_siblingof_b(d->dbg, c, 1, &next, &e) != DW_DLV_OK)
				next = NULL;
			dwarf_dealloc_die(c);
		}
	}
	if (t)
		dwarf_dealloc_die(t);
	return found;
}

/* One location of a variable (an expression, or an entry of a location
 * list): its first operation, and the pcs where it holds. */
struct site_loc {
	uint64_t lo, hi;        /* file addresses; all: every pc */
	uint64_t o1;
	uint8_t op, nops;
	bool all;
};
struct site_locs {
	struct site_loc *v;
	size_t n, cap;
	bool oom;
};

static void locs_add(struct site_locs *L, struct site_loc l)
{
	if (L->n == L->cap) {
		size_t nc = L->cap ? 2 * L->cap : 64;
		struct site_loc *q = realloc(L->v, nc * sizeof *q);
		if (!q) {
			L->oom = true;
			return;
		}
		L->v = q;
		L->cap = nc;
	}
	L->v[L->n++] = l;
}

/* Append the locations of the variable DIE to L; returns how many.  Read
 * once per site: a location list costs far more to read than to match
 * against every event. */
static size_t var_locs(Dwarf_Die die, struct site_locs *L)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	if (dwarf_attr(die, DW_AT_location, &a, &e) != DW_DLV_OK)
		return 0;
	Dwarf_Loc_Head_c head = NULL;
	Dwarf_Unsigned count = 0;
	size_t n = 0;
	if (dwarf_get_loclist_c(a, &head, &count, &e) == DW_DLV_OK) {
		for (Dwarf_Unsigned i = 0; i < count && !L->oom; i++) {
			Dwarf_Small lle = 0, src = 0;
			Dwarf_Unsigned rlo = 0, rhi = 0, nops = 0, eoff = 0, doff = 0;
			Dwarf_Bool noaddr = 0;
			Dwarf_Addr lo = 0, hi = 0;
			Dwarf_Locdesc_c desc = NULL;
			if (dwarf_get_locdesc_entry_d(head, i, &lle, &rlo, &rhi, &noaddr, &lo, &hi, &nops,
			                              &desc, &src, &eoff, &doff, &e) != DW_DLV_OK || nops < 1)
				continue;
			Dwarf_Small op = 0;
			Dwarf_Unsigned o1 = 0, o2 = 0, o3 = 0, br = 0;
			if (dwarf_get_location_op_value_c(desc, 0, &op, &o1, &o2, &o3, &br, &e) != DW_DLV_OK)
				continue;
			/* a single expression (src 0) covers every pc */
			locs_add(L, (struct site_loc){ .lo = lo, .hi = hi, .o1 = o1, .op = op,
			                               .nops = nops > 255 ? 255 : (uint8_t)nops,
			                               .all = src == 0 });
			n++;
		}
		dwarf_free_loc_head(head);
	}
	dwarf_dealloc_attribute(a);
	return n;
}

/* Does one of a variable's locations hold the result at an event? */
static bool loc_matches(const struct site_loc *l, size_t n, const struct site_ev *ev)
{
	for (size_t i = 0; i < n; i++, l++) {
		if (!l->all && (ev->pc < l->lo || ev->pc >= l->hi))
			continue;
		switch (ev->kind) {
		case EV_REGS:
			if (l->nops == 1 && l->op >= DW_OP_reg0 && l->op <= DW_OP_reg15 &&
			    (ev->regs >> (l->op - DW_OP_reg0) & 1))
				return true;
			break;
		case EV_STORE:
			if (l->op == DW_OP_fbreg) {
				if (ev->fb_ok && ev->fb + (int64_t)l->o1 == ev->disp)
					return true;
			} else if (l->op >= DW_OP_breg0 && l->op <= DW_OP_breg15) {
				if (l->op - DW_OP_breg0 == ev->base && (int64_t)l->o1 == ev->disp)
					return true;
			}
			break;
		case EV_GLOBAL:
			if (l->op == DW_OP_addr && l->o1 == ev->addr)
				return true;
			break;
		case EV_MEMBER:   /* the variable is the pointer stored through */
			if (l->nops == 1 && l->op == DW_OP_reg0 + ev->base)
				return true;
			break;
		default:
			break;
		}
	}
	return false;
}

/* A function's frame base (DW_AT_frame_base): the CFA (-O2 and -O0 alike
 * with GCC), rbp, or something else. */
enum frame_kind { FRAME_OTHER, FRAME_CFA, FRAME_RBP };

static enum frame_kind frame_kind(struct dw *d, Dwarf_Die fn)
{
	const uint8_t *p;
	uint64_t l;
	if (!attr_expr(d->dbg, fn, DW_AT_frame_base, &p, &l) || l != 1)
		return FRAME_OTHER;
	return p[0] == DW_OP_call_frame_cfa ? FRAME_CFA : p[0] == DW_OP_reg6 ? FRAME_RBP : FRAME_OTHER;
}

/* The CFA at pc as a register plus an offset, from the module's .eh_frame
 * (read once; a separate debug file has none: false then, as for a pc
 * without a rule of that form). */
static bool cfa_at(struct dw *d, uint64_t pc, int *reg, int64_t *off)
{
	if (!d->cfi_read) {
		d->cfi_read = true;
		Dwarf_Error e = NULL;
		if (dwarf_get_fde_list_eh(d->dbg, &d->cies, &d->ncies, &d->fdes, &d->nfdes, &e) !=
		    DW_DLV_OK) {
			if (e)
				dwarf_dealloc_error(d->dbg, e);
			d->fdes = NULL;
		}
	}
	Dwarf_Fde fde = NULL;
	Dwarf_Addr lo = 0, hi = 0;
	Dwarf_Error e = NULL;
	if (!d->fdes || dwarf_get_fde_at_pc(d->fdes, pc, &fde, &lo, &hi, &e) != DW_DLV_OK)
		return false;
	return fde_cfa(fde, pc, reg, off);
}

/* The frame base at each store as its base register plus an offset.  With
 * a CFA frame base, from the call frame information at the store's pc
 * (-O2 code addresses its frame from rsp, which moves); without it, a
 * frame on rbp is assumed (push rbp; mov rsp, rbp: the CFA is rbp + 16). */
static void store_frame_bases(struct dw *d, enum frame_kind fk, struct site_ev *ev, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (ev[k].kind != EV_STORE)
			continue;
		int reg = -1;
		int64_t off = 0;
		if (fk == FRAME_CFA && cfa_at(d, ev[k].pc, &reg, &off)) {
			ev[k].fb_ok = reg == ev[k].base;
			ev[k].fb = off;
		} else if (fk != FRAME_OTHER && ev[k].base == 6) {
			ev[k].fb_ok = true;
			ev[k].fb = fk == FRAME_CFA ? 16 : 0;
		}
	}
}

struct site_var {
	Dwarf_Off off;
	bool global;
};

/* The variables and parameters of a function (lexical blocks and inlined
 * subroutines included). */
static void scope_vars(struct dw *d, Dwarf_Die parent, int depth, struct site_var *v, size_t *n,
                       size_t cap)
{
	Dwarf_Die c = NULL, next;
	Dwarf_Error e = NULL;
	if (depth > DIE_DEPTH_MAX || dwarf_child(parent, &c, &e) != DW_DLV_OK)
		return;
	for (; c; c = next) {
		Dwarf_Half tag = 0;
		Dwarf_Off off;
		if (dwarf_tag(c, &tag, &e) == DW_DLV_OK) {
			if ((tag == DW_TAG_variable || tag == DW_TAG_formal_parameter) && *n < cap &&
			    dwarf_dieoffset(c, &off, &e) == DW_DLV_OK)
				v[(*n)++] = (struct site_var){ off, false };
			else if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine)
				scope_vars(d, c, depth + 1, v, n, cap);
		}
		next = NULL;
		if (dwarf_siblingof_b(d->dbg, c, 1, &next, &e) != DW_DLV_OK)
			next = NULL;
		dwarf_dealloc_die(c);
	}
}

static const struct dw_ref *ref_at(const struct dw_ref *v, size_t n, uint64_t pc, bool exact)
{
	const struct dw_ref *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (exact ? v[i].lo == pc : v[i].lo <= pc && pc < v[i].hi)
			if (!best || v[i].hi - v[i].lo < best->hi - best->lo)
				best = &v[i];
	return best;
}

/* A constructor's class: the callee's declaration is named like the class
 * its `this` points to. */
static uint32_t ctor_class(struct dw *d, uint64_t target)
{
	const struct dw_ref *f = ref_at(d->si->fns, d->si->nfns, target, true);
	if (!f)
		return ST_NONE;
	Dwarf_Die die = die_at(d, f->off);
	if (!die)
		return ST_NONE;
	/* concrete instance -> abstract instance -> declaration in the class */
	Dwarf_Off o;
	for (int k = 0; k < 3 && die; k++) {
		if (!attr_ref(die, DW_AT_abstract_origin, &o) && !attr_ref(die, DW_AT_specification, &o))
			break;
		dwarf_dealloc_die(die);
		die = die_at(d, o);
	}
	if (!die)
		return ST_NONE;
	uint32_t t = ST_NONE;
	const char *name = die_name(die);
	Dwarf_Die c = NULL;
	Dwarf_Error e = NULL;
	Dwarf_Half tag = 0;
	Dwarf_Off po;
	/* the first parameter, artificial: this */
	if (name && dwarf_child(die, &c, &e) == DW_DLV_OK) {
		if (dwarf_tag(c, &tag, &e) == DW_DLV_OK && tag == DW_TAG_formal_parameter &&
		    attr_flag(c, DW_AT_artificial) && dwarf_dieoffset(c, &po, &e) == DW_DLV_OK) {
			t = pointee(d, po);
			const char *cn = t < d->m->ntypes ? st_str(d->m, d->m->types[t].name) : NULL;
			const char *sp = cn ? strchr(cn, ' ') : NULL;   /* "struct Cell" */
			if (!sp || strcmp(sp + 1, name))
				t = ST_NONE;
		}
		dwarf_dealloc_die(c);
	}
	dwarf_dealloc_die(die);
	return t;
}

/* The type and variable name of one site. */
/* The declaration behind the variable DIE at off (decl_of), 0 if none. */
static Dwarf_Off decl_at(struct dw *d, Dwarf_Off off)
{
	Dwarf_Die v = die_at(d, off);
	if (!v)
		return 0;
	Dwarf_Off decl = decl_of(v, off);
	dwarf_dealloc_die(v);
	return decl;
}

/* The global variable at off holds the result at an EV_GLOBAL event: its
 * declaration, else 0. */
static Dwarf_Off global_matches(struct dw *d, Dwarf_Off off, const struct site_ev *ev)
{
	Dwarf_Die v = die_at(d, off);
	if (!v)
		return 0;
	struct site_locs L = { 0 };
	size_t n = var_locs(v, &L);
	Dwarf_Off decl = n && !L.oom && loc_matches(L.v, n, ev) ? decl_of(v, off) : 0;
	dwarf_dealloc_die(v);
	free(L.v);
	return decl;
}

/* The site returns a block of the pointee type of the variable (or member)
 * declared at decl: add it (named after the variable, not after `this`).
 * False when that type is unknown (the search goes on). */
static bool typed_alloc(struct dw *d, uint64_t site, Dwarf_Off decl)
{
	uint32_t t = pointee(d, decl);
	if (t == ST_NONE)
		return false;
	Dwarf_Die dd = die_at(d, decl);
	const char *name = dd && !attr_flag(dd, DW_AT_artificial) ? die_name(dd) : NULL;
	if (st_add_alloc(d->m, site, name, t))
		d->oom = 1;
	if (dd)
		dwarf_dealloc_die(dd);
	return true;
}

/* One allocation site: the function that holds it and what the code after
 * the call does with the result. */
struct site_code {
	uint64_t site;
	struct dw_ref fn;
	struct site_ev ev[SITE_EVENTS];
	size_t nev;
};

static bool site_decode(struct dw *d, uint64_t site, struct site_code *sc)
{
	const struct dw_ref *f = ref_at(d->si->fns, d->si->nfns, site, false);
	if (!f)
		return false;
	uint64_t end = f->hi < site + 128 ? f->hi : site + 128;
	uint8_t *code = symtab_elf_code(d->m->path, site, end);
	if (!code)
		return false;
	sc->site = site;
	sc->fn = *f;
	sc->nev = site_events(code, (size_t)(end - site), site, sc->ev);
	free(code);
	return true;
}

/* The variables of the function the current sites are in, with their
 * locations: read once for all of its sites (a function that allocates
 * many arrays has a site per array). */
#define FN_VARS_MAX 256
struct fn_vars {
	Dwarf_Off fn;           /* 0: none read yet */
	enum frame_kind fk;
	struct site_var vars[FN_VARS_MAX];
	size_t nv;
	struct site_locs L;
	size_t first[FN_VARS_MAX], nlocs[FN_VARS_MAX];
};

static void fn_vars_read(struct dw *d, Dwarf_Off fn_off, struct fn_vars *fv)
{
	if (fv->fn == fn_off)
		return;
	fv->fn = fn_off;
	fv->nv = 0;
	fv->L.n = 0;
	fv->fk = FRAME_OTHER;
	Dwarf_Die fn = die_at(d, fn_off);
	if (!fn)
		return;
	fv->fk = frame_kind(d, fn);
	scope_vars(d, fn, 0, fv->vars, &fv->nv, FN_VARS_MAX);
	dwarf_dealloc_die(fn);
	for (size_t i = 0; i < fv->nv; i++) {
		Dwarf_Die v = die_at(d, fv->vars[i].off);
		fv->first[i] = fv->L.n;
		fv->nlocs[i] = v ? var_locs(v, &fv->L) : 0;
		if (v)
			dwarf_dealloc_die(v);
	}
}

/* The site's block is stored to the member at byte off of the struct the
 * pointer (or reference) declared at decl points to: a pointer member
 * types it, named after the member (domain.m_dxx = Allocate<Real_t>(n)). */
static bool member_alloc(struct dw *d, uint64_t site, Dwarf_Off decl, int64_t off)
{
	Dwarf_Off st, mem;
	if (off < 0 || !pointee_die(d, decl, true, &st) || !(mem = member_at(d, st, (uint64_t)off)))
		return false;
	return typed_alloc(d, site, mem);
}

static void infer_site(struct dw *d, struct site_code *sc, struct fn_vars *fv)
{
	struct site_info *si = d->si;
	fn_vars_read(d, sc->fn.off, fv);
	struct site_locs *L = &fv->L;
	struct site_ev *ev = sc->ev;
	store_frame_bases(d, fv->fk, ev, sc->nev);
	for (size_t k = 0; k < sc->nev && !L->oom; k++) {
		if (ev[k].kind == EV_CALL) {
			uint32_t t = ctor_class(d, ev[k].addr);
			if (t != ST_NONE) {
				if (st_add_alloc(d->m, sc->site, NULL, t))
					d->oom = 1;
				break;
			}
			continue;
		}
		size_t nv = fv->nv, ng = ev[k].kind == EV_GLOBAL ? si->nglobals : 0;
		Dwarf_Off decl = 0;
		for (size_t i = 0; i < nv + ng; i++) {
			if (i < nv) {
				if (fv->nlocs[i] && loc_matches(L->v + fv->first[i], fv->nlocs[i], &ev[k]))
					decl = decl_at(d, fv->vars[i].off);
			} else if (si->globals[i - nv].lo == ev[k].addr) {
				decl = global_matches(d, si->globals[i - nv].off, &ev[k]);
			}
			if (decl && (ev[k].kind == EV_MEMBER ? member_alloc(d, sc->site, decl, ev[k].disp)
			                                     : typed_alloc(d, sc->site, decl)))
				break;
			decl = 0;
		}
		if (decl)
			break;
	}
	if (L->oom)
		d->oom = 1;
}

static void ctor_units(struct dw *d, struct site_code *sc);

/* Every site of the module, typed: first the units of the constructors the
 * sites call are read (ctor_units), then each site is decoded again and
 * typed (sites are sorted: those of one function are neighbours). */
static void infer_sites(struct dw *d)
{
	struct site_code *sc = malloc(sizeof *sc);
	struct fn_vars *fv = calloc(1, sizeof *fv);
	if (!sc || !fv) {
		d->oom = 1;
		free(sc);
		free(fv);
		return;
	}
	ctor_units(d, sc);
	for (size_t i = 0; i < d->si->nsites && !d->oom; i++)
		if (site_decode(d, d->si->sites[i], sc))
			infer_site(d, sc, fv);
	free(fv->L.v);
	free(fv);
	free(sc);
}

/* The module's sites (file addresses), from the recorded return addresses. */
static struct site_info *sites_of(const struct st_module *m, const struct st_addrs *ips)
{
	const struct st_addrs *s = ips ? ips->sites : NULL;
	if (!s || !s->n)
		return NULL;
	struct site_info *si = calloc(1, sizeof *si);
	if (!si || !(si->sites = malloc(s->n * sizeof *si->sites))) {
		free(si);
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] >= m->lo && s->v[i] < m->hi)
			si->sites[si->nsites++] = s->v[i] - m->bias;
	if (!si->nsites) {
		free(si->sites);
		free(si);
		return NULL;
	}
	return si;
}

static void sites_free(struct site_info *si)
{
	if (!si)
		return;
	free(si->sites);
	free(si->fns);
	free(si->globals);
	free(si);
}

/* ---- which compilation units are read in full ------------------------------
 * A CU's line program and the walk of its functions are most of what a join
 * spends on DWARF (libc's debug file has some 1,500 CUs), and only the CUs
 * whose code holds a recorded instruction or allocation site need them.  The
 * others are read for their variables only (WALK_VARS), and only when the
 * module holds a recorded data address (a join keeps no other variable);
 * those that hold a constructor an allocation site calls, for their
 * functions (ctor_units).  The CUs' code ranges come from .debug_aranges; a
 * CU it does not list is read in full, and so is every CU when the section
 * is missing or no addresses were given. */
struct cu_range {
	uint64_t lo, hi;          /* file addresses */
	Dwarf_Off cu;             /* its CU's DIE */
};
struct cu_pick {
	Dwarf_Off *full;          /* CU DIE offsets to read in full, sorted */
	size_t nfull;
	Dwarf_Off *listed;        /* CU DIE offsets .debug_aranges lists, sorted */
	size_t nlisted;
	struct cu_range *ranges;  /* .debug_aranges' entries */
	size_t nranges;
};

static int cmp_off(const void *a, const void *b)
{
	Dwarf_Off x = *(const Dwarf_Off *)a, y = *(const Dwarf_Off *)b;
	return x < y ? -1 : x > y;
}

static bool has_off(const Dwarf_Off *v, size_t n, Dwarf_Off off)
{
	return n && bsearch(&off, v, n, sizeof *v, cmp_off);
}

static size_t sort_unique(Dwarf_Off *v, size_t n)
{
	if (!n)
		return 0;      /* v may be NULL: qsort must not see it */
	qsort(v, n, sizeof *v, cmp_off);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

static void cu_pick_free(struct cu_pick *p)
{
	if (p) {
		free(p->full);
		free(p->listed);
		free(p->ranges);
	}
	free(p);
}

static struct cu_pick *cu_pick_make(const struct dw *d)
{
	if (!d->ips || !d->ips->v)
		return NULL;
	Dwarf_Arange *ar = NULL;
	Dwarf_Signed n = 0;
	Dwarf_Error e = NULL;
	if (dwarf_get_aranges(d->dbg, &ar, &n, &e) != DW_DLV_OK || n <= 0) {
		if (e)
			dwarf_dealloc_error(d->dbg, e);
		return NULL;
	}
	struct cu_pick *p = calloc(1, sizeof *p);
	if (p) {
		p->full = malloc((size_t)n * sizeof *p->full);
		p->listed = malloc((size_t)n * sizeof *p->listed);
		p->ranges = malloc((size_t)n * sizeof *p->ranges);
	}
	for (Dwarf_Signed i = 0; i < n; i++) {
		Dwarf_Unsigned seg = 0, segsz = 0, len = 0;
		Dwarf_Addr start = 0;
		Dwarf_Off cu = 0;
		int rc = p && p->full && p->listed && p->ranges
		         ? dwarf_get_arange_info_b(ar[i], &seg, &segsz, &start, &len, &cu, &e)
		         : DW_DLV_NO_ENTRY;
		if (rc == DW_DLV_ERROR && e) {
			dwarf_dealloc_error(d->dbg, e);
			e = NULL;
		}
		if (rc == DW_DLV_OK) {
			p->listed[p->nlisted++] = cu;
			p->ranges[p->nranges++] = (struct cu_range){ start, start + len, cu };
			if (set_hits(d->ips, d->m->bias, start, start + len) ||
			    set_hits(d->ips->sites, d->m->bias, start, start + len))
				p->full[p->nfull++] = cu;
		}
		dwarf_dealloc(d->dbg, ar[i], DW_DLA_ARANGE);
	}
	dwarf_dealloc(d->dbg, ar, DW_DLA_LIST);
	if (!p || !p->full || !p->listed || !p->ranges) {
		cu_pick_free(p);
		return NULL;       /* out of memory: read every CU in full */
	}
	p->nfull = sort_unique(p->full, p->nfull);
	p->nlisted = sort_unique(p->listed, p->nlisted);
	return p;
}

static bool cu_in_full(const struct dw *d, Dwarf_Die cu)
{
	Dwarf_Off off = 0;
	Dwarf_Error e = NULL;
	if (!d->pick || dwarf_dieoffset(cu, &off, &e) != DW_DLV_OK)
		return true;
	return has_off(d->pick->full, d->pick->nfull, off) ||
	       !has_off(d->pick->listed, d->pick->nlisted, off);
}

/* The units that hold the functions the sites call (a constructor's
 * class types `new T`: ctor_class), read for their functions' ranges when
 * they were not read in full: .debug_aranges says which.  sc: room to
 * decode a site in (one at a time: a program may have many sites). */
static void ctor_units(struct dw *d, struct site_code *sc)
{
	const struct cu_pick *p = d->pick;
	if (!p)
		return;            /* every unit was read in full */
	Dwarf_Off *cus = NULL;
	size_t ncus = 0, cap = 0;
	for (size_t i = 0; i < d->si->nsites; i++)
		for (size_t k = 0, nev = site_decode(d, d->si->sites[i], sc) ? sc->nev : 0; k < nev; k++) {
			uint64_t target = sc->ev[k].addr;
			if (sc->ev[k].kind != EV_CALL ||
			    ref_at(d->si->fns, d->si->nfns, target, true))
				continue;
			for (size_t r = 0; r < p->nranges; r++) {
				if (target < p->ranges[r].lo || target >= p->ranges[r].hi)
					continue;
				if (ncus == cap) {
					cap = cap ? 2 * cap : 16;
					Dwarf_Off *q = realloc(cus, cap * sizeof *q);
					if (!q) {
						d->oom = 1;
						free(cus);
						return;
					}
					cus = q;
				}
				cus[ncus++] = p->ranges[r].cu;
			}
		}
	ncus = sort_unique(cus, ncus);
	for (size_t i = 0; i < ncus && !d->oom; i++) {
		Dwarf_Die cu = has_off(p->full, p->nfull, cus[i]) ? NULL : die_at(d, cus[i]);
		if (cu) {
			walk(d, cu, 0, WALK_FUNCS);
			dwarf_dealloc_die(cu);
		}
	}
	free(cus);
}

int symtab_dwarf_load(struct st_module *m, const char *path, const struct st_addrs *ips,
                      char *note, size_t notecap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(note, notecap, "DWARF: cannot open %s", path);
		return -1;
	}
	struct dw d = { .m = m, .ips = ips };
	Dwarf_Error e = NULL;
	if (dwarf_open(fd, &d.dbg, &e) != DW_DLV_OK) {
		snprintf(note, notecap, "DWARF unreadable");
		if (e)
			dwarf_dealloc_error(NULL, e);
		close(fd);
		return -1;
	}
	d.si = sites_of(m, ips);
	d.pick = cu_pick_make(&d);
	/* a recording's join keeps only the variables that hold a recorded
	 * data address (symtab_prune): none when the module holds none */
	bool vars = !ips || !ips->data || symtab_addrs_in(ips->data, m->lo, m->hi);
	int ncu = 0;
	for (;;) {
		Dwarf_Unsigned hlen = 0, next = 0, typeoff = 0;
		Dwarf_Half ver = 0, asz = 0, lsz = 0, esz = 0, cut = 0;
		Dwarf_Sig8 sig;
		Dwarf_Off aoff = 0;
		int r = dwarf_next_cu_header_d(d.dbg, 1, &hlen, &ver, &aoff, &asz, &lsz, &esz, &sig,
		                               &typeoff, &next, &cut, &e);
		if (r != DW_DLV_OK)
			break;
		Dwarf_Die cu = NULL;
		if (dwarf_siblingof_b(d.dbg, NULL, 1, &cu, &e) != DW_DLV_OK)
			continue;
		ncu++;
		bool full = cu_in_full(&d, cu);
		if (full)
			do_lines(&d, cu);
		if (full || vars)
			walk(&d, cu, 0, full ? WALK_FULL : WALK_VARS);
		dwarf_dealloc_die(cu);
		if (d.oom)
			break;
	}
	if (d.si && !d.oom)
		infer_sites(&d);
	sites_free(d.si);
	cu_pick_free(d.pick);
	if (d.fdes)
		dwarf_fde_cie_list_dealloc(d.dbg, d.cies, d.ncies, d.fdes, d.nfdes);
	dwarf_close(d.dbg);
	close(fd);
	free(d.memo);
	free(d.fmap);
	if (d.oom) {
		snprintf(note, notecap, "DWARF: out of memory");
		return -1;
	}
	if (!ncu) {
		snprintf(note, notecap, "DWARF: no compilation units");
		return -1;
	}
	return 0;
}

#else
typedef int symtab_dwarf_unused;   /* ISO C wants something in a file */
#endif
