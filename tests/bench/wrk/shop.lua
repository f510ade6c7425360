-- shop.lua: an ordinary mix of requests to tests/apps/ShopApi for wrk.
--
--   wrk -t2 -c16 -d10s -s tests/bench/wrk/shop.lua http://127.0.0.1:PORT
--
-- Every 100 requests a thread sends 90 GET /api/items (pages 0..9 in turn),
-- 8 GET /api/report and 2 GET /api/checkout, spread evenly over the 100 and in
-- the same order every run (no randomness: two runs send the same requests).
-- Each thread starts at another place in the rotation, so that the threads do
-- not ask for reports at the same moment. Every fourth checkout asks for a
-- quantity of 0, which ShopApi refuses with 400: wrk counts those among its
-- "Non-2xx or 3xx responses" (1 in 200 requests).
--
-- At the end it prints how many requests of each kind were sent (some of the
-- last may still have been in flight when wrk stopped) and one line for
-- scripts:  shop-mix sent=N items=N report=N checkout=N
-- ShopApi's GET /stats counts the requests it served: read it before and after
-- a run to divide its CPU time by them.

local threads = {}
local thread_count = 0

function setup(thread)
	thread:set("offset", thread_count * 37)
	thread_count = thread_count + 1
	table.insert(threads, thread)
end

-- The 100 slots of the rotation: reports at 6, 18, 31, ... (every 12.5),
-- checkouts at 25 and 75, items everywhere else.
local kinds = {}
for i = 0, 99 do
	kinds[i] = "items"
end
for k = 0, 7 do
	kinds[math.floor(6 + 12.5 * k)] = "report"
end
kinds[25] = "checkout"
kinds[75] = "checkout"

local requests = {}
local alternate = {}
local slot = 0

function init(args)
	local page = 0
	local qty = 0
	for i = 0, 99 do
		local path
		if kinds[i] == "items" then
			path = "/api/items?page=" .. page
			page = (page + 1) % 10
		elseif kinds[i] == "report" then
			path = "/api/report"
		else
			path = "/api/checkout?qty=" .. qty
			qty = qty + 1
		end
		requests[i] = wrk.format("GET", path)
	end
	-- The two checkouts of the rotation ask for 0 and 1; every other
	-- round they ask for 2 and 3 instead: qty 0 is one in four. (Made here,
	-- not when the script loads: wrk.format takes the Host header from
	-- wrk.host, set only by now.)
	alternate[25] = wrk.format("GET", "/api/checkout?qty=2")
	alternate[75] = wrk.format("GET", "/api/checkout?qty=3")
	slot = tonumber(offset) % 100
	items, report, checkout, round = 0, 0, 0, 0
end

function request()
	local i = slot
	slot = (slot + 1) % 100
	if slot == 0 then
		round = round + 1
	end
	local kind = kinds[i]
	if kind == "items" then
		items = items + 1
	elseif kind == "report" then
		report = report + 1
	else
		checkout = checkout + 1
		if round % 2 == 1 then
			return alternate[i]
		end
	end
	return requests[i]
end

function done(summary, latency, requests_)
	local n = { items = 0, report = 0, checkout = 0 }
	for _, thread in ipairs(threads) do
		for kind in pairs(n) do
			n[kind] = n[kind] + (thread:get(kind) or 0)
		end
	end
	local sent = n.items + n.report + n.checkout
	io.write(string.format("shop-mix sent=%d items=%d report=%d checkout=%d\n", sent, n.items, n.report, n.checkout))
end
