package reports

import (
	"fmt"
	"html/template"
	"io"
	"time"
)

var funcs = template.FuncMap{
	"f1":        func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":        func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"add":       func(a, b float64) float64 { return a + b },
	"add2":      func(a, b int) int { return a + b },
	"sub":       func(a, b float64) float64 { return a - b },
	"plotLeft":  func() float64 { return plotLeft },
	"plotRight": func() float64 { return plotLeft + plotWidth },
	"svgWidth":  func() float64 { return svgWidth },
	"pct":       func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"secsNS":    secs,
	"nsToMS":    func(v int64) int64 { return v / 1e6 },
	"ms":        func(v int64) string { return (time.Duration(v) * time.Millisecond).String() },
}

// css is shared by the report and the index.
const css = `
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1240px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.4em 0;font-size:.9em;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.val{max-width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
table.mono td{white-space:nowrap}
table.mono td.lock{max-width:12em;overflow:hidden;text-overflow:ellipsis}
table.mono td.err{max-width:16em;overflow:hidden;text-overflow:ellipsis}
table.mono td.role{white-space:normal;min-width:10em}
td.mono,h1{overflow-wrap:anywhere}
.cause{overflow-wrap:anywhere}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em}
.verdict{display:inline-block;padding:6px 18px;border-radius:6px;color:#fff;font-weight:700;font-size:1.3em;letter-spacing:.04em}
.v-valid{background:#2e7d32}.v-invalid{background:#c62828}.v-unknown{background:#ef6c00}.v-{background:#777}
.c-valid{color:#2e7d32;font-weight:600}.c-invalid{color:#c62828;font-weight:600}.c-unknown{color:#ef6c00;font-weight:600}
.anomaly{background:#fff;border:1px solid #e0b4b4;border-left:5px solid #c62828;padding:8px 12px;margin:10px 0}
.finding{border-color:#e6d3a3;border-left-color:#ef6c00}
.t-ok{color:#2e7d32}.t-fail{color:#777}.t-info{color:#ef6c00}.t-invoke{color:#1565c0}
.muted{color:#777;font-size:.9em}
svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}
svg text{font-size:10px;fill:#444;font-family:system-ui,sans-serif}
.fault{fill-opacity:.18}
.leftover{color:#b26a00;font-weight:600}
.flabel{font-size:9px;fill:#555}
.mark{stroke:#f28e2b;stroke-width:1}
.anom{fill:#c62828;fill-opacity:.25;stroke:#c62828;stroke-width:1}
.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
`

const reportHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — {{.Result.Verdict}}</title>
<style>` + css + `</style></head>
<body><main>
<h1 title="{{.FullTitle}}">{{.Title}}</h1>
<p><span class="verdict v-{{.Result.Verdict}}" id="verdict">{{.Result.Verdict}}</span>
{{with .Result.Promise}}<span class="muted">&nbsp; promise: <b>{{.}}</b></span>{{else}}<span class="muted">&nbsp; no meta line: every property judged</span>{{end}}
<span class="muted">&nbsp; {{.Events}} events over {{.End}}</span></p>
{{with .Result.SetupFailed}}<p class="c-invalid" id="setup-failed">The run's set-up failed, so no test ran and this history vouches for nothing: {{.}}</p>{{end}}
{{with .NeverDealt}}<p class="leftover" id="never-dealt">Requested and never dealt: {{.}} (the run ended before their turn, or their starts failed: a longer --time or a shorter --nemesis list deals them).</p>{{end}}
{{with .Stuck}}<p class="leftover" id="stuck">Held for good, so tested little from then on:{{range .}} lock <code>{{.Lock}}</code> from {{.From}} ({{.Share}}% of the run, {{if .Finding}}<a href="#finding-{{.Finding}}">finding {{.Finding}}</a>{{else}}a finding{{end}});{{end}} its holder's process ended, its last operation's outcome unknown, holding a grant with no lease in the history (the finding counts the acquires that followed). <code>--retire-stuck</code> moves the clients to a fresh lock name when that happens.</p>{{end}}
{{with .StuckLive}}<p class="leftover" id="stuck-live">Left held to the end by a holder that can no longer release it:{{range .}} lock <code>{{.Lock}}</code> from {{secsNS .Start}} ({{.Cause}}, process {{.Process}});{{end}} see <a href="#liveness">Liveness</a>. Not a mutual-exclusion violation, but every later acquire of it waited in vain.</p>{{end}}
{{with .Shrunk}}<p id="shrunk">Smallest reproduction found: {{if .Schedule}}<a href="{{.Schedule}}">{{.Steps}} fault{{if ne .Steps 1}}s{{end}}</a>{{else}}no fault{{end}}, {{.Clients}} clients, {{.Locks}} lock{{if ne .Locks 1}}s{{end}}, {{.Time}}: {{.Anomaly}} in {{.Caught}} of {{.Tries}} tries. <code>{{.Command}}</code></p>{{else}}{{if and (eq (print .Result.Verdict) "invalid") .Replayable}}<p id="shrink" class="muted">Replay this run with its faults as they happened: <code>lockcheck replay {{.Dir}}</code>; find the smallest run that fails the same way: <code>lockcheck shrink {{.Dir}}</code> (this report then links to it).</p>{{end}}{{end}}
{{if .Result.Pending}}<p class="muted">{{.Result.Pending}} invocations have no completion (the run was cut short); they are checked as info.</p>{{end}}
{{if .Result.Truncated}}<p class="muted">An unterminated last line was dropped.</p>{{end}}

<h2>Checks</h2>
<table><tr><th>check</th><th>verdict</th><th>judged</th><th>anomalies</th><th>detail</th><th>time</th></tr>
{{range .Result.Checks}}<tr><td>{{.Name}}</td><td class="c-{{.Verdict}}">{{.Verdict}}{{if .Skipped}} (skipped){{end}}</td>
<td>{{if .Judged}}yes{{else}}no{{end}}</td><td class="num">{{.Anomalies}}</td><td>{{.Detail}}</td><td class="num">{{f2 .Seconds}}s</td></tr>
{{end}}</table>
<p class="muted">Verdicts merge over judged checks: invalid beats unknown beats valid. A check outside the recipe's promise is not judged: its anomalies are listed as findings.</p>

<h2>Anomalies ({{len .Result.Anomalies}}{{if .More}}, {{.More}} more not shown{{end}})</h2>
{{if not .Anomalies}}<p>None.</p>{{end}}
{{if .Kinds}}<table><tr><th>kind</th><th>count</th></tr>{{range .Kinds}}<tr><td>{{.Kind}}</td><td class="num">{{add2 .Shown .More}}</td></tr>{{end}}</table>
<p class="muted">Likeliest causes first; at most ten of a kind are shown here, all of them are in results.json.</p>{{end}}
{{range .Anomalies}}{{template "anomaly" .}}{{end}}

{{if .Findings}}<h2>Findings ({{len .Result.Findings}})</h2>
<p class="muted">Observed, but outside what the recipe promises, or harmless: they do not fail the run.</p>
<details><summary>show findings</summary>
{{range .Findings}}{{template "finding" .}}{{end}}
</details>{{end}}

{{with .Result.Liveness}}<h2 id="liveness">Liveness</h2>
<p class="muted">Not part of the verdict. Availability is the share of the clients' run ({{ms (nsToMS .Start)}} – {{ms (nsToMS .End)}}) in which an acquire could be granted within the acquire time-out ({{ms .AcquireTimeoutMS}}): a moment counts when a live process held the lock (contention) or a grant came within the time-out after it. A lock is stuck when no grant came for longer than {{ms .StuckBoundMS}} after its last holder died or lost its answer.</p>
<table id="availability"><tr><th>lock</th><th>available</th><th>unavailable</th><th>grants</th><th>stuck periods</th></tr>
{{range .Locks}}<tr><td class="mono">{{.Lock}}</td><td class="num">{{pct .Availability}}</td><td class="num">{{ms .UnavailableMS}}</td><td class="num">{{.Grants}}</td><td>{{range .Stuck}}<p class="cause stuck-period">{{.Message}}</p>{{else}}none{{end}}</td></tr>
{{end}}</table>{{end}}

<h2>Timeline of holds</h2>
<p class="muted legend">{{with .Timeline.Note}}{{.}} {{end}}{{range .FaultLegend}}<span><i class="sw" style="background:{{.Color}};opacity:.45"></i>{{.Kind}} ({{.Windows}})</span>{{else}}<span class="muted">no fault windows</span> {{end}}{{with .HealedBefore}}<span class="leftover">healed before the run (an earlier run left it):{{range .}} {{.}};{{end}}</span> {{end}}{{with .Foreign}}<span class="leftover">not lockcheck's, present through the run:{{range .}} {{.}};{{end}}</span> {{end}}<span><i class="sw" style="background:#c62828;opacity:.5"></i>anomaly (click for details)</span></p>
{{with .Timeline}}<svg id="timeline" viewBox="0 0 {{svgWidth}} {{f1 .Height}}" width="{{svgWidth}}" height="{{f1 .Height}}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="timeline of holds">
{{range $f := .Faults}}<rect class="fault" x="{{f1 $f.X}}" y="{{f1 $f.Y}}" width="{{f1 $f.W}}" height="{{f1 $f.H}}" fill="{{$f.Fill}}"><title>{{$f.Title}}</title></rect>{{with $f.Label}}<text class="flabel" x="{{f1 (add $f.X 2)}}" y="{{f1 (add $f.Y 9)}}">{{.}}</text>{{end}}
{{end}}{{range .Marks}}<line class="mark" x1="{{f1 .X}}" x2="{{f1 .X}}" y1="{{f1 .Y}}" y2="{{f1 (add .Y .H)}}"><title>{{.Title}}</title></line>
{{end}}{{range .Rows}}<text x="{{f1 (sub plotLeft 6)}}" y="{{f1 (add .Y 10)}}" text-anchor="end">{{.Label}}<title>{{.Full}}</title></text>
{{range .Bars}}<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f2 .W}}" height="{{f1 .H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>{{end}}
{{end}}{{range .Anomalies}}<a href="{{.Href}}"><rect class="anom" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}"><title>{{.Title}}</title></rect><text x="{{f1 .X}}" y="14" fill="#c62828">▼{{.Label}}</text></a>
{{end}}{{range .Ticks}}<line x1="{{f1 .X}}" x2="{{f1 .X}}" y1="{{f1 (add 20 $.Timeline.PlotH)}}" y2="{{f1 (add 24 $.Timeline.PlotH)}}" stroke="#999"/><text x="{{f1 .X}}" y="{{f1 (add 34 $.Timeline.PlotH)}}" text-anchor="middle">{{.Label}}</text>
{{end}}</svg>{{end}}

<h2>Latency and throughput</h2>
<p class="muted legend"><span><i class="sw" style="background:#4e79a7"></i>p50</span><span><i class="sw" style="background:#e15759"></i>p99</span><span><i class="sw" style="background:#bbb"></i>max</span> of ok operations by completion time;
throughput: <span><i class="sw" style="background:#59a14f"></i>ok</span><span><i class="sw" style="background:#bab0ac"></i>fail</span><span><i class="sw" style="background:#f28e2b"></i>info</span>;
faults: {{range .FaultLegend}}<span><i class="sw" style="background:{{.Color}};opacity:.45"></i>{{.Kind}}</span>{{else}}none{{end}}{{with .Added}}<span> dashed, the latency a fault added:{{range .}} {{.}};{{end}}</span>{{end}}{{with .HealedBefore}}<span class="leftover"> healed before the run (an earlier run left it):{{range .}} {{.}};{{end}}</span>{{end}}{{with .Foreign}}<span class="leftover"> not lockcheck's, present through the run:{{range .}} {{.}};{{end}}</span>{{end}}</p>
{{with .Latency}}<svg id="latency" viewBox="0 0 {{svgWidth}} {{f1 .Height}}" width="{{svgWidth}}" height="{{f1 .Height}}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="latency and throughput">
{{range .Faults}}<rect class="fault" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>
{{end}}<text x="{{f1 plotLeft}}" y="12">latency (ms)</text>
{{range .YTicks}}<line x1="{{f1 plotLeft}}" x2="{{f1 plotRight}}" y1="{{f1 .X}}" y2="{{f1 .X}}" stroke="#eee"/><text x="{{f1 (sub plotLeft 6)}}" y="{{f1 (add .X 3)}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .Added}}<line class="added" x1="{{f1 .X}}" x2="{{f1 (add .X .W)}}" y1="{{f1 .Y}}" y2="{{f1 .Y}}" stroke="{{.Fill}}" stroke-width="2" stroke-dasharray="4 3"><title>{{.Title}}</title></line>
{{end}}<polyline points="{{.Max}}" fill="none" stroke="#bbb" stroke-width="1"/>
<polyline points="{{.P99}}" fill="none" stroke="#e15759" stroke-width="1.5"/>
<polyline points="{{.P50}}" fill="none" stroke="#4e79a7" stroke-width="1.5"/>
<text x="{{f1 plotLeft}}" y="{{f1 (sub .ThroughputTop 6)}}">throughput (ops/s)</text>
{{range .TTicks}}<line x1="{{f1 plotLeft}}" x2="{{f1 plotRight}}" y1="{{f1 .X}}" y2="{{f1 .X}}" stroke="#eee"/><text x="{{f1 (sub plotLeft 6)}}" y="{{f1 (add .X 3)}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .Bars}}<rect x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f2 .W}}" height="{{f2 .H}}" fill="{{.Fill}}"><title>{{.Title}}</title></rect>{{end}}
{{range .Ticks}}<text x="{{f1 .X}}" y="{{f1 (sub $.Latency.Height 8)}}" text-anchor="middle">{{.Label}}</text>
{{end}}</svg>{{end}}

<h2>Fault windows ({{len .FaultRows}}{{if .MoreFaults}}, {{.MoreFaults}} more in history.jsonl{{end}})</h2>
{{if .FaultRows}}<table><tr><th>fault</th><th>nodes</th><th>from</th><th>to</th><th>length</th><th>what the nemesis recorded</th></tr>
{{range .FaultRows}}<tr><td><i class="sw" style="background:{{.Color}};opacity:.45"></i>{{.Kind}}</td><td>{{.Nodes}}</td><td class="num">{{.From}}</td><td class="num">{{.To}}</td><td class="num">{{.Length}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}

<h2>Linearizability of the lock (porcupine)</h2>
{{if .Vis}}<table><tr><th>lock</th><th>result</th><th>operations shown</th><th>visualization</th></tr>
{{range .Vis}}<tr><td>{{.Lock}}</td><td>{{.Result}}</td><td class="num">{{.Ops}}{{if not .Whole}} (a piece){{end}}</td><td><a href="{{.File}}">open</a></td></tr>
{{end}}</table>
<p class="muted">Each lock's history is cut where no operation is in flight and the lock's state is known, and the pieces are checked on their own; a visualization shows the piece that failed, or a lock's whole history when it is small.</p>
{{else}}<p>No lock operations to visualize.</p>{{end}}

<h2>Operations</h2>
{{with .Added}}<p class="muted">latency the faults added (beside the operations' below; dashed in the latency chart):{{range .}} {{.}};{{end}}</p>
{{end}}<table><tr><th>f</th><th>ok</th><th>fail</th><th>info</th><th>pending</th><th>ok p50 ms</th><th>p90</th><th>p99</th><th>max</th><th>all p50 ms</th><th>all p99</th></tr>
{{range .ByF}}<tr><td>{{.F}}</td><td class="num">{{.C.OK}}</td><td class="num">{{.C.Fail}}</td><td class="num">{{.C.Info}}</td><td class="num">{{.C.Pending}}</td>
{{if .HasOK}}<td class="num">{{f2 .OK.P50}}</td><td class="num">{{f2 .OK.P90}}</td><td class="num">{{f2 .OK.P99}}</td><td class="num">{{f2 .OK.Max}}</td>{{else}}<td></td><td></td><td></td><td></td>{{end}}
{{if .HasAll}}<td class="num">{{f2 .All.P50}}</td><td class="num">{{f2 .All.P99}}</td>{{else}}<td></td><td></td>{{end}}</tr>
{{end}}</table>
<details><summary>by process ({{len .Result.Stats.ByProcess}})</summary>
<table><tr><th>process</th><th>ok</th><th>fail</th><th>info</th><th>pending</th></tr>
{{range .ByProcess}}<tr><td class="num">{{.Process}}</td><td class="num">{{.C.OK}}</td><td class="num">{{.C.Fail}}</td><td class="num">{{.C.Info}}</td><td class="num">{{.C.Pending}}</td></tr>
{{end}}</table>{{if .MoreProcs}}<p class="muted">{{.MoreProcs}} more processes in results.json.</p>{{end}}</details>

<h2>Configuration</h2>
{{if .Config}}<table>{{range .Config}}<tr><th>{{index . 0}}</th><td class="mono">{{index . 1}}</td></tr>{{end}}</table>
{{else}}<p>The history has no meta line.</p>{{end}}

<h2>Files</h2>
<ul>{{range .Files}}<li><a href="{{.}}">{{.}}</a></li>{{end}}
{{range .Vis}}<li><a href="{{.File}}">{{.File}}</a></li>{{end}}</ul>
<p class="muted">Generated by lockcheck report.</p>
</main></body></html>
{{define "ops"}}<table class="mono"><tr><th>index</th><th>time</th><th>process</th><th>type</th><th>f</th><th>lock</th><th>value</th><th>lease ms</th><th>node</th><th>error</th><th>hold</th></tr>
{{range .Ops}}<tr><td class="num">{{.Index}}</td><td class="num">{{.Time}}</td><td class="num">{{.Process}}</td><td class="{{.Cls}}">{{.Type}}</td><td>{{.F}}</td><td class="lock" title="{{.Lock}}">{{.Lock}}</td><td class="val" title="{{.FullValue}}">{{.Value}}</td><td class="num">{{.Lease}}</td><td>{{.Node}}</td><td class="err" title="{{.Error}}">{{.Error}}</td><td class="role">{{.Role}}</td></tr>
{{end}}</table>{{if .MoreOps}}<p class="muted">{{.MoreOps}} more operations in results.json.</p>{{end}}{{end}}
{{define "anomaly"}}<div class="anomaly" id="anomaly-{{.N}}"><b>#{{.N}} {{.A.Kind}}</b> <span class="muted">({{.A.Check}}) lock <code>{{.A.Lock}}</code>, processes {{.Processes}}, {{.Window}}</span>
<p>{{.A.Message}}</p>{{template "faults" .}}{{template "ops" .}}</div>{{end}}
{{define "faults"}}{{with .Faults}}<p class="muted legend">fault windows in its span: {{range .}}<span><i class="sw" style="background:{{.Color}};opacity:.45"></i>{{.Kind}} {{.Text}}</span>{{end}}</p>{{end}}{{with .Cause}}<p class="cause">likely cause: {{.}}</p>{{end}}{{end}}
{{define "finding"}}<div class="anomaly finding" id="finding-{{.N}}"><b>{{.A.Kind}}</b> <span class="muted">({{.A.Check}}) lock <code>{{.A.Lock}}</code>, processes {{.Processes}}, {{.Window}}</span>
<p>{{.A.Message}}</p>{{template "faults" .}}{{template "ops" .}}</div>{{end}}
`

const errorHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>unreadable history</title><style>` + css + `</style></head>
<body><main><h1>{{.Dir}}</h1><p><span class="verdict v-" id="verdict">unreadable history</span></p>
<p>The history breaks the format, so it was not checked:</p><pre>{{.Err}}</pre>
<p><a href="history.jsonl">history.jsonl</a></p></main></body></html>
`

var (
	reportTmpl = template.Must(template.New("report").Funcs(funcs).Parse(reportHTML))
	errorTmpl  = template.Must(template.New("error").Parse(errorHTML))
)

func render(w io.Writer, p *page) error { return reportTmpl.Execute(w, p) }

func renderError(w io.Writer, dir string, err error) error {
	return errorTmpl.Execute(w, struct{ Dir, Err string }{dir, err.Error()})
}
