/* A heap snapshot as a dump; see heapdump.h. */
#include "dumpwatch/heapdump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dumpwatch/gcdump.h"
#include "dumpwatch/heapstatics.h"

static const char *const gen_names[HG_N_GENS] = HEAPDUMP_GEN_NAMES;

static json_object *u64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static json_object *ms(int64_t ns)
{
	return ns >= 0 ? json_object_new_double((double)ns / 1e6) : NULL;
}

static const char *type_name(const struct heapgraph *g, uint32_t t)
{
	const struct hg_type *ty = t == HG_NONE ? NULL : hg_type(g, t);
	return ty ? ty->name : "<UNKNOWN>";
}

static json_object *path_json(const struct heapgraph *g, const struct hs_path *p)
{
	json_object *x = json_object_new_object(), *steps = json_object_new_array();

	json_object_object_add(x, HEAPDUMP_KEY_PATH_TYPE,
	                       json_object_new_string(type_name(g, p->steps[p->n_steps - 1])));
	json_object_object_add(x, HEAPDUMP_KEY_PATH_ROOT, json_object_new_string(p->root));
	for (size_t k = 0; k < p->n_steps; k++) {
		json_object *y = json_object_new_object();
		json_object_object_add(y, HEAPDUMP_KEY_STEP_TYPE, json_object_new_string(type_name(g, p->steps[k])));
		if (p->nested[k])
			json_object_object_add(y, HEAPDUMP_KEY_STEP_NESTED, json_object_new_boolean(1));
		json_object_array_add(steps, y);
	}
	json_object_object_add(x, HEAPDUMP_KEY_PATH_STEPS, steps);
	json_object_object_add(x, HEAPDUMP_KEY_PATH_CUT, json_object_new_boolean(p->cut));
	json_object_object_add(x, HEAPDUMP_KEY_PATH_BYTES, u64(p->bytes));
	json_object_object_add(x, HEAPDUMP_KEY_PATH_OBJECTS, u64(p->count));
	return x;
}

static int cmp_retained(const void *a, const void *b)
{
	const struct hs_row *x = *(const struct hs_row *const *)a, *y = *(const struct hs_row *const *)b;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* "retained": the types that retain the most, or why there are none. */
static json_object *retained_json(const struct heapgraph *g, const struct heapsum *s)
{
	json_object *x = json_object_new_object();

	json_object_object_add(x, HEAPDUMP_KEY_RETAINED_COMPUTED, json_object_new_boolean(s->retained_done));
	if (!s->retained_done) {
		json_object_object_add(x, HEAPDUMP_KEY_RETAINED_WHY, json_object_new_string(s->retained_why));
		return x;
	}
	json_object_object_add(x, HEAPDUMP_KEY_RETAINED_PASSES, u64(s->retained_passes));
	json_object_object_add(x, HEAPDUMP_KEY_RETAINED_UNREACHABLE_BYTES, u64(s->retained_unreachable_bytes));
	const struct hs_row **by = malloc((s->n_rows ? s->n_rows : 1) * sizeof(*by));
	json_object *types = json_object_new_array();
	if (by) {
		for (size_t i = 0; i < s->n_rows; i++)
			by[i] = &s->rows[i];
		qsort(by, s->n_rows, sizeof(*by), cmp_retained);
		for (size_t i = 0; i < s->n_rows && i < HEAPDUMP_RETAINED_TYPES; i++) {
			json_object *y = json_object_new_object();
			json_object_object_add(y, HEAPDUMP_KEY_TYPE_TYPE,
			                       json_object_new_string(type_name(g, by[i]->type)));
			json_object_object_add(y, HEAPDUMP_KEY_TYPE_RETAINED_BYTES, u64(by[i]->retained));
			json_object_object_add(y, HEAPDUMP_KEY_TYPE_BYTES, u64(by[i]->bytes));
			json_object_object_add(y, HEAPDUMP_KEY_TYPE_OBJECTS, u64(by[i]->count));
			json_object_array_add(types, y);
		}
		free(by);
	}
	json_object_object_add(x, HEAPDUMP_KEY_RETAINED_TYPES, types);
	return x;
}

struct json_object *heapdump_json(pid_t pid, const struct heapsnap *snap, const struct heapsum *s, size_t max_types)
{
	const struct heapgraph *g = snap->graph;
	const struct hg_cut *cut = hg_cut(g);
	json_object *o = json_object_new_object(), *gens = json_object_new_object(), *types = json_object_new_array(),
	            *paths = json_object_new_array(), *c = json_object_new_object();

	if (!o || !gens || !types || !paths || !c) {
		json_object_put(o);
		json_object_put(gens);
		json_object_put(types);
		json_object_put(paths);
		json_object_put(c);
		return NULL;
	}
	json_object_object_add(o, HEAPDUMP_KEY_PID, json_object_new_int64(pid));
	json_object_object_add(o, HEAPDUMP_KEY_BYTES, u64(s->total_bytes));
	json_object_object_add(o, HEAPDUMP_KEY_OBJECTS, u64(s->total_count));
	json_object_object_add(o, HEAPDUMP_KEY_REFERENCES, u64(hg_n_edges(g)));
	if (!hg_is_histogram(g)) { /* a histogram keeps no roots */
		json_object_object_add(o, HEAPDUMP_KEY_ROOTS, u64(hg_n_roots(g)));
		json_object_object_add(o, HEAPDUMP_KEY_UNREACHABLE_BYTES, u64(s->unreachable_bytes));
		json_object_object_add(o, HEAPDUMP_KEY_UNREACHABLE_OBJECTS, u64(s->unreachable_count));
	}
	json_object_object_add(o, HEAPDUMP_KEY_GC, u64(hg_gc_count(g)));
	json_object_object_add(o, HEAPDUMP_KEY_PAUSE_MS, ms(snap->pause_ns));
	json_object_object_add(o, HEAPDUMP_KEY_WALK_MS, ms(snap->walk_ns));
	json_object_object_add(o, HEAPDUMP_KEY_ELAPSED_MS, ms(snap->elapsed_ns));
	json_object_object_add(o, HEAPDUMP_KEY_STREAM_BYTES, u64(snap->stream_bytes));
	json_object_object_add(o, HEAPDUMP_KEY_RUNTIME_HEAP_BYTES, u64(hg_reported_bytes(g)));
	json_object_object_add(o, HEAPDUMP_KEY_COMPLETE, json_object_new_boolean(snap->complete));
	for (int k = 0; k < HG_N_GENS; k++) {
		if (k == HG_GEN_UNKNOWN && !s->gen_count[k])
			continue;
		json_object *x = json_object_new_object();
		json_object_object_add(x, HEAPDUMP_KEY_GEN_BYTES, u64(s->gen_bytes[k]));
		json_object_object_add(x, HEAPDUMP_KEY_GEN_OBJECTS, u64(s->gen_count[k]));
		json_object_object_add(gens, gen_names[k], x);
	}
	json_object_object_add(o, HEAPDUMP_KEY_GENERATIONS, gens);
	uint64_t other_count = 0, other_bytes = 0, other_types = 0;
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct hs_row *r = &s->rows[i];
		if (i >= max_types) {
			other_types++;
			other_count += r->count;
			other_bytes += r->bytes;
			continue;
		}
		json_object *x = json_object_new_object(), *gb = json_object_new_object();
		json_object *gc = json_object_new_object();
		json_object_object_add(x, HEAPDUMP_KEY_TYPE_TYPE, json_object_new_string(type_name(g, r->type)));
		json_object_object_add(x, HEAPDUMP_KEY_TYPE_BYTES, u64(r->bytes));
		json_object_object_add(x, HEAPDUMP_KEY_TYPE_OBJECTS, u64(r->count));
		if (s->retained_done)
			json_object_object_add(x, HEAPDUMP_KEY_TYPE_RETAINED_BYTES, u64(r->retained));
		for (int k = 0; k < HG_N_GENS; k++) {
			if (!r->gen_count[k])
				continue;
			json_object_object_add(gb, gen_names[k], u64(r->gen_bytes[k]));
			json_object_object_add(gc, gen_names[k], u64(r->gen_count[k]));
		}
		json_object_object_add(x, HEAPDUMP_KEY_TYPE_GENERATIONS, gb);
		json_object_object_add(x, HEAPDUMP_KEY_TYPE_GENERATION_OBJECTS, gc);
		json_object_array_add(types, x);
	}
	json_object_object_add(o, HEAPDUMP_KEY_TYPES, types);
	json_object *other = json_object_new_object();
	json_object_object_add(other, HEAPDUMP_KEY_OTHER_TYPES, u64(other_types));
	json_object_object_add(other, HEAPDUMP_KEY_OTHER_BYTES, u64(other_bytes));
	json_object_object_add(other, HEAPDUMP_KEY_OTHER_OBJECTS, u64(other_count));
	json_object_object_add(o, HEAPDUMP_KEY_OTHER, other);
	for (size_t i = 0; i < s->n_paths; i++)
		if (s->paths[i].n_steps > 0)
			json_object_array_add(paths, path_json(g, &s->paths[i]));
	json_object_object_add(o, HEAPDUMP_KEY_PATHS, paths);
	if (s->retained_done || s->retained_why[0])
		json_object_object_add(o, HEAPDUMP_KEY_RETAINED, retained_json(g, s));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_OBJECTS, u64(cut->nodes));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_REFERENCES, u64(cut->edges));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_TYPES, u64(cut->types));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_ROOTS, u64(cut->roots));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_NAMES, u64(cut->names));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_LOST_BATCHES, u64(cut->lost_batches));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_UNRESOLVED_REFERENCES, u64(cut->unresolved_edges));
	json_object_object_add(c, HEAPDUMP_KEY_CUT_UNRESOLVED_ROOTS, u64(cut->unresolved_roots));
	if (hg_is_histogram(g))
		json_object_object_add(c, HEAPDUMP_KEY_CUT_UNPLACED, u64(cut->unplaced));
	json_object_object_add(o, HEAPDUMP_KEY_CUT, c);
	return o;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int heapdump_run(const struct heapdump_request *req, char *err, size_t errlen)
{
	struct heapsnap_opts o = {.timeout_ns = req->timeout_ns, .save_fd = -1};
	struct heapsnap snap;
	struct heapsum *s = NULL;
	int r = heapsnap_take(&req->ep, &o, &snap, err, errlen);

	if (r < 0)
		return r;
	/* Without the classes (the process gone, its files unreadable) the
	 * statics keep their field names alone. */
	struct heapstatics_result named;
	(void)heapstatics_name(req->ep.pid, snap.graph, &named);
	if (req->gcdump_fd >= 0) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		struct gcdump_meta m = {.process_name = req->process_name,
		                        .pid = (int32_t)req->ep.pid,
		                        .time_unix_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec,
		                        .pointer_size = snap.pointer_size ? snap.pointer_size : 8};
		r = gcdump_write(req->gcdump_fd, snap.graph, &m, err, errlen);
		if (r == 0 && fsync(req->gcdump_fd) < 0 && errno != EINVAL) {
			r = -errno;
			snprintf(err, errlen, "cannot write the gcdump: %s", strerror(-r));
		}
		if (r < 0)
			goto out;
	}
	if (req->summary_fd >= 0) {
		r = heapsum_build(snap.graph, HEAPDUMP_SUMMARY_PATHS, &s);
		if (r < 0) {
			snprintf(err, errlen, "out of memory for the heap summary");
			goto out;
		}
		/* Out of memory here leaves the summary without retained
		 * sizes, and says so in it. */
		const struct hd_limits lim = {.max_nodes = HEAPDUMP_RETAINED_MAX_OBJECTS};
		(void)heapsum_retained(snap.graph, s, &lim);
		json_object *j = heapdump_json(req->ep.pid, &snap, s, HEAPDUMP_SUMMARY_TYPES);
		const char *text = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN) : NULL;
		if (!text) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory for the heap summary");
		} else if ((r = write_all(req->summary_fd, text, strlen(text))) < 0) {
			snprintf(err, errlen, "cannot pass on the heap summary: %s", strerror(-r));
		}
		json_object_put(j);
	}
out:
	heapsum_free(s);
	hg_free(snap.graph);
	return r;
}
