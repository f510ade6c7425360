/* The guard's limits kept across rule changes and restarts; see guard.c.
 *
 * Limits across restarts: after every fire the state file is rewritten
 * (state.h), before the dump starts, so that a crash during a dump cannot
 * lead to a second one. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/log.h"
#include "guard_shared.h"

/* ---- state ------------------------------------------------------------ */

void guard_state_failed(struct guard *g, const char *err)
{
	struct json_object *rec = json_object_new_object();

	json_object_object_add(rec, "error", json_object_new_string(err));
	journal_write(g->journal, "state-failed", rec);
}

static int same_key(const struct state_record *k, const char *rule, uint64_t hash, const struct dn_target *t)
{
	return k->hash == hash && k->pid == t->pid && k->starttime == t->starttime && strcmp(k->rule, rule) == 0;
}

void guard_keep_state(struct guard *g, const struct proc *p, const struct target_rule *gr)
{
	struct state_record *k;

	if (gr->st.fires == 0)
		return;
	for (size_t i = 0; i < g->n_kept; i++)
		if (same_key(&g->kept[i], gr->fr.rule.name, gr->hash, &p->t)) {
			state_from_eval(&g->kept[i], &gr->st);
			return;
		}
	if (g->n_kept >= STATE_RECORDS_MAX)
		return;
	k = realloc(g->kept, (g->n_kept + 1) * sizeof(*k));
	if (!k)
		return;
	g->kept = k;
	k = &g->kept[g->n_kept++];
	memset(k, 0, sizeof(*k));
	snprintf(k->rule, sizeof(k->rule), "%s", gr->fr.rule.name);
	k->hash = gr->hash;
	k->pid = p->t.pid;
	k->starttime = p->t.starttime;
	state_from_eval(k, &gr->st);
}

/* Takes the kept state of (rule, process) into st, if any. */
int guard_take_state(struct guard *g, const struct proc *p, const char *rule, uint64_t hash, struct eval_state *st)
{
	for (size_t i = 0; i < g->n_kept; i++) {
		if (!same_key(&g->kept[i], rule, hash, &p->t))
			continue;
		state_to_eval(&g->kept[i], st);
		g->kept[i] = g->kept[--g->n_kept];
		return 1;
	}
	return 0;
}

void guard_forget_state(struct guard *g, const struct dn_target *t)
{
	for (size_t i = 0; i < g->n_kept;) {
		if (g->kept[i].pid == t->pid && g->kept[i].starttime == t->starttime)
			g->kept[i] = g->kept[--g->n_kept];
		else
			i++;
	}
}

void guard_save_state(struct guard *g)
{
	struct state_record *recs;
	size_t n = g->n_kept, cap = g->n_kept;
	char err[512];

	if (!g->state_path[0])
		return;
	for (size_t i = 0; i < g->n_procs; i++) {
		size_t nr = 0;
		target_rules(g->procs[i]->tg, &nr);
		cap += nr;
	}
	recs = calloc(cap ? cap : 1, sizeof(*recs));
	if (!recs) {
		log_error("cannot save limit state: out of memory");
		return;
	}
	if (g->n_kept)
		memcpy(recs, g->kept, g->n_kept * sizeof(*recs));
	for (size_t i = 0; i < g->n_procs; i++) {
		const struct proc *p = g->procs[i];
		size_t nr = 0;
		const struct target_rule *rules = target_rules(p->tg, &nr);
		for (size_t k = 0; k < nr; k++) {
			const struct target_rule *gr = &rules[k];
			if (gr->st.fires == 0)
				continue;
			struct state_record *r = &recs[n++];
			snprintf(r->rule, sizeof(r->rule), "%s", gr->fr.rule.name);
			r->hash = gr->hash;
			r->pid = p->t.pid;
			r->starttime = p->t.starttime;
			state_from_eval(r, &gr->st);
		}
	}
	if (state_save(g->state_path, recs, n, err, sizeof(err)) < 0) {
		log_error("%s; limits will not survive a restart until this is fixed", err);
		guard_state_failed(g, err);
	}
	free(recs);
}
