/* The fire path of a target: a rule fired, so its fire is journaled and
 * its on-fire hook runs, the context of the moment is noted, the dump starts
 * and, when it ends, is journaled with its context files, its on-dump hook
 * runs and its upload is queued. The loop's side of it (watching the job,
 * reporting its end to the owner) is target.c's. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dumpwatch/log.h"
#include "target_shared.h"

static void on_dump_deleted(void *ctx, const char *path, uint64_t bytes, int context_only)
{
	struct target *t = ctx;
	struct json_object *rec = rec_new(t);

	json_object_object_add(rec, "deleted", json_object_new_string(path));
	json_object_object_add(rec, "bytes", json_object_new_int64((int64_t)bytes));
	journal_write(t->cfg->journal, context_only ? "context-deleted" : "dump-deleted", rec);
	log_info("deleted %s%s (%.1f MB) to make room for a dump of pid %d", path,
	         context_only ? ", the context of a dump not taken," : " and its context files", (double)bytes / 1e6,
	         (int)t->dt.pid);
}

/* Opens the store of the fire in t->fx (its dump_dir), once for the dump
 * and its context files: t->fx_store, or -errno with the sentence in err
 * and t->fx_store_err. */
static int store_open(struct target *t, char *err, size_t errlen)
{
	int fd = dump_open_store(t->fx.dump_dir, err, errlen);

	t->fx_store = fd;
	snprintf(t->fx_store_err, sizeof(t->fx_store_err), "%s", fd < 0 ? err : "");
	return fd < 0 ? fd : 0;
}

/* The fire's dump and context files are written: the store is closed. */
static void store_close(struct target *t)
{
	if (t->fx_store >= 0)
		close(t->fx_store);
	t->fx_store = -1;
}

/* Writes the context files of the fire in t->fx beside its dump, in the
 * store the fire opened (res: the dump published, NULL when none was), and
 * names them in rec, or says there why they are missing. Their paths also go
 * to ret_json and ret_plot (PATH_MAX each; "" when not written) unless NULL. */
static void context_publish(struct target *t, enum dumpctx_outcome outcome, const char *err,
                            const struct dump_result *res, struct json_object *rec, char *ret_json, char *ret_plot)
{
	struct dumpctx_input *in = &t->fx;
	char jbuf[PATH_MAX], sbuf[PATH_MAX], why[768];
	char *jp = ret_json ? ret_json : jbuf, *sp = ret_plot ? ret_plot : sbuf;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];

	jp[0] = sp[0] = '\0';
	if (!t->ct || !in->rule)
		return;
	in->outcome = outcome;
	in->error = err;
	if (in->dump_start_unix_ns)
		in->dump_end_unix_ns = loop_wall_now();
	if (res) {
		in->dump_bytes = (int64_t)res->bytes;
		in->dump_duration_ms = res->duration_ms;
		in->via = res->via;
	}
	in->cmdline = t->cmdline;
	in->runtime_version = t->info.runtime_version;
	in->user = getpwuid_r(t->dt.uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp ? pw.pw_name : NULL;
	int64_t t0 = loop_now();
	int r = -EBADF;
	if (t->fx_store >= 0)
		r = ctxtrack_publish(t->ct, in, t->fx_store, &t->cfg->opt->store, jp, sp, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", t->fx_store_err); /* as the dump was told */
	if (r == 0) {
		json_object_object_add(rec, "context", json_object_new_string(jp));
		json_object_object_add(rec, "plot", json_object_new_string(sp));
		json_object_object_add(rec, "context_ms", report_num((double)(loop_now() - t0) / 1e6, 3));
	} else {
		jp[0] = sp[0] = '\0';
		json_object_object_add(rec, "context_error", json_object_new_string(why));
		log_warn("the context of the dump of pid %d (%s) for rule %s is missing: %s", (int)t->dt.pid, t->name,
		         in->rule->rule.name, why);
	}
	in->rule = NULL;
}

/* Notes what the context of this fire needs from its moment: the values the
 * conditions read, the times, the process. Here, once, the dump's directory
 * and file name are decided: the dump and its context files both take them
 * from t->fx. */
static void context_fire(struct target *t, const struct target_rule *tr, int64_t now, int64_t unix_ns)
{
	struct dumpctx_input *in = &t->fx;
	struct metrics_at at = {.m = session_metrics(t->session), .now_ns = now};

	/* The history holds the moment of the fire. */
	if (t->ct)
		ctxtrack_tick(t->ct, at.m, now);
	memset(in, 0, sizeof(*in));
	in->rule = &tr->fr;
	in->rule_file = tr->file[0] ? tr->file : NULL;
	for (uint32_t c = 0; c < tr->fr.rule.n_conds && c < RULE_MAX_CONDS; c++) {
		int64_t when;
		in->read[c] = metrics_read_eval(&at, &tr->fr.rule.conds[c].metric, &in->value[c], &when);
	}
	struct metrics_exception x;
	if (report_fire_exception(&tr->fr.rule, at.m, &x, &in->exc_cond)) {
		in->exc_set = 1;
		snprintf(in->exc_type, sizeof(in->exc_type), "%s", x.type);
		snprintf(in->exc_message, sizeof(in->exc_message), "%s", x.message);
		in->exc_hresult = x.hresult;
		in->exc_ns = x.t_ns;
	}
	in->fire_ns = now;
	in->fire_unix_ns = unix_ns;
	in->dump_dir = dump_dir_of(t, tr);
	dump_file_name_ids(tr->fr.name_template, t->name, t->dt.pid, tr->fr.rule.name, t->ident.container, t->ident.pod,
	                   unix_ns, t->fx_name, sizeof(t->fx_name));
	dump_file_name_for_type(t->fx_name, sizeof(t->fx_name), tr->fr.rule.dump_type);
	in->dump_name = t->fx_name;
	in->dump_bytes = -1;
	in->dump_duration_ms = -1;
	in->pid = t->dt.pid;
	in->process_name = t->name;
	in->uid = t->dt.uid;
}

/* Runs the rule's on-fire or on-dump hook (the daemon's when the rule has
 * none), if any. dump and context name the files published (on-dump). */
static void run_hook(struct target *t, const struct target_rule *tr, int on_dump, const char *dump, const char *context,
                     uint64_t bytes)
{
	const struct hook_cmd *cmd = on_dump ? &tr->fr.on_dump : &tr->fr.on_fire;
	char err[512];

	if (!t->cfg->hooks)
		return;
	if (cmd->argc == 0)
		cmd = on_dump ? &t->cfg->opt->on_dump : &t->cfg->opt->on_fire;
	if (cmd->argc == 0)
		return;
	struct hook_env e = {
	    .event = on_dump ? "on-dump" : "on-fire",
	    .pid = t->dt.pid,
	    .owner = t->dt.uid,
	    .process = t->name,
	    .rule = tr->fr.rule.name,
	    .values = t->fire_desc,
	    .dump = dump,
	    .context = context,
	    .dump_bytes = bytes,
	    .container = t->ident.container[0] ? t->ident.container : NULL,
	    .pod = t->ident.pod[0] ? t->ident.pod : NULL,
	    .dump_fd = dump ? open(dump, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1,
	    .ctx_fd = context ? open(context, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1,
	};
	hook_run(t->cfg->hooks, cmd, tr->fr.hook_timeout_ns ? tr->fr.hook_timeout_ns : t->cfg->opt->hook_timeout_ns, &e,
	         err, sizeof(err));
	if (e.dump_fd >= 0)
		close(e.dump_fd);
	if (e.ctx_fd >= 0)
		close(e.ctx_fd);
}

/* Queues the dump and its context files for upload when the rule (or, when
 * it does not say, the daemon) wants it. */
static void ship(struct target *t, const struct target_rule *tr, const char *dump, const char *context,
                 const char *plot)
{
	char err[512];
	int want = tr->fr.upload < 0 ? t->cfg->upload_default : tr->fr.upload;

	if (!want)
		return;
	if (!t->cfg->uploads) {
		struct json_object *rec = rec_rule(t, tr->fr.rule.name);
		json_object_object_add(rec, "dump", json_object_new_string(dump));
		json_object_object_add(rec, "permanent", json_object_new_boolean(1));
		json_object_object_add(rec, "local", json_object_new_string("kept"));
		journal_err(t, "upload-failed", rec,
		            "the rule asks for an upload, but dumpwatch runs without --upload: start it with "
		            "--upload s3://BUCKET[/PREFIX]");
		log_warn("rule %s asks for an upload of %s, but dumpwatch runs without --upload", tr->fr.rule.name,
		         dump);
		return;
	}
	struct upload_item it = {.n_files = 0,
	                         .prefix = tr->fr.upload_prefix[0] ? tr->fr.upload_prefix : NULL,
	                         .keep_local = tr->fr.upload_keep,
	                         .pid = t->dt.pid,
	                         .process = t->name,
	                         .rule = tr->fr.rule.name};
	it.files[it.n_files++] = dump;
	if (context && context[0])
		it.files[it.n_files++] = context;
	if (plot && plot[0])
		it.files[it.n_files++] = plot;
	uploader_enqueue(t->cfg->uploads, &it, err, sizeof(err));
}

int target_fire(struct target *t, size_t i, int64_t now)
{
	struct target_rule *tr = &t->rules[i];
	const struct rule *r = &tr->fr.rule;
	struct json_object *rec = rec_new(t);
	char desc[512], err[512];

	report_fire(rec, r, session_metrics(t->session), now, t->in_event ? session_read_ns(t->session) : 0, desc,
	            sizeof(desc));
	json_object_object_add(rec, "fired_unix_us", json_object_new_int64(loop_wall_now() / 1000));
	journal_write(t->cfg->journal, "fire", rec);
	log_info("rule %s fired for pid %d (%s): %s", r->name, (int)t->dt.pid, t->name, desc);
	snprintf(t->fire_desc, sizeof(t->fire_desc), "%s", desc);
	run_hook(t, tr, 0, NULL, NULL, 0);
	eval_record_fire(r, &tr->st, now);
	tr->at_limit = 0;
	int64_t unix_ns = loop_wall_now();
	context_fire(t, tr, now, unix_ns);
	if (t->hooks->fired)
		t->hooks->fired(t->ctx, t, i);

	struct dump_request req = {
	    .pid = t->dt.pid,
	    .uid = t->dt.uid,
	    .gid = t->dt.gid,
	    .other_mount_ns = t->dt.other_mount_ns,
	    .socket_path = t->dt.socket_path,
	    .tmpdir = t->dt.tmpdir,
	    .runtime_version = t->info.runtime_version,
	    .createdump = t->cfg->opt->createdump,
	    .dir = t->fx.dump_dir,
	    .name = t->fx.dump_name,
	    .type = r->dump_type,
	    .via = t->cfg->opt->via,
	    .limits = &t->cfg->opt->store,
	    .timeout_ns = t->cfg->opt->dump_timeout_ns,
	    .deleted = on_dump_deleted,
	    .ctx = t,
	};
	t->fx.dump_start_unix_ns = loop_wall_now();
	int rc = store_open(t, err, sizeof(err));
	if (rc == 0) {
		req.store_fd = t->fx_store;
		rc = dump_start(&req, &t->job, err, sizeof(err));
	}
	if (rc < 0) {
		struct json_object *frec = rec_rule(t, r->name);
		t->job = NULL;
		t->fx.dump_start_unix_ns = 0;
		context_publish(t, rc == -ENOSPC ? DUMPCTX_SKIPPED : DUMPCTX_FAILED, err, NULL, frec, NULL, NULL);
		store_close(t);
		if (rc == -ENOSPC) {
			journal_err(t, "dump-skipped", frec, err);
			log_warn("dump of pid %d (%s) for rule %s %s", (int)t->dt.pid, t->name, r->name, err);
		} else {
			journal_err(t, "dump-failed", frec, err);
			log_error("dump of pid %d (%s) for rule %s failed: %s", (int)t->dt.pid, t->name, r->name, err);
		}
		return rc;
	}
	t->job_rule = i;
	log_info("dumping pid %d to %s", (int)t->dt.pid, dump_job_path(t->job));
	return 0;
}

/* The dump is published: its record, context files, hook and upload. */
static void dump_done(struct target *t, const struct target_rule *tr, struct dump_result *res)
{
	struct json_object *rec = rec_rule(t, tr->fr.rule.name);
	char context[PATH_MAX], plot[PATH_MAX];

	t->dumps++;
	report_dump(rec, res, tr->fr.rule.dump_type);
	t->fx.heap = res->heap;
	context_publish(t, DUMPCTX_DUMP, NULL, res, rec, context, plot);
	json_object_put(res->heap);
	res->heap = NULL;
	t->fx.heap = NULL;
	t->fx.heap_error = NULL;
	store_close(t);
	journal_write(t->cfg->journal, "dump", rec);
	log_info("dump written: %s (%.1f MB in %.1f s, via %s)", res->path, (double)res->bytes / 1e6,
	         res->duration_ms / 1e3, res->via);
	run_hook(t, tr, 1, res->path, context[0] ? context : NULL, res->bytes);
	ship(t, tr, res->path, context, plot);
}

/* A core dump of a rule with heap-summary is published: its heap snapshot
 * starts as t->job, and the dump waits in t->fx_res. 0 when started, else
 * -errno with the reason noted for its context (-ESRCH: the process has
 * exited, which the loop may not have heard yet: no snapshot is tried). */
static int summary_start(struct target *t, const struct dump_result *res)
{
	struct dump_request req = {
	    .pid = t->dt.pid,
	    .uid = t->dt.uid,
	    .gid = t->dt.gid,
	    .socket_path = t->dt.socket_path,
	    .timeout_ns = t->cfg->opt->dump_timeout_ns,
	};
	int rc = -ESRCH;

	if (t->exited || discovery_exited(t->dt.pid, t->dt.starttime))
		snprintf(t->fx_heap_err, sizeof(t->fx_heap_err),
		         "the process exited after its dump, before its heap summary could be taken");
	else
		rc = dump_heap_summary_start(&req, &t->job, t->fx_heap_err, sizeof(t->fx_heap_err));

	if (rc < 0) {
		t->job = NULL;
		t->fx.heap_error = t->fx_heap_err;
		log_warn("heap summary of pid %d (%s) for %s: %s", (int)t->dt.pid, t->name, res->path, t->fx_heap_err);
		return rc;
	}
	t->fx_res = *res;
	t->fx_summing = 1;
	log_info("taking the heap summary of pid %d (%s) for %s", (int)t->dt.pid, t->name, res->path);
	return 0;
}

/* The heap snapshot after a core dump ended (rc, res its own): the dump
 * goes on to be published with its summary, or with why there is none. */
static void summary_end(struct target *t, const struct target_rule *tr, int rc, struct dump_result *res,
                        const char *err)
{
	struct dump_result dres = t->fx_res;

	t->fx_summing = 0;
	if (rc == 0) {
		dres.heap = res->heap;
	} else {
		snprintf(t->fx_heap_err, sizeof(t->fx_heap_err), "%s", err);
		t->fx.heap_error = t->fx_heap_err;
		log_warn("heap summary of pid %d (%s) for %s: %s", (int)t->dt.pid, t->name, dres.path, err);
	}
	dump_done(t, tr, &dres);
}

int target_fire_finish(struct target *t)
{
	struct dump_result res;
	char err[512];
	int rc = dump_job_finish(t->job, &res, err, sizeof(err));

	if (rc == -EAGAIN)
		return rc;
	const struct target_rule *tr = &t->rules[t->job_rule];
	dump_job_free(t->job);
	t->job = NULL;
	if (t->fx_summing) {
		summary_end(t, tr, rc, &res, err);
		return 0;
	}
	if (rc == 0 && tr->fr.rule.heap_summary && tr->fr.rule.dump_type != DUMP_GCDUMP && summary_start(t, &res) == 0)
		return -EAGAIN;
	if (rc < 0) {
		struct json_object *rec = rec_rule(t, tr->fr.rule.name);
		context_publish(t, DUMPCTX_FAILED, err, NULL, rec, NULL, NULL);
		store_close(t);
		journal_err(t, "dump-failed", rec, err);
		log_error("dump of pid %d (%s) for rule %s failed: %s", (int)t->dt.pid, t->name, tr->fr.rule.name, err);
	} else {
		dump_done(t, tr, &res);
	}
	return rc;
}

void target_fire_abandon(struct target *t, const char *why)
{
	if (t->fx_summing) {
		/* The dump is whole: only its summary is abandoned. */
		struct dump_result none = {0};
		dump_job_abort(t->job);
		t->job = NULL;
		summary_end(t, &t->rules[t->job_rule], -ECANCELED, &none, why);
		return;
	}
	struct json_object *rec = rec_rule(t, t->rules[t->job_rule].fr.rule.name);

	context_publish(t, DUMPCTX_FAILED, why, NULL, rec, NULL, NULL);
	journal_err(t, "dump-failed", rec, why);
	dump_job_abort(t->job); /* before the store it removes the partial file from closes */
	t->job = NULL;
	store_close(t);
}
