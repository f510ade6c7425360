/* Fuzz target: reading a dump context back. `dumpwatch show` and `dumpwatch
 * report` read NAME.json files from a directory anyone may have written to,
 * so the input is any bytes: parsed as JSON the way context_load parses
 * (strict), then printed as `show` prints it (UTF-8 and ASCII sparklines) and
 * drawn as the plot. Nothing may crash or leak; the plot is refused
 * (-EINVAL) or is one SVG document of valid UTF-8 with no control character
 * but newlines and no element or attribute that runs or fetches anything. */
#include <errno.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpwatch/context.h"
#include "dumpwatch/plot.h"
#include "dumpwatch/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                                                  \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                     \
			abort();                                                                                       \
		}                                                                                                      \
	} while (0)

static void check_svg(const char *svg, size_t len)
{
	REQUIRE(len > 0 && (strncmp(svg, "<?xml ", 6) == 0 || strncmp(svg, "<svg", 4) == 0));
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = text_utf8_decode((const unsigned char *)svg + i, len - i, &cp);
		REQUIRE(n > 0);
		REQUIRE(cp == '\n' || !text_is_control(cp));
		i += n;
	}
	/* Every '<' starts markup (text has it escaped): no element that runs
	 * or fetches, no attribute that links. */
	for (const char *p = svg, *end = svg + len; (p = memchr(p, '<', (size_t)(end - p))) != NULL; p++) {
		const char *gt = memchr(p, '>', (size_t)(end - p));
		REQUIRE(gt);
		size_t n = (size_t)(gt - p);
		REQUIRE(strncmp(p, "<script", 7) != 0 && strncmp(p, "<foreignObject", 14) != 0 &&
		        strncmp(p, "<image", 6) != 0 && strncmp(p, "<a ", 3) != 0 && strncmp(p, "<use", 4) != 0);
		/* Attribute names: the tag outside its quoted values (which hold
		 * escaped text and no quote of their own). */
		char names[512];
		size_t k = 0;
		int quoted = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] == '"')
				quoted = !quoted;
			else if (!quoted && k + 1 < sizeof(names))
				names[k++] = p[i];
		}
		names[k] = '\0';
		REQUIRE(!quoted);
		REQUIRE(!strstr(names, "href=") && !strstr(names, " on") && !strstr(names, " style="));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct json_tokener *tok;
	struct json_object *ctx;
	char err[512], *svg = NULL;
	size_t len = 0;

	if (!null)
		null = fopen("/dev/null", "w");
	if (size > (1u << 20) || memchr(data, '\0', size))
		return 0;
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	ctx = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	json_tokener_free(tok);
	if (!ctx)
		return 0;
	if (json_object_is_type(ctx, json_type_object)) {
		context_show(null, ctx, 1);
		context_show(null, ctx, 0);
		FILE *f = open_memstream(&svg, &len);
		REQUIRE(f);
		int r = plot_svg(f, ctx, err, sizeof(err));
		REQUIRE(fclose(f) == 0);
		REQUIRE(r == 0 || r == -EINVAL);
		if (r == 0)
			check_svg(svg, len);
		else
			REQUIRE(err[0] != '\0');
		free(svg);
	}
	json_object_put(ctx);
	return 0;
}
