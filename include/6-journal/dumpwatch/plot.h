/* The plot beside a dump (NAME.svg): the metric of each of the fired rule's
 * conditions over the history of its dump context (docs/context.md), with
 * the threshold, the sustain window, the fire, the dump's start and end and
 * the GCs. Pure: the context JSON goes in, SVG text comes out. */
#ifndef DUMPWATCH_PLOT_H
#define DUMPWATCH_PLOT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the SVG document for ctx (a dump context, version 1) to out.
 * Returns 0, or -EINVAL with a sentence in err naming what ctx lacks. */
int plot_svg(FILE *out, struct json_object *ctx, char *err, size_t errlen);

#endif
