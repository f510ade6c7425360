/* A dump's context as JSON: every key of the shape, times relative to the
 * fire, what a skipped dump leaves null, a floor marked at_least, hostile
 * strings still valid UTF-8 JSON once written by jsonl, and (with python3's
 * jsonschema, as scripts/setup.sh installs it) valid against
 * examples/dump-context.schema.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dumpwatch/dumpctx.h"
#include "dumpwatch/jsonl.h"

#define MS 1000000LL
#define SEC 1000000000LL

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		struct json_object *v = NULL;
		if (json_object_is_type(o, json_type_array))
			v = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &v))
			return NULL;
		o = v;
	}
	return o;
}

static int is_null(struct json_object *root, const char *path)
{
	struct json_object *v;
	char buf[256], *dot;
	snprintf(buf, sizeof(buf), "%s", path);
	dot = strrchr(buf, '.');
	*dot = '\0';
	return json_object_object_get_ex(get(root, buf), dot + 1, &v) && v == NULL;
}

/* Writes the context through jsonl and parses it back. */
static struct json_object *roundtrip(struct json_object *ctx, char **ret_line)
{
	char *line = NULL;
	size_t len = 0;
	CHECK(jsonl_format(ctx, &line, &len) == 0);
	struct json_object *back = line ? json_tokener_parse(line) : NULL;
	CHECK(back != NULL);
	*ret_line = line;
	return back;
}

static int schema_valid(const char *line)
{
	char path[] = "/tmp/dw-dumpctx.XXXXXX", cmd[1024];
	if (access("/usr/bin/python3", X_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0) {
		printf("schema check skipped: no python3 jsonschema (scripts/setup.sh installs it)\n");
		return 1;
	}
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
	close(fd);
	snprintf(
	    cmd, sizeof(cmd),
	    "/usr/bin/python3 -c 'import json,sys,jsonschema; "
	    "jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))' "
	    "%s/examples/dump-context.schema.json %s",
	    DW_SOURCE_DIR, path);
	int r = system(cmd);
	unlink(path);
	return r == 0;
}

int main(void)
{
	struct file_rule fr;
	char err[256];
	memset(&fr, 0, sizeof(fr));
	snprintf(fr.rule.name, sizeof(fr.rule.name), "loh-balloon");
	snprintf(fr.description, sizeof(fr.description), "<b>\"big\"</b> \x01\xff");
	CHECK(rule_cond_parse("loh-size > 300MB for 2s", &fr.rule.conds[0], err, sizeof(err)) == 0);
	CHECK(rule_cond_parse("gc-pause >= 200ms", &fr.rule.conds[1], err, sizeof(err)) == 0);
	fr.rule.n_conds = 2;
	fr.rule.dump_type = DUMP_WITHHEAP;
	fr.line = 4;

	struct history *h = history_new(60 * SEC, 100 * MS);
	int s = history_series(h, "loh-size", UNIT_BYTES);
	int64_t fire = 1000 * SEC;
	for (int i = 0; i < 50; i++)
		history_add(h, (size_t)s, fire - 5 * SEC + i * 100 * MS, 250e6 + i * 2e6);
	struct gc_record g;
	memset(&g, 0, sizeof(g));
	g.index = 7;
	g.generation = 2;
	g.start_ns = fire - 1500 * MS;
	g.end_ns = fire - 1490 * MS;
	g.pause_ms = 3.25;
	g.size[3] = 280000000;
	g.complete = 1;

	struct dumpctx_input in = {0};
	in.outcome = DUMPCTX_DUMP;
	in.rule = &fr;
	in.rule_file = "/etc/dumpwatch/rules.d/a.json";
	in.value[0] = 348e6;
	in.read[0] = 2; /* a floor */
	in.fire_ns = fire;
	in.fire_unix_ns = 1795460604639000000LL;
	in.dump_dir = "/var/lib/dumpwatch/dumps";
	in.dump_name = "app-1-loh-balloon-x.core";
	in.dump_bytes = 494000000;
	in.dump_start_unix_ns = in.fire_unix_ns + 2 * MS;
	in.dump_end_unix_ns = in.fire_unix_ns + 1050 * MS;
	in.dump_duration_ms = 1048;
	in.via = "runtime";
	in.pid = 4807;
	in.process_name = "Orders\x1b[31m";
	in.cmdline = "/app/Orders --tag \"<script>\" \xc3\x28";
	in.uid = 1000;
	in.user = NULL;
	in.runtime_version = "10.0.12";
	in.history = h;
	in.gcs = &g;
	in.n_gcs = 1;
	/* Allocation by type: 30 types, a hostile name among them; the 20
	 * largest listed, the rest as other. */
	struct alloctypes *al = alloctypes_new(60 * SEC, 0);
	CHECK(alloctypes_add(al, fire - 2 * SEC, "System.Byte[]", EV_ALLOC_LARGE, 400000000) == 1);
	CHECK(alloctypes_add(al, fire + 30 * MS, "Evil\x1b[31m\n", EV_ALLOC_SMALL, 50000000) == 1);
	for (int i = 0; i < 28; i++) {
		char name[32];
		snprintf(name, sizeof(name), "T%02d", i);
		alloctypes_add(al, fire - SEC, name, EV_ALLOC_SMALL, 1000000u + (unsigned)i);
	}
	in.allocs = al;

	char *line = NULL;
	struct json_object *ctx = dumpctx_build(&in);
	struct json_object *o = roundtrip(ctx, &line);
	CHECK(json_object_get_int(get(o, "dumpwatch_context")) == 1);
	CHECK_STR(json_object_get_string(get(o, "outcome")), "dump");
	CHECK(get(o, "error") == NULL);
	CHECK(json_object_get_int64(get(o, "fired_unix_ms")) == 1795460604639LL);
	CHECK_STR(json_object_get_string(get(o, "rule.file")), "/etc/dumpwatch/rules.d/a.json");
	CHECK(json_object_get_int(get(o, "rule.line")) == 4);
	CHECK_STR(json_object_get_string(get(o, "rule.conditions.0.metric")), "loh-size");
	CHECK_STR(json_object_get_string(get(o, "rule.conditions.0.op")), ">");
	CHECK(json_object_get_double(get(o, "rule.conditions.0.threshold")) == 300e6);
	CHECK(json_object_get_int(get(o, "rule.conditions.0.for_ms")) == 2000);
	CHECK(json_object_get_boolean(get(o, "rule.conditions.0.at_least")));
	CHECK(is_null(o, "rule.conditions.1.value"));
	CHECK_STR(json_object_get_string(get(o, "rule.conditions.1.unit")), "ms");
	CHECK_STR(json_object_get_string(get(o, "dump.path")), "/var/lib/dumpwatch/dumps/app-1-loh-balloon-x.core");
	CHECK(json_object_get_int64(get(o, "dump.ended_unix_ms")) - json_object_get_int64(get(o, "fired_unix_ms")) ==
	      1050);
	CHECK(is_null(o, "process.user"));
	/* Hostile strings: valid UTF-8 JSON, control characters escaped. */
	CHECK(strstr(line, "\\u001b[31m") != NULL);
	CHECK(strstr(line, "\\ufffd") != NULL);
	CHECK(strstr(line, "\x1b") == NULL);
	/* Times relative to the fire: 50 points from -5 s. */
	struct json_object *pts = get(o, "history.series.0.points");
	CHECK(json_object_array_length(pts) == 50);
	CHECK(json_object_get_double(get(pts, "0.0")) == -5000);
	CHECK(json_object_get_double(get(pts, "49.0")) == -100);
	CHECK(json_object_get_double(get(pts, "49.1")) == 348e6);
	CHECK(json_object_get_int(get(o, "history.slot_ms")) == 100);
	CHECK(json_object_get_double(get(o, "gcs.0.start_ms")) == -1500);
	CHECK(json_object_get_double(get(o, "gcs.0.pause_ms")) == 3.25);
	CHECK(json_object_get_int64(get(o, "gcs.0.sizes.loh")) == 280000000);
	CHECK_STR(json_object_get_string(get(o, "gcs.0.type")), "blocking");
	CHECK(json_object_get_int64(get(o, "allocations.window_ms")) == 60000);
	CHECK(json_object_get_int64(get(o, "allocations.bytes")) == 450000000 + 28 * 1000000 + 27 * 28 / 2);
	CHECK(json_object_get_int64(get(o, "allocations.ticks")) == 30);
	CHECK(json_object_get_int64(get(o, "allocations.type_count")) == 30);
	CHECK(json_object_get_int64(get(o, "allocations.types_max")) == ALLOCTYPES_MAX);
	CHECK(json_object_get_double(get(o, "allocations.until_ms")) == 30);
	CHECK(json_object_array_length(get(o, "allocations.types")) == DUMPCTX_ALLOC_TYPES);
	CHECK_STR(json_object_get_string(get(o, "allocations.types.0.type")), "System.Byte[]");
	CHECK_STR(json_object_get_string(get(o, "allocations.types.0.kind")), "loh");
	CHECK(json_object_get_int64(get(o, "allocations.types.0.bytes")) == 400000000);
	CHECK(fabs(json_object_get_double(get(o, "allocations.types.0.share")) - 0.8368) < 1e-9);
	CHECK_STR(json_object_get_string(get(o, "allocations.types.1.kind")), "soh");
	CHECK_STR(json_object_get_string(get(o, "allocations.types.2.type")), "T27");
	/* T00..T09 are other: 10 MB and 45 bytes. */
	CHECK(json_object_get_int64(get(o, "allocations.other_bytes")) == 10000045);
	CHECK(json_object_get_int64(get(o, "allocations.untracked_bytes")) == 0);
	CHECK(strstr(line, "Evil\\u001b[31m\\n") != NULL);
	CHECK(schema_valid(line));
	json_object_put(ctx);
	json_object_put(o);
	free(line);

	/* A heap summary as dumpwatch writes one (the real context's, from a
	 * GcLab with 100 x 1 MiB in a static list) is carried whole and valid
	 * by the schema; so is the reason one is missing. */
	{
		struct json_object *fx =
		    json_object_from_file(DW_TEST_DATA "/context/GcLab-3033-20261128T130335Z.json");
		struct json_object *heap = NULL;

		CHECK(fx && json_object_object_get_ex(fx, "heap", &heap) && heap);
		in.heap = heap;
		ctx = dumpctx_build(&in);
		o = roundtrip(ctx, &line);
		CHECK(json_object_get_int64(get(o, "heap.bytes")) == 105897424);
		CHECK_STR(json_object_get_string(get(o, "heap.types.0.type")), "System.Byte[]");
		CHECK(json_object_get_int64(get(o, "heap.types.0.generations.loh")) == 104860000);
		CHECK_STR(json_object_get_string(get(o, "heap.paths.0.root")), "s_entries (static)");
		CHECK(get(o, "heap_error") == NULL);
		CHECK(schema_valid(line));
		json_object_put(ctx);
		json_object_put(o);
		free(line);
		in.heap = NULL;
		in.heap_error = "the heap snapshot failed: no GC walk of the heap in 120s";
		ctx = dumpctx_build(&in);
		o = roundtrip(ctx, &line);
		CHECK_STR(json_object_get_string(get(o, "heap_error")), in.heap_error);
		CHECK(get(o, "heap") == NULL);
		CHECK(schema_valid(line));
		json_object_put(ctx);
		json_object_put(o);
		free(line);
		in.heap_error = NULL;
		json_object_put(fx);
	}

	/* Skipped: the error, no bytes, no times, no via, no history. */
	in.outcome = DUMPCTX_SKIPPED;
	in.error = "skipped: the store already holds 3 dump(s)";
	in.dump_bytes = -1;
	in.dump_start_unix_ns = in.dump_end_unix_ns = 0;
	in.dump_duration_ms = -1;
	in.via = NULL;
	in.rule_file = NULL;
	in.history = NULL;
	in.n_gcs = 0;
	in.allocs = NULL;
	ctx = dumpctx_build(&in);
	o = roundtrip(ctx, &line);
	CHECK_STR(json_object_get_string(get(o, "outcome")), "skipped");
	CHECK_STR(json_object_get_string(get(o, "error")), "skipped: the store already holds 3 dump(s)");
	CHECK(is_null(o, "dump.bytes") && is_null(o, "dump.started_unix_ms") && is_null(o, "dump.via"));
	CHECK(is_null(o, "rule.file") && is_null(o, "rule.line"));
	CHECK(json_object_array_length(get(o, "history.series")) == 0);
	struct json_object *null_allocs = (struct json_object *)1;
	CHECK(json_object_object_get_ex(o, "allocations", &null_allocs) && null_allocs == NULL);
	CHECK(schema_valid(line));
	json_object_put(ctx);
	json_object_put(o);
	free(line);
	CHECK_STR(dumpctx_outcome_name(DUMPCTX_FAILED), "failed");
	history_free(h);
	alloctypes_free(al);
	return check_done();
}
