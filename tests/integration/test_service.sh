#!/usr/bin/env bash
# A real ASP.NET Core service (tests/apps/ShopApi) under an ordinary mix of
# requests, watched by the real dumpwatch:
# - a rule on ASP.NET Core's own request-duration histogram, filtered by route
#   and status code, stays silent while 300 requests of the usual mix and 20
#   good checkouts are served, and fires once 10 checkouts are refused with 400;
# - under wrk with tests/bench/wrk/shop.lua (90 % items, 8 % reports, 2 %
#   checkouts), a rule on the large object heap's allocation rate (the
#   reports' 200 KB buffers) together with the items route's request count
#   fires;
# - the service's GET /stats counts exactly the requests made by curl, and
#   under wrk no fewer than wrk completed and no more than it sent.
# ShopApi is built for every runtime build-apps.sh builds; where a variant's
# build is missing (DW_APPS left it out) the test is skipped.
source "$(dirname "$0")/lib.sh"
SHOP="$DW_APPS_DIR/ShopApi/ShopApi"
[ -x "$SHOP" ] || skip "$SHOP not built (scripts/build-apps.sh builds it unless DW_APPS leaves it out)"
command -v wrk >/dev/null || fail "wrk is not installed (scripts/setup.sh installs it)"
hosting=Microsoft.AspNetCore.Hosting/http.server.request.duration

# start_shop: ShopApi on a free loopback port; sets APP_PID and URL.
start_shop() {
	"$SHOP" --urls http://127.0.0.1:0 >"$T/app.out" 2>&1 &
	APP_PID=$!
	PIDS+=("$APP_PID")
	wait_for "grep -q '^ready ' '$T/app.out'" 20 || fail "ShopApi did not start"
	check_runtime "$T/app.out"
	wait_for "ls /tmp/dotnet-diagnostic-$APP_PID-*-socket >/dev/null 2>&1" 10 || fail "no diagnostics socket"
	URL="http://127.0.0.1:$(sed -n 's/^ready port=\([0-9]*\) .*/\1/p' "$T/app.out")"
}

# shop_stat FIELD: that field of GET /stats.
shop_stat() { curl -sf "$URL/stats" | jq -r ".$1"; }

# drive FILE: requests each path in FILE (one a line) over one connection, in
# order; the status codes, one a line, in FILE.codes.
drive() {
	sed "s|^|url = \"$URL|; s|\$|\"\noutput = /dev/null|" "$1" >"$1.curl"
	curl -s -w '%{http_code}\n' -K "$1.curl" >"$1.codes" || fail "curl failed on $1"
}

start_shop

# 1. A percentile rule's histogram, filtered by route and status code.
start_dw --pid "$APP_PID" --when "meter $hosting[http.route=/api/checkout,http.response.status_code=4*] count >= 5" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
# 300 requests in shop.lua's proportions, every checkout a good one.
for i in $(seq 0 299); do
	case $((i % 100)) in
	6 | 18 | 31 | 43 | 56 | 68 | 81 | 93) echo /api/report ;;
	25 | 75) echo "/api/checkout?qty=$((i % 3 + 1))" ;;
	*) echo "/api/items?page=$((i % 10))" ;;
	esac
done >"$T/mix"
drive "$T/mix"
for _ in $(seq 20); do echo "/api/checkout?qty=2"; done >"$T/good"
drive "$T/good"
[ "$(sort -u "$T/mix.codes" "$T/good.codes")" = 200 ] || fail "not every request answered 200: $(sort "$T/mix.codes" "$T/good.codes" | uniq -c)"
got=$(curl -sf "$URL/stats") || fail "no /stats"
jq -e '.requests == 320 and .items == 270 and .reports == 24 and .checkouts == 26' <<<"$got" >/dev/null ||
	fail "/stats after 320 requests (270 items, 24 reports, 26 checkouts): $got"
# Two collection intervals for the good checkouts to be published.
sleep 2.5
[ "$(journal_count fire)" -eq 0 ] || fail "fired on good checkouts"
for q in 0 11 0 11 0 11 0 11 0 11; do echo "/api/checkout?qty=$q"; done >"$T/bad"
drive "$T/bad"
[ "$(sort -u "$T/bad.codes")" = 400 ] || fail "refused checkouts did not answer 400: $(sort "$T/bad.codes" | uniq -c)"
[ "$(shop_stat requests)" -eq 330 ] || fail "/stats counts $(shop_stat requests) requests, 330 made"
wait_dw 20
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(journal_count fire)" -eq 1 ] || fail "expected one fire"
count=$(grep '"event":"fire"' "$JOURNAL" | jq -r '.metrics | to_entries[0].value')
awk -v c="$count" 'BEGIN { exit !(c >= 5 && c <= 10) }' || fail "fired at a count of $count (10 refused)"
[ "$(count_dumps)" -eq 1 ] || fail "no dump"
grep_q "fired for pid $APP_PID" "$T/dw.out" || fail "no fire line"

# 2. Under load: the reports' LOH allocation and the items route's count.
: >"$JOURNAL"
start_dw --pid "$APP_PID" --when "loh-alloc-rate > 5MB/s" --when "meter $hosting[http.route=/api/items] count > 100" \
	--dump-type triage --dump-dir "$DUMPS" --journal "$JOURNAL"
wait_attached
sleep 1.5
[ "$(journal_count fire)" -eq 0 ] || fail "fired while the service was idle"
before=$(shop_stat requests)
wrk -t1 -c4 -d3s -s "$DW_SOURCE_DIR/tests/bench/wrk/shop.lua" "$URL" >"$T/wrk.out" 2>&1 || fail "wrk failed: $(cat "$T/wrk.out")"
cat "$T/wrk.out"
after=$(shop_stat requests)
done_n=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$T/wrk.out")
sent=$(sed -n 's/^shop-mix sent=\([0-9]*\) .*/\1/p' "$T/wrk.out")
[ -n "$done_n" ] && [ -n "$sent" ] || fail "wrk printed no totals: $(cat "$T/wrk.out")"
served=$((after - before))
((served >= done_n && served <= sent)) || fail "/stats counts $served requests; wrk completed $done_n and sent $sent"
# The mix as sent: 90/8/2 within a rotation of 100.
read -r items report checkout < <(sed -n 's/^shop-mix sent=[0-9]* items=\([0-9]*\) report=\([0-9]*\) checkout=\([0-9]*\)$/\1 \2 \3/p' "$T/wrk.out")
awk -v s="$sent" -v i="$items" -v r="$report" -v c="$checkout" \
	'BEGIN { exit !(i + r + c == s && i >= 0.89 * s && r >= 0.07 * s && r <= 0.09 * s && c >= 0.015 * s && c <= 0.025 * s) }' ||
	fail "mix sent: $items items, $report reports, $checkout checkouts of $sent"
wait_dw 20
[ "$DW_RC" -eq 0 ] || fail "exit status $DW_RC"
[ "$(journal_count fire)" -eq 1 ] || fail "the load did not fire"
fired=$(grep '"event":"fire"' "$JOURNAL")
jq -e '.metrics["loh-alloc-rate"] > 5000000' <<<"$fired" >/dev/null || fail "fire values: $(jq -c .metrics <<<"$fired")"
[ "$(count_dumps)" -eq 2 ] || fail "no second dump"
kill "$APP_PID"
echo "PASS: $hosting on 4xx checkouts fired at count $count and not on 320 good requests; under wrk ($done_n requests," \
	"$served served) the LOH rate and items count fired: $(jq -c .metrics <<<"$fired"); /stats counted every request"
