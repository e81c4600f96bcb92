#!/usr/bin/env python3
"""check_trace_events.py OUT.json TRACE_NODES.txt - validates `tgdb trace export`
output against the Chrome trace-event format and against the trace:

- the file is a JSON object with a traceEvents list;
- every event has ph, ts (a number >= 0), pid and tid (integers); X events a
  dur >= 0 and a name; C events numeric args; M events a name and args;
- complete (X) slices nest properly per (pid, tid) track: sorted by start,
  each slice lies inside the enclosing open one or starts after it ended;
- every evaluated node appears exactly once as a node slice: no two slices
  name the same (graph, node, computation), and the (graph, node) pairs of
  the slices are, with their counts, those of `tgdb trace nodes FILE`
  (TRACE_NODES.txt, its rows: eval graph node ...).
Prints one line per check; exit 1 on the first failure class found."""
import json
import sys
from collections import defaultdict

fails = 0


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails += 1


doc = json.load(open(sys.argv[1]))
ev = doc.get("traceEvents") if isinstance(doc, dict) else None
check(isinstance(ev, list) and len(ev) > 0, "traceEvents is a non-empty list")
ev = ev or []
bad = [e for e in ev if not (isinstance(e, dict) and isinstance(e.get("ph"), str)
                              and isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0
                              and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int))]
check(not bad, "every event has ph, ts >= 0, pid, tid (%d bad%s)" % (len(bad), ": %r" % bad[0] if bad else ""))
known = set("XBEiICMbensftPOND")
check(all(e.get("ph") in known for e in ev), "every ph is a trace-event phase")
xs = [e for e in ev if e.get("ph") == "X"]
check(all(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0 and isinstance(e.get("name"), str) for e in xs),
      "every X event has a name and dur >= 0")
check(all(isinstance(e.get("args"), dict) and e["args"] and
          all(isinstance(v, (int, float)) for v in e["args"].values()) for e in ev if e.get("ph") == "C"),
      "every C event has numeric args")
check(all(isinstance(e.get("name"), str) and isinstance(e.get("args"), dict) for e in ev if e.get("ph") == "M"),
      "every M event has a name and args")

# nesting per track (integer nanoseconds to avoid float rounding)
tracks = defaultdict(list)
for e in xs:
    b = round(e["ts"] * 1000)
    tracks[(e["pid"], e["tid"])].append((b, b + round(e["dur"] * 1000), e["name"]))
nest_bad = []
for key, sl in tracks.items():
    sl.sort(key=lambda s: (s[0], -s[1]))
    stack = []
    for b, en, name in sl:
        while stack and stack[-1][1] <= b:
            stack.pop()
        if stack and en > stack[-1][1]:
            nest_bad.append((key, name, stack[-1][2]))
        stack.append((b, en, name))
check(not nest_bad, "X slices nest properly on every track (%d tracks%s)"
      % (len(tracks), "; first overlap: %r" % (nest_bad[0],) if nest_bad else ""))

want = defaultdict(int)
n_evals = 0
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) > 3 and all(x.isdigit() for x in f[:3]):
        want[(int(f[1]), int(f[2]))] += 1
        n_evals += 1
triples = defaultdict(int)
got = defaultdict(int)
for e in xs:
    a = e.get("args", {})
    if "node" in a and "graph" in a and "compute" in a and e.get("cat") != "copy":
        triples[(a["graph"], a["node"], a["compute"])] += 1
        got[(a["graph"], a["node"])] += 1
dups = [k for k, n in triples.items() if n != 1]
diff = [k for k in set(want) | set(got) if want.get(k, 0) != got.get(k, 0)]
check(n_evals > 0, "the trace has evaluated nodes (%d)" % n_evals)
check(not dups and not diff,
      "every evaluated node appears exactly once (%d evaluations, %d slices; %d repeated, %d (graph, node) counts differ%s)"
      % (n_evals, sum(got.values()), len(dups), len(diff), ": %r" % (diff[0],) if diff else ""))
sys.exit(1 if fails else 0)
