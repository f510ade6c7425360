// TraceEventParse FILE [ROUNDS]: parses a nettrace file ROUNDS times with
// TraceEvent's EventPipeEventSource, reading in each round the fields
// dumpwatch's decoders take (allocation ticks: amount, kind, type name;
// GCHeapStats: the five generation sizes; GC start and end; exceptions:
// type and message; EventCounters: the payload), and prints the best and
// median round in a line tests/bench/parser_vs_traceevent.sh reads.
using System.Diagnostics;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Parsers.Clr;

var path = args[0];
int rounds = args.Length > 1 ? int.Parse(args[1]) : 10;
long bytes = new FileInfo(path).Length;
var times = new List<double>();
long events = 0, decoded = 0;
double sink = 0;
for (int r = 0; r < rounds + 1; r++) {
    events = decoded = 0;
    var sw = Stopwatch.StartNew();
    using (var src = new EventPipeEventSource(path)) {
        src.AllEvents += e => events++;
        src.Clr.GCAllocationTick += d => { decoded++; sink += d.AllocationAmount64 + (int)d.AllocationKind + d.TypeName.Length; };
        src.Clr.GCHeapStats += d => { decoded++; sink += d.GenerationSize0 + d.GenerationSize1 + d.GenerationSize2 + d.GenerationSize3 + d.GenerationSize4; };
        src.Clr.GCStart += d => { decoded++; sink += d.Count + d.Depth; };
        src.Clr.GCStop += d => { decoded++; sink += d.Count; };
        src.Clr.ExceptionStart += d => { decoded++; sink += d.ExceptionType.Length + d.ExceptionMessage.Length; };
        src.Dynamic.All += e => {
            if (e.EventName != "EventCounters") return;
            decoded++;
            if (e.PayloadValue(0) is IDictionary<string, object> outer && outer.TryGetValue("Payload", out var inner) &&
                inner is IDictionary<string, object> p && p.TryGetValue("Name", out var name))
                sink += ((string)name).Length;
        };
        src.Process();
    }
    sw.Stop();
    if (r > 0) times.Add(sw.Elapsed.TotalMilliseconds); // round 0 warms the JIT
}
times.Sort();
Console.WriteLine($"traceevent bytes={bytes} events={events} decoded={decoded} best_ms={times[0]:F2} median_ms={times[times.Count / 2]:F2} sink={sink % 7}");
