// ShopApi: an ordinary ASP.NET Core minimal API, for measuring what watching
// costs a real service (tests/bench) and for the integration test that watches
// one (tests/integration/test_service.sh). Its mix of work is the usual one:
//   GET /api/items     (~90 % of traffic) 50 product records built per request
//                      and serialized with System.Text.Json
//   GET /api/report    (~8 %) a 200 KB byte[] buffer (on the large object
//                      heap), filled and partly hashed; a small JSON answer
//   GET /api/checkout?qty=N  (~2 %) one exception thrown and caught per call:
//                      qty outside 1..10 fails validation (400), any other
//                      order has its expired coupon refused and is placed at
//                      full price (200); counted in the meter ShopApi.Orders,
//                      counter orders.placed, tag result=placed|rejected
//   GET /stats         what this process has served, as JSON: "requests"
//                      counts every request but those to /stats, by a
//                      middleware, for a benchmark to divide CPU time by;
//                      "allocatedBytes" is GC.GetTotalAllocatedBytes
//   POST /bench/null-listener?on=true|false  starts or stops a listener in
//                      this process that enables ASP.NET Core's
//                      http.server.request.duration and does nothing with a
//                      measurement but count it: what recording a request
//                      costs the service once anything listens, apart from
//                      what the listener does (tests/bench/service_cost.sh,
//                      mode meter-floor); answers {"on", "measurements"
//                      counted so far, "tags" of the last}; not counted in
//                      "requests"
// ASP.NET Core's and Kestrel's own meters (Microsoft.AspNetCore.Hosting's
// http.server.request.duration, ...) stay on, as in any service.
//
// Listens on --urls (e.g. --urls http://127.0.0.1:0 for any free port) or
// ASPNETCORE_URLS, else on 127.0.0.1:$SHOPAPI_PORT (default 5080). Logs only
// warnings and errors. Once it listens it prints
//   ready port=PORT pid=PID runtime=VERSION
using System.Diagnostics.Metrics;
using System.Security.Cryptography;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;

var builder = WebApplication.CreateBuilder(args);
// Console logging of every request would cost more than the requests.
builder.Logging.SetMinimumLevel(LogLevel.Warning);
if (string.IsNullOrEmpty(builder.Configuration["urls"])) {
    var port = Environment.GetEnvironmentVariable("SHOPAPI_PORT") ?? "5080";
    builder.WebHost.UseUrls($"http://127.0.0.1:{port}");
}
var app = builder.Build();

var meter = new Meter("ShopApi.Orders", "1.0");
var ordersPlaced = meter.CreateCounter<long>("orders.placed", "{order}", "Checkouts, by result");

// Counted before the rest of the pipeline runs: once a client has its
// answer, its request is in the count.
app.Use((context, next) => {
    if (!context.Request.Path.StartsWithSegments("/stats") && !context.Request.Path.StartsWithSegments("/bench"))
        Interlocked.Increment(ref Stats.Requests);
    return next(context);
});

app.MapGet("/api/items", (int? page) => {
    Interlocked.Increment(ref Stats.Items);
    int first = (page ?? 0) * Catalog.PageSize;
    var items = new List<Item>(Catalog.PageSize);
    for (int i = 0; i < Catalog.PageSize; i++)
        items.Add(Catalog.Make(first + i));
    return items;
});

app.MapGet("/api/report", () => {
    long n = Interlocked.Increment(ref Stats.Reports);
    // 200 KB: above the 85,000 bytes from which an array goes to the LOH.
    var buffer = new byte[Catalog.ReportBytes];
    uint x = (uint)n;
    for (int i = 0; i < buffer.Length; i += 64) {
        x = x * 1664525 + 1013904223;
        buffer[i] = (byte)(x >> 24);
    }
    var digest = SHA256.HashData(buffer.AsSpan(0, 32 * 1024));
    return new Report(n, buffer.Length, Convert.ToHexString(digest, 0, 8), DateTime.UtcNow);
});

app.MapGet("/api/checkout", (int? qty) => {
    long n = Interlocked.Increment(ref Stats.Checkouts);
    int quantity = qty ?? 1;
    try {
        Checkout.Validate(quantity);
    } catch (OrderValidationException e) {
        ordersPlaced.Add(1, new KeyValuePair<string, object?>("result", "rejected"));
        return Results.BadRequest(new CheckoutError(e.Message));
    }
    decimal total = quantity * 19.90m;
    try {
        total = Checkout.ApplyCoupon("SPRING", total);
    } catch (CouponExpiredException) {
        // An old link with an expired coupon: the order is placed at full price.
    }
    ordersPlaced.Add(1, new KeyValuePair<string, object?>("result", "placed"));
    return Results.Ok(new Order(n, quantity, total));
});

app.MapGet("/stats", () => new StatsView(Interlocked.Read(ref Stats.Requests), Interlocked.Read(ref Stats.Items),
    Interlocked.Read(ref Stats.Reports), Interlocked.Read(ref Stats.Checkouts), GC.GetTotalAllocatedBytes(false),
    Environment.ProcessId));

app.MapPost("/bench/null-listener", (bool on) => {
    lock (NullListener.Gate) {
        NullListener.Current?.Dispose();
        NullListener.Current = null;
        if (on) {
            var l = new MeterListener();
            l.InstrumentPublished = (instrument, listener) => {
                if (instrument.Meter.Name == "Microsoft.AspNetCore.Hosting" && instrument.Name == "http.server.request.duration")
                    listener.EnableMeasurementEvents(instrument);
            };
            l.SetMeasurementEventCallback<double>(static (_, _, tags, _) => {
                Interlocked.Increment(ref NullListener.Measurements);
                NullListener.Tags = tags.Length;
            });
            l.Start();
            NullListener.Current = l;
        }
    }
    return Results.Ok(new { on, measurements = Interlocked.Read(ref NullListener.Measurements), tags = NullListener.Tags });
});

app.Lifetime.ApplicationStarted.Register(() => {
    var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses;
    var port = addresses is { Count: > 0 } ? new Uri(addresses.First()).Port : 0;
    Console.WriteLine($"ready port={port} pid={Environment.ProcessId} runtime={Environment.Version}");
});
app.Run();

static class Stats {
    public static long Requests, Items, Reports, Checkouts;
}

static class NullListener {
    public static readonly object Gate = new();
    public static MeterListener? Current;
    public static long Measurements;
    public static int Tags; // of the last measurement
}

static class Catalog {
    public const int PageSize = 50;
    public const int ReportBytes = 200 * 1024;
    static readonly string[] Adjectives = { "Blue", "Sturdy", "Light", "Classic", "Compact", "Quiet", "Spare" };
    static readonly string[] Nouns = { "Kettle", "Lamp", "Chair", "Backpack", "Drill", "Umbrella", "Mug", "Cable" };
    static readonly string[] Tags = { "new", "sale", "garden", "kitchen", "office", "outdoor", "gift", "eco" };

    public static Item Make(int id) {
        int a = id % Adjectives.Length, b = id / Adjectives.Length % Nouns.Length;
        return new Item(id, $"{Adjectives[a]} {Nouns[b]} #{id}", 4.99m + id % 97,
            new[] { Tags[id % Tags.Length], Tags[(id + 1 + id / 8 % (Tags.Length - 1)) % Tags.Length] }, id % 11 != 0);
    }
}

static class Checkout {
    public static void Validate(int quantity) {
        if (quantity < 1 || quantity > 10)
            throw new OrderValidationException($"quantity {quantity} is not between 1 and 10");
    }

    public static decimal ApplyCoupon(string code, decimal total) =>
        throw new CouponExpiredException($"coupon {code} has expired");
}

record Item(int Id, string Name, decimal Price, string[] Tags, bool InStock);
record Report(long Id, int Bytes, string Digest, DateTime GeneratedAt);
record Order(long Id, int Quantity, decimal Total);
record CheckoutError(string Error);
record StatsView(long Requests, long Items, long Reports, long Checkouts, long AllocatedBytes, int Pid);

class OrderValidationException(string message) : Exception(message);
class CouponExpiredException(string message) : Exception(message);
